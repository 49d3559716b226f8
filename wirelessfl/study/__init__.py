"""Studies: parameter sweeps into study folders, and the paper's figures as named sweeps.

- ``grid``: grid values parsed from ``--grid`` and written back as ``--set`` text;
- ``plan``: every grid point × seed, with its run folder name;
- ``folder``: writing ``study.json``, ``index.csv`` and inspecting run folders;
- ``executor``: running the runs here or in worker processes;
- ``sweep``: ``run_sweep``, tying them together;
- ``command``: ``wirelessfl sweep``; ``reproduce``: ``wirelessfl reproduce``;
- ``reproductions``: the named reproductions, one family per ``repro_*`` module (``repro_spec``:
  what a reproduction is), drawn by the ``*_figures`` modules;
- ``calibrate``: the ``wirelessfl run --calibrate`` pilot.

Reading studies back (``load_study``, ``StudyResult``) and the summary numbers live in
``wirelessfl.results`` and are re-exported here.
"""

from wirelessfl.results.study import StudyResult, load_study
from wirelessfl.results.summary import SUMMARY_COLUMNS, final_accuracy, summarize, summarize_run
from wirelessfl.study.grid import parse_grid
from wirelessfl.study.plan import run_name
from wirelessfl.study.sweep import run_sweep

__all__ = [
    "SUMMARY_COLUMNS",
    "StudyResult",
    "final_accuracy",
    "load_study",
    "parse_grid",
    "run_name",
    "run_sweep",
    "summarize",
    "summarize_run",
]
