"""What a named reproduction is: :class:`Reproduction` (scenario, sweeps, claim, target,
drawing) and the default full-scale overrides ``FULL_TRAINING``.

Every accuracy figure is drawn twice, against the round index (``<stem>.png``, as the paper
draws it) and against cumulative virtual time (``<stem>_time.png``, the latency–accuracy view:
a larger rank or a denser payload makes each round longer). ``target_accuracy`` is the stated
accuracy whose time-to-target (virtual seconds and uplink bits) goes into ``summary.csv``.
``reference`` names the method every other run is compared with, seed by seed
(:mod:`wirelessfl.study.paired`: ``paired.csv``, docs/statistics.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirelessfl.study.paired import Reference

__all__ = ["FULL_TRAINING", "Reproduction"]

FULL_TRAINING = ["n_clients=100", "n_scheduled=10", "rounds=200", "eval_every=10"]


@dataclass(frozen=True)
class Reproduction:
    """A figure: its scenario, its sweeps (name -> grid) and how to draw it.

    ``target_accuracy`` is None where accuracy is not a claim (network-only runs, whose accuracy
    is the surrogate's). ``reference`` is the method the claim compares the others with
    (paired differences per seed, ``paired.csv``); None where there is no such claim.
    """

    scenario: str  # path under SCENARIO_DIR (wirelessfl/scenarios/)
    sweeps: dict[str, dict[str, list]]
    claim: str
    target_accuracy: float | None = None
    seeds: int = 1  # seeds per grid point when ``--seeds`` is not given
    full: list[str] = field(default_factory=lambda: list(FULL_TRAINING))
    full_sweeps: dict[str, dict[str, list]] | None = None
    draw: Callable[[Path, list], list[Path]] | None = None
    reference: Reference | None = None
    #: further ``summary.csv`` columns of one run: (its loaded results, the target accuracy)
    #: -> column -> value
    run_columns: Callable[[Any, float | None], dict[str, float]] | None = None
    #: further tables of the whole reproduction: the summary table -> name -> table, each
    #: written to ``<name>.csv`` next to ``summary.csv``
    tables: Callable[[Any], dict[str, Any]] | None = None
    #: further tables from the runs themselves (their loaded results, as ``draw`` gets them)
    #: -> name -> table, written to ``<name>.csv`` as ``tables``' are (per-client pairings)
    run_tables: Callable[[list], dict[str, Any]] | None = None
