"""FLoRAL reproductions: the methods' table is each run's last evaluation, the figures are
drawn, and the adaptors study's bits per client grow with C as the message sizes say."""

from __future__ import annotations

import math

import pandas as pd
import pytest

pytest.importorskip("torch")

from wirelessfl.results import load  # noqa: E402
from wirelessfl.study.figures import evaluations  # noqa: E402
from wirelessfl.study.reproduce import REPRODUCTIONS, reproduce  # noqa: E402


def test_synthetic_reproduction_tables_the_last_evaluation_of_every_run(tmp_path):
    result = reproduce(
        "floral-synthetic-linear",
        out_dir=tmp_path,
        seeds=1,
        overrides=["rounds=20", "eval_every=5"],
    )
    folder = result["folder"]
    table = pd.read_csv(folder / "floral_synthetic.csv")
    assert sorted(table.method) == [
        "Ensemble",
        "Ensemble π*",
        "FLoRAL(1%)",
        "FLoRAL(1%) π*",
        "FedAvg",
        "Local Adaptor",
    ]
    summary = result["summary"]
    assert len(summary) == 6 and summary.finished.all()
    for _, row in summary.iterrows():  # recompute each run's last evaluated test loss
        rounds = load(folder / row["sweep"] / row["run"]).rounds
        last = float(rounds.dropna(subset=["test_loss"]).test_loss.iloc[-1])
        name, strategy = row["algorithm.name"], str(row["strategy"])
        method = {"fedavg_full": "FedAvg", "floral_local": "Local Adaptor"}.get(name)
        if method is None:
            base = "Ensemble" if name == "ensemble" else "FLoRAL(1%)"
            method = base + (" π*" if "oracle" in strategy else "")
        got = table.loc[table.method == method, "mean"].iloc[0]
        assert got == pytest.approx(last, rel=1e-12)
    assert all(p.exists() and p.stat().st_size > 0 for p in result["figures"])
    names = sorted(p.name for p in result["figures"])
    assert names == ["floral_synthetic.csv", "floral_synthetic.png", "floral_synthetic_time.png"]
    # eval_every 5: every curve starts at the zero-shot evaluation (rounds_done 0, time 0)
    run = load(folder / summary["sweep"].iloc[0] / summary["run"].iloc[0])
    curve = evaluations(run, "test_loss")
    assert curve.rounds_done.tolist() == [0, 5, 10, 15, 20]
    assert curve.t_end_s.iloc[0] == 0.0
    assert curve.test_loss.iloc[0] == pytest.approx(run.meta["initial_evaluation"]["test_loss"])
    assert curve.test_loss.iloc[1:].tolist() == run.rounds.test_loss.dropna().tolist()


@pytest.mark.slow  # 80-120 s on a 2-core CPU
def test_adaptors_study_bits_grow_with_c(tmp_path):
    spec = REPRODUCTIONS["floral-adaptors"]
    grid = spec.sweeps["C"]
    assert [s["n_adaptors"] for s in grid["strategy"]] == [1, 2, 4, 8]
    result = reproduce(
        "floral-adaptors",
        out_dir=tmp_path,
        seeds=1,
        overrides=["rounds=2", "eval_every=1", "n_clients=8", "n_scheduled=8"],
    )
    table = pd.read_csv(result["folder"] / "floral_adaptors.csv").set_index("C")
    # MNIST MLP 784-200-10: base 159,010 values; at rho = 0.1 one adaptor set is
    # (784 + 200) 15 + 200 on fc1 and (200 + 10) 1 + 10 on the head = 15,180 values (§7);
    # the client also sends its C mixture weights when C > 1
    for c in (1, 2, 4, 8):
        values = 159_010 + c * 15_180 + (c if c > 1 else 0)
        assert table.loc[c, "bits_up_per_client"] == pytest.approx(32 * values)
    assert table.accuracy.between(0, 1).all() and (table.seeds == 1).all()
    names = sorted(p.name for p in result["figures"])
    assert names == ["floral_adaptors.csv", "floral_adaptors.png", "floral_adaptors_time.png"]
    assert not math.isnan(table.accuracy.iloc[0])


def test_reduced_mnist_floral_runs_keep_the_scenarios_router_lr():
    """The methods' grid replaces the strategy section; the reduced task's FLoRAL runs must
    still get scenarios/floral/mnist_reduced.yaml's router lr 0.3, the others the default."""
    import json

    from wirelessfl.config.loader import SCENARIO_DIR, load_scenario

    for name, figure, lr in (("floral-mnist-reduced", "reduced", 0.3), ("floral-mnist", "", 0.1)):
        spec = REPRODUCTIONS[name]
        scenario_path = SCENARIO_DIR / spec.scenario
        for strategy in spec.sweeps["floral"]["strategy"]:
            sc = load_scenario(scenario_path, [f"strategy={json.dumps(strategy)}"])
            assert sc.strategy.router_lr == pytest.approx(lr), (figure, strategy)
