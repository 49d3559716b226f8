"""Paper reproductions: every figure's scenario and grid validate; the dpp one runs end to end."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from channels.nr_bler import sionna_version
from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.errors import UserError
from wirelessfl.study.grid import format_value
from wirelessfl.study.reproduce import REPRODUCTIONS, reproduce


@pytest.mark.parametrize("figure", list(REPRODUCTIONS))
@pytest.mark.parametrize("full", [False, True])
def test_every_grid_point_is_a_valid_scenario(figure, full):
    spec = REPRODUCTIONS[figure]
    sweeps = (spec.full_sweeps or spec.sweeps) if full else spec.sweeps
    uplinks = {u for grid in sweeps.values() for u in grid.get("channel.uplink", [])}
    if "nr" in uplinks and sionna_version() is None:
        pytest.skip("the nr extra is not installed")
    for grid in sweeps.values():
        keys = list(grid)
        for values in itertools.product(*grid.values()):
            sets = [f"{k}={format_value(v)}" for k, v in zip(keys, values, strict=True)]
            load_scenario(SCENARIO_DIR / spec.scenario, [*(spec.full if full else []), *sets])


def test_dpp_reproduction_runs_and_draws(tmp_path):
    result = reproduce("dpp", out_dir=tmp_path, overrides=["rounds=300"])
    table = result["summary"]
    assert len(table) == 14 and table.finished.all()  # 7 V, with and without an outage cut-off
    assert all(p.exists() and p.stat().st_size > 0 for p in result["figures"])
    again = reproduce("dpp", out_dir=tmp_path, overrides=["rounds=300"])  # all skipped
    assert (again["summary"].status == "skipped").all()
    pd.testing.assert_series_equal(table.final_accuracy, again["summary"].final_accuracy)


def test_unknown_figure_is_one_line():
    with pytest.raises(UserError, match="unknown figure 'fig9'"):
        reproduce("fig9", out_dir="unused")


def test_summary_holds_the_time_to_target_of_every_run(tmp_path):
    """The columns agree with a first-crossing search written out here, run by run."""
    from wirelessfl.results import load

    result = reproduce("dpp", out_dir=tmp_path, overrides=["rounds=200"], target_accuracy=0.15)
    table = result["summary"]
    assert (table.target_accuracy == 0.15).all()
    for _, row in table.iterrows():
        rounds = load(result["folder"] / row["sweep"] / row["run"]).rounds
        want_t, want_bits, bits = float("nan"), float("nan"), 0.0
        for _, r in rounds.iterrows():
            bits += r["bits_up"]
            if r["accuracy"] >= 0.15:
                want_t, want_bits = r["t_end_s"], bits
                break
        assert row["time_to_target_s"] == pytest.approx(want_t, nan_ok=True)
        assert row["bits_to_target"] == pytest.approx(want_bits, nan_ok=True)
    assert table.time_to_target_s.notna().any()


def test_sparsifier_panels_are_drawn_against_round_and_time(tmp_path):
    from scenario_helpers import small_scenario

    from wirelessfl.sim import run_scenario

    runs = []
    for sparsifier, rank, ratio in [("soft", 4, 0.5), ("topk", 4, 0.5), ("soft", 4, 0.1)]:
        sc = small_scenario(
            rounds=6,
            **{
                "controller.name": "fixed",
                "controller.rank": rank,
                "controller.sparsification": ratio,
                "compression.sparsifier": sparsifier,
            },
        )
        runs.append(run_scenario(sc, tmp_path / f"{sparsifier}{ratio}"))
    paths = REPRODUCTIONS["fig3ab_frozen"].draw(tmp_path, runs)
    names = sorted(p.name for p in paths)
    assert names == [
        "fig3a_frozen_rank4_O0.1.png",
        "fig3a_frozen_rank4_O0.1_time.png",
        "fig3a_frozen_rank4_O0.5.png",
        "fig3a_frozen_rank4_O0.5_time.png",
    ]
    assert all(p.stat().st_size > 0 for p in paths)


def test_fslora_hetero_figures_and_compute_table(tmp_path):
    """Accuracy both ways and the compute bars; device FLOPs are each arrived client's local
    steps at its own rank (FedStack adds its merge), from the runtime's FLOP model."""
    pytest.importorskip("torch")
    from scenario_helpers import digits_scenario

    from wirelessfl.sim.runner import Run
    from wirelessfl.study.figures import compute_table

    runs, flops_of = [], {}
    for name in ("fslora", "hetlora"):
        sc = digits_scenario(
            rounds=2,
            eval_every=1,
            **{
                "algorithm.name": name,
                "controller.rank": 8,
                "strategy": {"ratio_choices": [0.25, 0.5, 1.0]},
            },
        )
        run = Run(sc, tmp_path / name)
        result = run.execute()
        runtime = run.learner.runtime
        arrived = result.clients[result.clients.status == "arrived"]
        flops_of[name] = sum(
            runtime.flops_per_step_at(int(rank)) * runtime.steps_for(int(client))
            for rank, client in zip(arrived["rank"], arrived.client, strict=True)
        )
        runs.append(result)
    table = compute_table(runs)
    assert list(table.algorithm) == ["fslora", "hetlora"]
    # the legend names the algorithm, not the settings only one of them has
    from wirelessfl.results.groups import group_runs

    assert [g.label for g in group_runs(runs)] == ["name=fslora", "name=hetlora"]
    for name, want in flops_of.items():
        got = float(table.loc[table.algorithm == name, "device_flops"].iloc[0])
        assert got == pytest.approx(want, rel=1e-9)
    assert (table.wall_s > 0).all() and (table.server_flops == 0).all()
    paths = REPRODUCTIONS["fslora-hetero"].draw(tmp_path, runs)
    assert sorted(p.name for p in paths) == [
        "fslora_compute.png",
        "fslora_hetero.png",
        "fslora_hetero_time.png",
    ]
