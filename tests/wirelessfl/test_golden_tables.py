"""Today's code writes the same tables as the committed golden ones (see tests/golden/README.md).

Every column of the golden ``rounds.csv``, ``clients.csv`` and ``events.csv`` is compared, all
but the wall-clock one: integers and strings exactly, floats to 1e-6 relative (``cov_norm``
and ``orth_residual`` to 1e-5: norms of differences of float32 factors, whose cancellation
turns the last-bit changes of another torch/peft build's kernel order into a few 1e-6
relative). Columns the golden tables lack (added since) are allowed.

``events.csv`` is sorted by virtual time; with equal-delay shares every client's upload ends at
the same instant up to the last bit of a float, so events whose times agree to 1e-6 may swap
places. Events are therefore compared keyed by (round, client, kind), each at most once per
round, times to 1e-6 relative.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.sim import run_scenario

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SCENARIOS = SCENARIO_DIR
WALL_CLOCK = {"wall_s"}

CASES = {
    "default": ("default", ["rounds=4"]),
    "paper": ("paper", ["rounds=300", "output.clients=true"]),
    "fig3ab_topk": (
        str(SCENARIOS / "paper" / "fig3ab_sparsifiers.yaml"),
        [
            "rounds=2",
            "compression.sparsifier=topk",
            "output.clients=true",
            "output.events=true",
        ],
    ),
}
TRAINING = {"default", "fig3ab_topk"}
#: torch threads the golden tables were written with: a float32 sum's order depends on them
GOLDEN_THREADS = 2


#: relative tolerance per float column (default 1e-6); see the module docstring
REL_TOL = {"cov_norm": 1e-5, "orth_residual": 1e-5}


def _equal(a, b, rel_tol: float = 1e-6) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-12)
    return a == b


def compare_tables(golden: pd.DataFrame, fresh: pd.DataFrame, where: str) -> None:
    """Assert every golden column but wall-clock ones is in ``fresh`` with equal values."""
    assert len(fresh) == len(golden), f"{where}: {len(fresh)} rows, golden has {len(golden)}"
    for column in golden.columns:
        if column in WALL_CLOCK:
            continue
        assert column in fresh.columns, f"{where}: column {column!r} is gone"
        for i, (a, b) in enumerate(zip(golden[column], fresh[column], strict=True)):
            message = f"{where}: row {i}, column {column!r}: golden {a!r}, now {b!r}"
            assert _equal(a, b, REL_TOL.get(column, 1e-6)), message


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.train) if c in TRAINING else c for c in CASES],
)
def test_tables_match_golden(case, tmp_path):
    scenario, overrides = CASES[case]
    if case in TRAINING:
        torch = pytest.importorskip("torch")
        threads = torch.get_num_threads()
        torch.set_num_threads(GOLDEN_THREADS)
        try:
            result = run_scenario(load_scenario(scenario, overrides), tmp_path / case)
        finally:
            torch.set_num_threads(threads)
    else:
        result = run_scenario(load_scenario(scenario, overrides), tmp_path / case)
    for table in ("rounds", "clients", "events"):
        golden = pd.read_csv(GOLDEN / case / f"{table}.csv")
        fresh = getattr(result, table)
        assert fresh is not None, f"{case}: no {table}.csv written"
        if table == "events":
            golden, fresh = by_event_key(golden), by_event_key(fresh)
        compare_tables(golden, fresh, f"{case}/{table}.csv")


def by_event_key(events: pd.DataFrame) -> pd.DataFrame:
    """``events`` ordered by (round, client, kind): the order of near-simultaneous events."""
    assert not events.duplicated(["round", "client", "kind"]).any()
    return events.sort_values(["round", "client", "kind"], kind="stable").reset_index(drop=True)


def test_comparison_catches_a_changed_value():
    golden = pd.read_csv(GOLDEN / "paper" / "rounds.csv")
    changed = golden.copy()
    changed.loc[3, "sparsification"] *= 1 + 1e-5
    with pytest.raises(AssertionError, match="sparsification"):
        compare_tables(golden, changed, "paper/rounds.csv")
    compare_tables(golden, golden.assign(wall_s=0.0, extra=1), "paper/rounds.csv")
    events = pd.read_csv(GOLDEN / "paper" / "events.csv")
    swapped = events.copy()
    swapped.iloc[[5, 6]] = swapped.iloc[[6, 5]].to_numpy()  # two events trade places
    compare_tables(by_event_key(events), by_event_key(swapped), "paper/events.csv")
    swapped.loc[5, "time_s"] += 1e-3
    with pytest.raises(AssertionError, match="time_s"):
        compare_tables(by_event_key(events), by_event_key(swapped), "paper/events.csv")
