"""The server-mode reproductions (``wirelessfl reproduce async-*``): listed, one budget of client
updates for every mode, the summary's update and staleness columns against the run tables."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from wirelessfl.cli import build_parser
from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.study.async_figures import updates_to_target
from wirelessfl.study.grid import format_value
from wirelessfl.study.reproduce import REPRODUCTIONS, reproduce

ASYNC = [name for name in REPRODUCTIONS if name.startswith("async-")]
#: a network-only learner for the end-to-end check (the shipped scenarios train for real)
SURROGATE = 'learner={"kind":"surrogate","shape":{"layer_shapes":[[64,64],[64,32]]}}'


def _scenarios(name: str) -> dict:
    """The reproduction's sweeps as loaded scenarios (each sweep has one grid point)."""
    spec = REPRODUCTIONS[name]
    loaded = {}
    for sweep, grid in spec.sweeps.items():
        assert all(len(values) == 1 for values in grid.values())
        sets = [f"{k}={format_value(v[0])}" for k, v in grid.items()]
        loaded[sweep] = load_scenario(SCENARIO_DIR / spec.scenario, sets)
    return loaded


def test_the_reproductions_are_listed():
    assert ASYNC == ["async-default", "async-minilm"]
    for name in ASYNC:
        assert build_parser().parse_args(["reproduce", name]).figure == name


@pytest.mark.parametrize("name", ASYNC)
def test_every_mode_aggregates_one_budget_of_updates(name):
    """Sync, buffered and async aggregate the same client updates and evaluate at the same
    update counts; semi-sync has K slots, as sync, and a deadline; sync is the reference."""
    sc = _scenarios(name)
    assert [s.server.mode for s in sc.values()] == ["sync", "semi_sync", "buffered", "async"]
    k = sc["sync"].n_scheduled
    per_aggregation = {"sync": k, "buffered": sc["buffered"].server.buffer_size, "async": 1}
    budgets = {m: sc[m].rounds * n for m, n in per_aggregation.items()}
    spacing = {m: sc[m].eval_every * n for m, n in per_aggregation.items()}
    assert len(set(budgets.values())) == 1 and len(set(spacing.values())) == 1
    assert sc["buffered"].server.concurrency == sc["async"].server.concurrency > k
    assert sc["semi_sync"].server.concurrency == k and sc["semi_sync"].server.deadline_s > 0
    # devices a decade apart, Rayleigh fading
    speeds = sorted(set(sc["sync"].devices.per_client_flops_per_s))
    assert len(speeds) == 2 and speeds[1] == pytest.approx(10 * speeds[0])
    assert sc["sync"].channel.fading.model == "rayleigh"
    spec = REPRODUCTIONS[name]
    assert spec.seeds >= 3 and spec.target_accuracy is not None
    assert spec.reference.value == {"server.mode": "sync"}


def test_updates_to_target_by_hand():
    rounds = pd.DataFrame(
        {"n_arrived": [5, 3, 4, 5, 2], "accuracy": [math.nan, 0.4, math.nan, 0.65, 0.7]}
    )
    assert updates_to_target(rounds, 0.6) == 5 + 3 + 4 + 5  # first reached at round 3
    assert updates_to_target(rounds, 0.4) == 8
    assert math.isnan(updates_to_target(rounds, 0.8))
    assert math.isnan(updates_to_target(rounds, None))
    assert updates_to_target(rounds, 0.6, initial_accuracy=0.61) == 0.0


def test_network_only_study_pairs_every_mode_with_sync(tmp_path):
    """The whole reproduction on the network-only learner: the summary's update and staleness
    columns agree with each run's clients.csv and rounds.csv, read here; every mode is paired
    with sync at the same seed; the figures are drawn."""
    from wirelessfl.results import load

    result = reproduce(
        "async-default",
        out_dir=tmp_path,
        seeds=2,
        overrides=[SURROGATE, "devices.include_compute=false"],
        target_accuracy=0.15,
    )
    table = result["summary"]
    assert len(table) == 8 and table.finished.all()
    for _, row in table.iterrows():
        run = load(result["folder"] / row["sweep"] / row["run"])
        staleness = run.clients.get("staleness")  # None: synchronous rounds
        assert row["updates_taken"] == len(run.clients)
        want = 0.0 if staleness is None else float(staleness.mean())
        assert row["mean_staleness"] == pytest.approx(want)
        assert row["max_staleness"] == (0.0 if staleness is None else staleness.max())
        # updates to target: the clients.csv rows of the aggregations up to the first reach
        reached = run.rounds.index[run.rounds.accuracy >= 0.15]
        if len(reached):
            first = int(run.rounds.loc[reached[0], "round"])
            assert row["updates_to_target"] == (run.clients["round"] <= first).sum()
        else:
            assert math.isnan(row["updates_to_target"])
    event_driven = table.sweep.isin(["buffered", "async"])  # semi-sync: every upload is on time
    assert (table.loc[event_driven, "max_staleness"] > 0).all()
    assert (table.loc[event_driven, "updates_taken"] == 120).all()
    paired = result["paired"]
    assert set(paired.metric) == {
        "time_to_target_s",
        "updates_to_target",
        "bits_to_target",
        "final_accuracy",
    }
    accuracy = paired[paired.metric == "final_accuracy"]
    assert len(accuracy) == 3 and (accuracy.n == 2).all()
    assert accuracy.method.str.startswith("server.mode=").all()
    assert (accuracy.reference == "server.mode=sync").all()
    names = sorted(p.name for p in result["figures"])
    assert names == ["async_default.png", "async_default_staleness.png", "async_default_time.png"]
