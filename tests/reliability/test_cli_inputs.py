"""A catalogue of bad command lines and missing resources: each gets one line, never a traceback.

Every bad command line runs ``wirelessfl.cli.main`` in-process and checks the exit status, no
traceback, one line (argparse's usage errors: a usage block whose last line is ``wirelessfl
...: error: ...``), a fragment naming the option or file, and an answer within two seconds.
Then the failures a user does not cause: a full disk or a file size limit, too little memory,
a missing or unloadable training library, Ctrl-C, an OS error about a path (in-process by
making a function raise them, and for real in a subprocess under ``ulimit``).
"""

from __future__ import annotations

import errno
import importlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wirelessfl import cli
from wirelessfl.config.loader import SCENARIO_DIR

NETWORK_ONLY = str(SCENARIO_DIR / "network_only.yaml")
LONG = "a" * 300  # longer than any file system's name limit (255 bytes)
TIME_LIMIT_S = 2.0  # CPU seconds of this process (wall time varies with the machine's load)
ON_LINUX = sys.platform.startswith("linux") and os.path.isdir("/proc/self")

ARGPARSE, LINE = "argparse", "line"
FAST = ["--set", "rounds=2", "--quiet"]

# (id, argv, exit status, kind, fragment of the error line); in argv, {tmp} is a scratch
# folder, {file} a plain file, {run} a finished run folder, {long} a 300-character name
# fmt: off
CASES = [
    # -- plot ----------------------------------------------------------------------------------
    ("plot-dpi-negative", ["plot", "{run}", "--dpi", "-5", "-o", "{tmp}/a.png"], 2, ARGPARSE,
     "--dpi: expected an integer from 10 to 1200"),
    ("plot-dpi-zero", ["plot", "{run}", "--dpi", "0", "-o", "{tmp}/a.png"], 2, ARGPARSE, "--dpi"),
    ("plot-dpi-huge", ["plot", "{run}", "--dpi", "1000000", "-o", "{tmp}/a.png"], 2, ARGPARSE,
     "--dpi"),
    ("plot-dpi-text", ["plot", "{run}", "--dpi", "high"], 2, ARGPARSE, "--dpi"),
    ("plot-out-under-a-file", ["plot", "{run}", "-o", "{file}/x.png"], 2, LINE,
     "plot --out: cannot write the figure: {file} is a file, not a folder"),
    ("plot-out-is-a-folder", ["plot", "{run}", "-o", "{tmp}/folder.png"], 2, LINE,
     "folder.png is a folder"),
    ("plot-out-name-too-long", ["plot", "{run}", "-o", "{tmp}/{long}.png"], 2, LINE,
     "is longer than the"),
    ("plot-out-unknown-suffix", ["plot", "{run}", "-o", "{tmp}/x.bmp"], 2, LINE,
     "must end in .png, .pdf, .svg"),
    ("plot-out-no-suffix", ["plot", "{run}", "-o", "{tmp}/x"], 2, LINE, "must end in"),
    ("plot-out-empty", ["plot", "{run}", "-o", ""], 2, ARGPARSE,
     "--out/-o/--output: expected a path"),
    ("plot-out-long-form", ["plot", "{run}", "--out", "{tmp}/x.bmp"], 2, LINE,
     "plot --out: the file name must end in"),
    ("plot-folder-not-a-run", ["plot", "{tmp}/empty"], 2, LINE, "not a run folder"),
    ("plot-folder-missing", ["plot", "{tmp}/missing"], 2, LINE, "not a folder"),
    ("plot-folder-is-a-file", ["plot", "{file}"], 2, LINE, "not a folder"),
    ("plot-folder-name-too-long", ["plot", "{tmp}/{long}"], 2, LINE, "is longer than the"),
    ("plot-folder-empty-table", ["plot", "{tmp}/empty_table"], 2, LINE, "empty_table"),
    ("plot-folder-foreign-table", ["plot", "{tmp}/foreign_table"], 2, LINE,
     "foreign_table"),
    ("plot-study-foreign-index", ["plot", "{tmp}/foreign_index"], 2, LINE, "foreign_index"),
    ("plot-study-binary-index", ["plot", "{tmp}/binary_index"], 2, LINE, "binary_index"),
    ("plot-folder-lost-columns", ["plot", "{tmp}/lost_columns"], 2, LINE,
     "results: {tmp}/lost_columns/rounds.csv has no columns t_end_s, accuracy (every rounds.csv "
     "wirelessfl writes has them: the file was cut or edited, or another program wrote it)"),
    ("plot-kind-lacks-a-column",
     ["plot", "{tmp}/no_queue", "--kind", "queue", "-o", "{tmp}/q.png"], 2, LINE,
     "no_queue has no column queue in rounds.csv"),
    ("plot-unknown-kind", ["plot", "{run}", "--kind", "pie"], 2, ARGPARSE, "--kind"),
    ("plot-x-for-wrong-kind", ["plot", "{run}", "--kind", "offline", "--x", "time"], 2, LINE,
     "--x"),
    # -- channels ------------------------------------------------------------------------------
    ("channels-bits-negative", ["channels", NETWORK_ONLY, "--bits", "-1"], 2, ARGPARSE,
     "--bits: expected a finite number > 0"),
    ("channels-bits-zero", ["channels", NETWORK_ONLY, "--bits", "0"], 2, ARGPARSE, "--bits"),
    ("channels-bits-nan", ["channels", NETWORK_ONLY, "--bits", "nan"], 2, ARGPARSE, "--bits"),
    ("channels-bits-inf", ["channels", NETWORK_ONLY, "--bits", "inf"], 2, ARGPARSE, "--bits"),
    ("channels-bits-text", ["channels", NETWORK_ONLY, "--bits", "many"], 2, ARGPARSE, "--bits"),
    ("channels-max-rows-zero", ["channels", NETWORK_ONLY, "--max-rows", "0"], 2, ARGPARSE,
     "--max-rows: expected an integer >= 1"),
    ("channels-max-rows-negative", ["channels", NETWORK_ONLY, "--max-rows", "-3"], 2, ARGPARSE,
     "--max-rows"),
    ("channels-unknown-scenario", ["channels", "no_such_scenario"], 2, LINE, "no_such_scenario"),
    # -- sweep ---------------------------------------------------------------------------------
    ("sweep-out-at-a-file", ["sweep", NETWORK_ONLY, *FAST, "--out", "{file}"], 2, LINE,
     "--out: {file} is a file, not a folder"),
    ("sweep-out-under-a-file", ["sweep", NETWORK_ONLY, *FAST, "--out", "{file}/s"], 2, LINE,
     "--out: {file} is a file, not a folder"),
    ("sweep-out-name-too-long", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/{long}"], 2, LINE,
     "--out: the name"),
    ("sweep-out-empty", ["sweep", NETWORK_ONLY, *FAST, "--out", ""], 2, ARGPARSE, "--out"),
    ("sweep-seeds-negative", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--seeds", "-1"],
     2, LINE, "--seeds: expected a count from 1 to 1000"),
    ("sweep-seeds-zero", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--seeds", "0"], 2,
     LINE, "--seeds"),
    ("sweep-seeds-huge",
     ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--seeds", "100000000000"], 2, LINE,
     "--seeds"),
    ("sweep-seeds-repeated", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--seeds", "1,1"],
     2, LINE, "--seeds"),
    ("sweep-seeds-negative-in-list",
     ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--seeds", "2,-1"], 2, LINE, "--seeds"),
    ("sweep-seeds-text", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--seeds", "two"], 2,
     LINE, "--seeds"),
    ("sweep-jobs-zero", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--jobs", "0"], 2,
     LINE, "--jobs: expected an integer from 1 to 256"),
    ("sweep-jobs-negative", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--jobs", "-2"], 2,
     LINE, "--jobs"),
    ("sweep-jobs-huge", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--jobs", "100000"], 2,
     LINE, "--jobs"),
    ("sweep-jobs-text", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--jobs", "all"], 2,
     ARGPARSE, "--jobs"),
    ("sweep-grid-without-values",
     ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--grid", "rounds"], 2, LINE, "--grid"),
    ("sweep-grid-seed", ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--grid", "seed=1,2"],
     2, LINE, "--seeds"),
    ("sweep-grid-item-only-a-key", ["sweep", "default", "--out", "{tmp}/s", "--grid", "foo"], 2,
     LINE, "--grid: expected KEY=V1,V2,..., got 'foo'"),
    ("sweep-grid-no-value",
     ["sweep", "default", "--out", "{tmp}/s", "--grid", "controller.V="], 2, LINE,
     "--grid: expected KEY=V1,V2,..., got 'controller.V='"),
    ("sweep-grid-empty-name",
     ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--grid", "a..b=1"], 2, LINE,
     "--grid a..b: empty name between dots"),
    ("sweep-grid-bad-name",
     ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--grid", "b@d=1"], 2, LINE,
     "--grid b@d: 'b@d' is not a key name"),
    ("sweep-grid-through-a-number",
     ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--grid", "controller.V.x=1,2"], 2, LINE,
     "--grid controller.V.x: controller.V is not a table"),
    ("sweep-grid-item-of-a-number",
     ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--grid", "controller.V[0]=1"], 2, LINE,
     "--grid controller.V[0]: controller.V is not a list"),
    ("sweep-grid-plugins",
     ["sweep", NETWORK_ONLY, *FAST, "--out", "{tmp}/s", "--grid", "plugins=[a.py]"], 2, LINE,
     "--grid plugins: plug-ins are imported before --set and --grid apply"),
    ("sweep-set-beside-a-grid",
     ["sweep", NETWORK_ONLY, *FAST, "--set", "a..b=1", "--out", "{tmp}/s", "--grid", "rounds=1"],
     2, LINE, "--set a..b: empty name between dots"),
    ("sweep-scenario-empty", ["sweep", "", "--out", "{tmp}/s"], 2, ARGPARSE, "scenario"),
    ("sweep-scenario-missing", ["sweep", "no_such_scenario", "--out", "{tmp}/s"], 2, LINE,
     "no_such_scenario"),
    # -- reproduce -----------------------------------------------------------------------------
    ("reproduce-seeds-negative", ["reproduce", "dpp", "--out", "{tmp}/r", "--seeds", "-1"], 2,
     LINE, "--seeds: expected a count from 1 to 1000 or a list of distinct seeds"),
    ("reproduce-seeds-zero", ["reproduce", "dpp", "--out", "{tmp}/r", "--seeds", "0"], 2,
     LINE, "--seeds"),
    ("reproduce-seeds-huge", ["reproduce", "dpp", "--out", "{tmp}/r", "--seeds", "99999"], 2,
     LINE, "--seeds"),
    ("reproduce-seeds-repeated", ["reproduce", "dpp", "--out", "{tmp}/r", "--seeds", "2,2"], 2,
     LINE, "--seeds"),
    ("reproduce-jobs-zero", ["reproduce", "dpp", "--out", "{tmp}/r", "--jobs", "0"], 2, ARGPARSE,
     "--jobs: expected an integer from 1 to 256"),
    ("reproduce-jobs-huge", ["reproduce", "dpp", "--out", "{tmp}/r", "--jobs", "9999"], 2,
     ARGPARSE, "--jobs"),
    ("reproduce-out-at-a-file", ["reproduce", "dpp", "--out", "{file}", "--quiet"], 2, LINE,
     "--out: {file} is a file, not a folder"),
    ("reproduce-out-name-too-long", ["reproduce", "dpp", "--out", "{tmp}/{long}", "--quiet"], 2,
     LINE, "--out: the name"),
    ("reproduce-out-empty", ["reproduce", "dpp", "--out", ""], 2, ARGPARSE, "--out"),
    ("reproduce-unknown-figure", ["reproduce", "fig9"], 2, ARGPARSE, "invalid choice: 'fig9'"),
    # -- run -----------------------------------------------------------------------------------
    ("run-out-name-too-long", ["run", NETWORK_ONLY, *FAST, "--out", "{tmp}/{long}"], 2, LINE,
     "--out: the name"),
    ("run-out-at-a-file", ["run", NETWORK_ONLY, *FAST, "--out", "{file}"], 2, LINE,
     "--out: {file} is a file"),
    ("run-out-under-a-file", ["run", NETWORK_ONLY, *FAST, "--out", "{file}/r"], 2, LINE,
     "--out: {file} is a file"),
    ("run-out-empty", ["run", NETWORK_ONLY, *FAST, "--out", ""], 2, ARGPARSE, "--out"),
    ("run-name-too-long", ["run", NETWORK_ONLY, *FAST, "--set", "name={long}"], 2, LINE, "name"),
    ("run-name-leaves-runs", ["run", NETWORK_ONLY, *FAST, "--set", "name=../../x"], 2, LINE,
     "name"),
    ("run-name-absolute", ["run", NETWORK_ONLY, *FAST, "--set", "name=/x"], 2, LINE, "name"),
    ("run-resume-with-set", ["run", "--resume", "{run}", "--set", "seed=4"], 2, LINE,
     "--resume: only --set rounds=N can change a run"),
    ("run-resume-rounds-below-done", ["run", "--resume", "{run}", "--set", "rounds=1"], 2, LINE,
     "--set rounds: the run in"),
    ("run-resume-rounds-text", ["run", "--resume", "{run}", "--set", "rounds=many"], 2, LINE,
     "--set rounds: expected a whole number"),
    ("run-resume-dry-run", ["run", "--resume", "{run}", "--dry-run"], 2, LINE,
     "--resume: give only the run folder"),
    ("run-resume-with-out", ["run", "--resume", "{run}", "--out", "{tmp}/o"], 2, LINE,
     "--resume: give only the run folder"),
    ("run-resume-with-scenario", ["run", NETWORK_ONLY, "--resume", "{run}"], 2, LINE,
     "--resume: give only the run folder"),
    ("run-resume-lost-columns", ["run", "--resume", "{tmp}/lost_columns_resume", "--quiet"], 2,
     LINE, "rounds.csv: its columns differ from the ones this run writes (it has no column "
     "t_end_s, accuracy;"),
    ("run-resume-missing", ["run", "--resume", "{tmp}/missing", "--quiet"], 2, LINE, "--resume"),
    ("run-resume-a-file", ["run", "--resume", "{file}", "--quiet"], 2, LINE, "--resume"),
    ("run-resume-name-too-long", ["run", "--resume", "{tmp}/{long}", "--quiet"], 2, LINE,
     "--resume: the name"),
    ("run-resume-empty", ["run", "--resume", ""], 2, ARGPARSE, "--resume"),
    ("run-scenario-missing", ["run", "no_such_scenario", "--out", "{tmp}/o"], 2, LINE,
     "no_such_scenario"),
    ("run-unknown-option", ["run", NETWORK_ONLY, "--round", "3"], 2, ARGPARSE,
     "unrecognized arguments"),
    # -- the rest ------------------------------------------------------------------------------
    ("unknown-command", ["simulate"], 2, ARGPARSE, "invalid choice: 'simulate'"),
    ("scenario-keys-extra-argument", ["scenario-keys", "x"], 2, ARGPARSE, "unrecognized"),
]
if ON_LINUX:  # /proc refuses new files even to root
    CASES += [
        ("plot-out-unwritable", ["plot", "{run}", "-o", "/proc/x.png"], 2, LINE, "/proc"),
        ("sweep-out-unwritable", ["sweep", NETWORK_ONLY, *FAST, "--out", "/proc/s"], 2, LINE,
         "--out"),
        ("run-out-unwritable", ["run", NETWORK_ONLY, *FAST, "--out", "/proc/r"], 2, LINE,
         "--out"),
    ]
# fmt: on


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, str]:
    """The scratch folder, a plain file, a finished run folder and damaged ones."""
    tmp = tmp_path_factory.mktemp("cli_inputs")
    (tmp / "file.txt").write_text("not a folder\n")
    (tmp / "empty").mkdir()
    (tmp / "folder.png").mkdir()
    (tmp / "empty_table").mkdir()
    (tmp / "empty_table" / "rounds.csv").write_text("")
    (tmp / "foreign_table").mkdir()
    (tmp / "foreign_table" / "rounds.csv").write_text("a,b\n1,2\n")
    (tmp / "foreign_index").mkdir()
    (tmp / "foreign_index" / "index.csv").write_text("{}\n")
    (tmp / "binary_index").mkdir()
    (tmp / "binary_index" / "index.csv").write_bytes(b"\x00\x01\xff")
    run = tmp / "run"
    assert cli.main(["run", NETWORK_ONLY, "--set", "rounds=3", "--out", str(run), "--quiet"]) == 0
    _copy_without(run, tmp / "lost_columns", ["t_end_s", "accuracy"])
    _copy_without(run, tmp / "lost_columns_resume", ["t_end_s", "accuracy"])
    _copy_without(run, tmp / "no_queue", ["queue"])
    return {"tmp": str(tmp), "file": str(tmp / "file.txt"), "run": str(run), "long": LONG}


def _copy_without(run: Path, folder: Path, columns: list[str]) -> None:
    """A copy of the run folder ``run`` whose rounds.csv lost ``columns``."""
    import pandas as pd

    shutil.copytree(run, folder)
    rounds = pd.read_csv(folder / "rounds.csv")
    rounds.drop(columns=columns).to_csv(folder / "rounds.csv", index=False)


def _fill(text: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        text = text.replace("{" + key + "}", value)
    return text


def _main(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as stop:  # argparse
        return stop.code if isinstance(stop.code, int) else 1


def _error_line(err: str, kind: str) -> str:
    """The one error line of ``err`` (stderr), after checking its shape."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    if kind == ARGPARSE:
        assert lines[0].startswith("usage: wirelessfl"), err
        assert lines[-1].startswith("wirelessfl") and ": error: " in lines[-1], err
    else:
        assert len(lines) == 1, err
        assert lines[0].startswith("wirelessfl: "), err
    return lines[-1]


@pytest.mark.parametrize(
    ("argv", "status", "kind", "fragment"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_bad_command_line_gets_one_line(argv, status, kind, fragment, places, capsys, monkeypatch):
    monkeypatch.chdir(places["tmp"])  # a default runs/<name> lands in the scratch folder
    argv = [_fill(a, places) for a in argv]
    capsys.readouterr()
    start = time.process_time()
    code = _main(argv)
    seconds = time.process_time() - start
    err = capsys.readouterr().err
    assert code == status, err
    assert _fill(fragment, places) in _error_line(err, kind)
    assert seconds < TIME_LIMIT_S, f"took {seconds:.1f} s"


def test_the_catalogue_covers_every_command():
    assert {case[1][0] for case in CASES} >= {
        "plot",
        "channels",
        "sweep",
        "reproduce",
        "run",
        "scenario-keys",
    }


def test_plot_creates_a_missing_output_folder(places, capsys):
    out = Path(places["tmp"]) / "new" / "deeper" / "a.png"
    assert cli.main(["plot", places["run"], "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_exit_codes_are_in_the_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for status in ("0 ", "1 ", "2 ", "130 "):
        assert f"\n  {status}" in out
    assert cli.EXIT_STATUS.partition("\n")[2] in cli.__doc__


# -- failures the user did not cause, made in-process -----------------------------------------
def _keys_raising(monkeypatch, err: BaseException) -> None:
    """``wirelessfl scenario-keys`` raises ``err``."""

    def boom(*args, **kwargs):
        raise err

    monkeypatch.setattr("wirelessfl.config.schema.describe", boom)


# fmt: off
RAISED = [
    ("memory", MemoryError(), 1, "wirelessfl: scenario-keys stopped: out of memory while listing"),
    ("torch-oom", RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"), 1,
     "out of memory"),
    ("disk-full", OSError(errno.ENOSPC, "No space left on device", "/data/x.csv"), 1,
     "out of disk space (No space left on device) while writing /data/x.csv; "
     "what was written is kept"),
    ("file-size-limit", OSError(errno.EFBIG, "File too large", "/data/x.csv"), 1,
     "the file size limit was reached"),
    ("permission-elsewhere", PermissionError(errno.EACCES, "Permission denied", "/etc/x"), 1,
     "scenario-keys stopped: /etc/x: Permission denied"),
    ("read-only-elsewhere", OSError(errno.EROFS, "Read-only file system", "/mnt/x"), 1,
     "/mnt/x: Read-only file system"),
    ("training-extra-missing", ModuleNotFoundError("No module named 'torch'", name="torch"), 2,
     "wirelessfl: error: real training (learner.kind=lora) needs the [train] extra: "
     "pip install -e '.[train]' (see README)"),
    ("base-library-missing", ModuleNotFoundError("No module named 'yaml'", name="yaml"), 2,
     "the library yaml is missing"),
    ("training-library-fails-to-load",
     ImportError("libtorch_cpu.so: failed to map segment from shared object", name="torch"), 1,
     "torch is installed but failed to load (too little memory?): libtorch_cpu.so: failed"),
    ("interrupted", KeyboardInterrupt(), 130, "wirelessfl: interrupted"),
]
# fmt: on


@pytest.mark.parametrize(
    ("err", "status", "fragment"), [pytest.param(*r[1:], id=r[0]) for r in RAISED]
)
def test_failure_gets_one_line(err, status, fragment, monkeypatch, capsys):
    _keys_raising(monkeypatch, err)
    code = cli.main(["scenario-keys"])
    line = _error_line(capsys.readouterr().err, LINE)
    assert code == status
    assert fragment in line


def test_a_bug_keeps_its_traceback(monkeypatch):
    _keys_raising(monkeypatch, ImportError("cannot import name 'x'", name="wirelessfl.results"))
    with pytest.raises(ImportError):
        cli.main(["scenario-keys"])
    _keys_raising(monkeypatch, ZeroDivisionError())
    with pytest.raises(ZeroDivisionError):
        cli.main(["scenario-keys"])


def test_running_out_of_memory_while_explaining_still_gives_one_line(monkeypatch, capsys):
    """Under a tight ``ulimit -v`` the explanation itself can fail to allocate (a failed torch
    import leaves too little for a ``Path``): the line falls back to what is known for sure."""
    _keys_raising(monkeypatch, MemoryError())

    def no_memory_left(err, args):
        raise MemoryError

    monkeypatch.setattr(cli, "explain", no_memory_left)
    assert cli.main(["scenario-keys"]) == 1
    line = _error_line(capsys.readouterr().err, LINE)
    assert line == "wirelessfl: scenario-keys stopped: out of memory; what was written is kept"


def test_a_user_error_hiding_a_failed_import_names_the_library(monkeypatch, capsys):
    """``learners`` turns a failed torch import into a UserError: the line says what failed."""

    def boom(*args, **kwargs):
        try:
            raise ImportError("libtorch_cpu.so: failed to map segment", name="torch")
        except ImportError as err:
            raise cli.UserError(f"learner.kind: 'lora' needs the training extra: {err}") from None

    monkeypatch.setattr("wirelessfl.config.schema.describe", boom)
    assert cli.main(["scenario-keys"]) == 1
    assert "torch is installed but failed to load" in _error_line(capsys.readouterr().err, LINE)


def test_a_full_disk_during_a_run_says_how_to_continue(places, monkeypatch, capsys):
    """The file is found from the open file in the failing frame when ``filename`` is unset."""
    from wirelessfl.sim.runner import Run

    def execute(self, **kwargs):
        (self.out / "config.yaml").write_text("name: x\n")
        with open(self.out / "rounds.csv", "a") as fh:  # noqa: F841 - found in the traceback
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Run, "execute", execute)
    out = Path(places["tmp"]) / "full"
    assert cli.main(["run", NETWORK_ONLY, "--set", "rounds=2", "--out", str(out), "--quiet"]) == 1
    line = _error_line(capsys.readouterr().err, LINE)
    assert line == (
        f"wirelessfl: run stopped: out of disk space (No space left on device) while writing "
        f"{out / 'rounds.csv'}; what was written is kept; free some space, then continue with: "
        f"wirelessfl run --resume {out}"
    )


def test_a_refused_path_the_user_gave_is_a_user_error(places, monkeypatch, capsys):
    from wirelessfl.sim.runner import Run

    out = Path(places["tmp"]) / "refused"

    def execute(self, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(self.out / "rounds.csv"))

    monkeypatch.setattr(Run, "execute", execute)
    assert cli.main(["run", NETWORK_ONLY, "--set", "rounds=2", "--out", str(out), "--quiet"]) == 2
    line = _error_line(capsys.readouterr().err, LINE)
    assert line == f"wirelessfl: error: --out: {out / 'rounds.csv'}: Permission denied"


def test_a_full_disk_while_plotting(places, monkeypatch, capsys):
    def savefig(self, fname, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(fname))

    monkeypatch.setattr("matplotlib.figure.Figure.savefig", savefig)
    out = Path(places["tmp"]) / "p.png"
    assert cli.main(["plot", places["run"], "-o", str(out)]) == 1
    line = _error_line(capsys.readouterr().err, LINE)
    assert line.startswith(
        f"wirelessfl: plot stopped: out of disk space (No space left on device) while writing {out}"
    )


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="no SIGXFSZ on this platform")
def test_sigxfsz_is_ignored_while_main_runs_and_restored_after(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(
        "wirelessfl.config.schema.describe",
        lambda *a, **k: seen.append(signal.getsignal(signal.SIGXFSZ)) or [],
    )
    before = signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    try:
        assert cli.main(["scenario-keys"]) == 0
        assert seen == [signal.SIG_IGN]
        assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGXFSZ, before)


# -- the same, for real, in a subprocess under ulimit -----------------------------------------
BASH = shutil.which("bash")
needs_ulimit = pytest.mark.skipif(
    BASH is None or not hasattr(signal, "SIGXFSZ"), reason="needs bash and ulimit (POSIX)"
)
#: main() as the console script calls it, but with SIGXFSZ at its default (kill the process),
#: as some launchers leave it: main() itself must ignore it
MAIN = (
    "import signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); "
    "from wirelessfl.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _shell(
    limit: str, argv: list[str], cwd: Path, timeout: float = 60, warnings: str | None = None
) -> subprocess.CompletedProcess:
    import shlex

    command = " ".join(shlex.quote(a) for a in [sys.executable, "-c", MAIN, *argv])
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if warnings is not None:  # a PYTHONWARNINGS filter for the child
        env["PYTHONWARNINGS"] = warnings
    return subprocess.run(
        [BASH, "-c", f"{limit} && exec {command}"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


@needs_ulimit
def test_file_size_limit_during_a_run(tmp_path):
    out = tmp_path / "run"
    argv = ["run", NETWORK_ONLY, "--set", "rounds=3000", "--out", str(out), "--quiet"]
    done = _shell("ulimit -f 20", argv, tmp_path)
    assert done.returncode == 1, done.stderr
    line = _error_line(done.stderr, LINE)
    assert line.startswith("wirelessfl: run stopped: the file size limit was reached"), line
    assert str(out) in line and "what was written is kept" in line
    assert line.endswith(f"then continue with: wirelessfl run --resume {out}"), line
    # and the advice works: without the limit, the run resumes and finishes
    again = _shell("true", ["run", "--resume", str(out), "--quiet"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert "rounds         3000" in again.stdout


def _memory_limit_failing_torch(cwd: Path) -> int | None:
    """A ``ulimit -v`` (KiB) under which Python starts but ``import torch`` fails, if any."""
    for kib in (1_000_000, 800_000, 600_000, 450_000):
        probe = _shell(f"ulimit -v {kib}", ["--version"], cwd, timeout=30)
        if probe.returncode != 0:
            continue
        torch = subprocess.run(
            [BASH, "-c", f"ulimit -v {kib} && exec {sys.executable} -c 'import torch'"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if torch.returncode != 0:
            return kib
    return None


@needs_ulimit
def test_too_little_memory_for_torch(tmp_path):
    pytest.importorskip("torch")
    kib = _memory_limit_failing_torch(tmp_path)
    if kib is None:
        pytest.skip("no ulimit -v here both starts Python and stops torch from loading")
    # torch itself may warn (UserWarning) while it fails to map its libraries under the limit;
    # those lines are torch's, not the CLI's, so the check reads the CLI's line alone
    argv = ["run", "default", "--out", str(tmp_path / "r"), "--quiet"]
    done = _shell(f"ulimit -v {kib}", argv, tmp_path, warnings="ignore::UserWarning")
    assert done.returncode == 1, done.stderr
    line = _error_line(done.stderr, LINE)
    assert line.startswith("wirelessfl: run stopped: "), line
    assert "out of memory while" in line or "failed to load" in line, line
    assert "what was written is kept" in line


def test_missing_training_extra(tmp_path):
    """torch blocked as if not installed: one line pointing at the [train] extra."""
    blocker = (
        "import importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from wirelessfl.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    argv = ["run", "default", "--out", str(tmp_path / "r"), "--quiet"]
    done = subprocess.run(
        [sys.executable, "-c", blocker, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    line = _error_line(done.stderr, LINE)
    assert "needs the [train] extra: pip install -e '.[train]' (see README)" in line
    assert "torch" in line


def test_a_library_whose_import_raises_system_error_is_named_in_one_line(tmp_path, monkeypatch):
    """A C extension that fails inside its import without setting an exception (torch under a
    tight ``ulimit -v``: ``SystemError: error return without exception set``) is reported
    like any library that failed to load, not as a bug with a traceback."""
    import argparse

    from wirelessfl.cli_failures import explain

    package = tmp_path / "brokenlib_for_test"
    package.mkdir()
    (package / "__init__.py").write_text(
        "raise SystemError('error return without exception set')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemError) as raised:
        importlib.import_module("brokenlib_for_test")
    status, line = explain(raised.value, argparse.Namespace(command="run", run_folder=None))
    assert status == 1
    assert line.startswith("run stopped: brokenlib_for_test is installed but failed to load"), line
    assert "error return without exception set" in line and "what was written is kept" in line
