"""Paired differences against a reference method: pairing by seed and context, the 95 %
t-interval, the verdict rules, and every reproduction's reference pairing its own grid."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from wirelessfl.results.columns import (
    STUDY_ACCURACY_ENERGY_COLUMNS,
    STUDY_CELLS_COLUMNS,
    STUDY_ENERGY_COLUMNS,
    STUDY_NR_COLUMNS,
)
from wirelessfl.study.grid import format_value
from wirelessfl.study.paired import (
    PAIRED_COLUMNS,
    Reference,
    canonical,
    paired_differences,
    per_run_differences,
    t_interval,
    verdict,
)
from wirelessfl.study.reproductions import REPRODUCTIONS

REF = {"method": "ref"}


def _table(method_acc: dict[str, list[float]], **extra) -> pd.DataFrame:
    """One row per (method, seed): ``method``, ``seed`` and ``final_accuracy``."""
    rows = [
        {"run": f"{m}-{s}", "method": m, "seed": s, "final_accuracy": acc, **extra}
        for m, values in method_acc.items()
        for s, acc in enumerate(values)
    ]
    return pd.DataFrame(rows)


def test_interval_and_mean_agree_with_scipy_paired_t():
    rng = np.random.default_rng(3)
    ref = rng.uniform(0.6, 0.8, 7)
    other = ref + rng.normal(0.02, 0.01, 7)
    table = _table({"ref": list(ref), "a": list(other)})
    row = paired_differences(table, ["method"], REF).iloc[0]
    want = stats.ttest_rel(other, ref).confidence_interval(0.95)
    assert row.n == 7 and row.ci_low == pytest.approx(want.low, rel=1e-12)
    assert row.ci_high == pytest.approx(want.high, rel=1e-12)
    assert row.mean_diff == pytest.approx(float(np.mean(other - ref)), rel=1e-12)
    assert row.sd_diff == pytest.approx(float(np.std(other - ref, ddof=1)), rel=1e-12)
    assert row.mean_method == pytest.approx(other.mean()) and row.mean_reference == (
        pytest.approx(ref.mean())
    )
    assert list(row.diffs) == pytest.approx(list(other - ref), rel=1e-12)
    assert row.seeds == tuple(range(7))
    lo, hi = stats.t.interval(0.95, 6, loc=np.mean(other - ref), scale=stats.sem(other - ref))
    assert t_interval(list(other - ref)) == (pytest.approx(lo), pytest.approx(hi))
    assert list(paired_differences(table, ["method"], REF).columns) == PAIRED_COLUMNS


def test_interval_is_nan_below_two_seeds():
    assert all(math.isnan(x) for x in t_interval([0.1]))
    assert all(math.isnan(x) for x in t_interval([]))


def test_three_positive_seeds_are_not_established():
    got = verdict([0.05, 0.06, 0.055])
    assert got["verdict"] == "not established" and got["same_sign_all_seeds"]
    assert got["reason"] == "fewer than 5 seeds"  # the interval excludes 0 already


def test_five_tight_positive_seeds_are_above_and_negative_below():
    up = verdict([0.05, 0.06, 0.055, 0.052, 0.058])
    assert up["verdict"] == "above" and up["reason"] == "" and up["ci_low"] > 0
    down = verdict([-0.05, -0.06, -0.055, -0.052, -0.058])
    assert verdict(np.array([0.05, 0.06, 0.055, 0.052, 0.058]))["verdict"] == "above"  # numpy
    assert down["verdict"] == "below" and down["ci_high"] < 0


def test_mixed_signs_are_not_established():
    got = verdict([0.05, 0.06, -0.01, 0.05, 0.07, 0.06])
    assert got["verdict"] == "not established" and not got["same_sign_all_seeds"]
    assert "sign differs across seeds" in got["reason"]
    zero = verdict([0.05, 0.06, 0.0, 0.05, 0.07])  # a tie is not the claimed direction
    assert zero["verdict"] == "not established" and not zero["same_sign_all_seeds"]


def test_same_sign_but_wide_interval_is_not_established():
    got = verdict([0.01, 0.01, 0.01, 0.01, 10.0])
    assert got["same_sign_all_seeds"] and got["ci_low"] < 0 < got["ci_high"]
    assert got["verdict"] == "not established" and got["reason"] == "interval includes 0"


def test_verdict_through_the_table():
    table = _table(
        {
            "ref": [0.70, 0.72, 0.71, 0.69, 0.70],
            "better": [0.75, 0.78, 0.76, 0.74, 0.76],
            "mixed": [0.71, 0.70, 0.72, 0.69, 0.71],
        }
    )
    out = paired_differences(table, ["method"], REF).set_index("method")
    assert out.loc["method=better", "verdict"] == "above"
    assert out.loc["method=mixed", "verdict"] == "not established"
    assert "method=ref" not in out.index  # the reference is not compared with itself
    assert (out.reference == "method=ref").all()


def test_runs_without_a_partner_are_reported_with_n_zero():
    table = _table({"ref": [0.7, 0.7], "a": [0.8, 0.8, 0.8]})  # a's seed 2 has no reference
    table.loc[len(table)] = {"run": "b", "method": "b", "seed": 9, "final_accuracy": 0.5}
    out = paired_differences(table, ["method"], REF).set_index("method")
    assert out.loc["method=a", "n"] == 2 and out.loc["method=a", "n_unpaired"] == 1
    b = out.loc["method=b"]
    assert b.n == 0 and b.n_unpaired == 1 and b.verdict == "not established"
    assert b.reason == "no paired seeds" and math.isnan(b.mean_diff)
    per_run = per_run_differences(table, ["method"], REF).set_index("run")
    assert per_run.loc["b", "reference_run"] == "" and math.isnan(
        per_run.loc["b", "final_accuracy_vs_reference"]
    )
    assert per_run.loc["a-1", "reference_run"] == "ref-1"
    assert per_run.loc["a-1", "final_accuracy_vs_reference"] == pytest.approx(0.1)
    assert per_run.loc["ref-0", "reference_run"] == "(reference)"
    assert per_run.loc["ref-0", "final_accuracy_vs_reference"] == 0.0


def test_pairing_stays_within_the_context():
    """Each dataset's runs are compared with the reference on the same dataset only."""
    easy = _table({"ref": [0.9] * 5, "a": [0.95, 0.96, 0.94, 0.95, 0.97]}, dataset="easy")
    hard = _table({"ref": [0.3] * 5, "a": [0.2, 0.21, 0.19, 0.22, 0.2]}, dataset="hard")
    table = pd.concat([easy, hard], ignore_index=True)
    out = paired_differences(table, ["method"], REF).set_index("context")
    assert set(out.index) == {"dataset=easy", "dataset=hard"}
    assert out.loc["dataset=easy", "mean_diff"] == pytest.approx(0.054)
    assert out.loc["dataset=hard", "mean_diff"] == pytest.approx(-0.096)
    assert out.loc["dataset=easy", "verdict"] == "above"
    assert out.loc["dataset=hard", "verdict"] == "below"
    # a dataset the reference never ran on: reported, n = 0
    other = _table({"a": [0.5] * 5}, dataset="other")
    out = paired_differences(pd.concat([table, other]), ["method"], REF)
    row = out[out.context == "dataset=other"].iloc[0]
    assert row.n == 0 and row.n_unpaired == 5


def test_a_missing_context_value_is_compared_with_each_reference_context():
    """Dense ILoRA (no sparsification) against SOFT at each sparsification, by seed."""
    rows = []
    for seed in range(5):
        for ratio in (0.5, 0.1):
            rows.append(
                {"sp": "soft", "O": ratio, "rank": 4, "seed": seed, "final_accuracy": ratio}
            )
            rows.append({"sp": "topk", "O": ratio, "rank": 4, "seed": seed, "final_accuracy": 0})
        rows.append({"sp": "none", "O": math.nan, "rank": 4, "seed": seed, "final_accuracy": 1})
    table = pd.DataFrame(rows)
    out = paired_differences(table, ["sp"], {"sp": "soft"}, context_keys=["O", "rank"])
    none = out[out.method == "sp=none"].set_index("context")
    assert set(none.index) == {"O=0.5, rank=4", "O=0.1, rank=4"}
    assert none.loc["O=0.5, rank=4", "mean_diff"] == pytest.approx(0.5)
    assert none.loc["O=0.1, rank=4", "mean_diff"] == pytest.approx(0.9)
    topk = out[out.method == "sp=topk"].set_index("context")
    assert topk.loc["O=0.1, rank=4", "mean_diff"] == pytest.approx(-0.1)  # same O only
    assert (out.n == 5).all()
    # the run that has two partners gets both named and no single per-run difference
    per_run = per_run_differences(table, ["sp"], {"sp": "soft"}, context_keys=["O", "rank"])
    dense = per_run[per_run.sp == "none"].iloc[0]
    assert dense.reference_run.count(";") == 1 and math.isnan(dense.final_accuracy_vs_reference)


def test_an_exact_context_is_preferred_over_a_missing_one():
    rows = []
    for seed in range(5):
        rows += [
            {"V": 1, "outage": math.nan, "seed": seed, "final_accuracy": 0.5},
            {"V": 1, "outage": "null", "seed": seed, "final_accuracy": 0.4},
            {"V": 2, "outage": math.nan, "seed": seed, "final_accuracy": 0.6},
            {"V": 2, "outage": "null", "seed": seed, "final_accuracy": 0.2},
        ]
    out = paired_differences(pd.DataFrame(rows), ["V"], {"V": 1}, context_keys=["outage"])
    assert sorted(out.context) == ["", "outage=null"]
    assert out.set_index("context").mean_diff.to_dict() == {
        "": pytest.approx(0.1),
        "outage=null": pytest.approx(-0.2),
    }


def test_values_compare_as_the_sweep_writes_them():
    assert canonical(4.0) == canonical(4) == "4"
    assert canonical({"n_adaptors": 4, "rho": 0.1}) == '{"n_adaptors":4,"rho":0.1}'
    assert canonical(float("nan")) is None and canonical(None) is None
    table = pd.DataFrame(
        {
            "strategy": ['{"n_adaptors":4,"rho":0.1}', '{"n_adaptors":2,"rho":0.1}'] * 5,
            "seed": np.repeat(range(5), 2),
            "final_accuracy": [0.8, 0.7] * 5,
        }
    )
    out = paired_differences(table, ["strategy"], {"strategy": {"n_adaptors": 4, "rho": 0.1}})
    assert out.iloc[0].verdict == "below"  # the same difference every seed: sd 0
    assert out.iloc[0].mean_diff == pytest.approx(-0.1) and out.iloc[0].n == 5


def test_zero_spread_with_five_seeds_is_a_verdict():
    table = pd.DataFrame(
        {"m": ["ref", "a"] * 5, "seed": np.repeat(range(5), 2), "bits": [1.0, 3.0] * 5}
    )
    row = paired_differences(table, ["m"], {"m": "ref"}, metrics="bits").iloc[0]
    assert row.ci_low == row.ci_high == 2.0 and row.verdict == "above"


def test_missing_metrics_and_unfinished_runs_are_not_counted():
    table = _table({"ref": [0.7] * 6, "a": [0.8] * 6})
    table["time_to_target_s"] = [10.0] * 6 + [5.0, math.nan, 5.0, 5.0, 5.0, 5.0]
    table["finished"] = True
    table.loc[(table.method == "a") & (table.seed == 5), "finished"] = False
    out = paired_differences(table, ["method"], REF, metrics=["final_accuracy", "time_to_target_s"])
    acc, ttt = out.iloc[0], out.iloc[1]
    assert acc.metric == "final_accuracy" and acc.n == 5 and acc.n_missing == 1
    assert ttt.metric == "time_to_target_s" and ttt.n == 4 and ttt.n_missing == 2
    assert ttt.reason.startswith("fewer than 5 seeds")


def test_ambiguous_and_missing_references_are_errors():
    table = _table({"ref": [0.7] * 3, "a": [0.8] * 3})
    twice = pd.concat([table, table[table.method == "ref"]], ignore_index=True)
    with pytest.raises(ValueError, match="two pairs at seed 0"):
        paired_differences(twice, ["method"], REF, context_keys=[])
    with pytest.raises(ValueError, match="no run is the reference method=nope"):
        paired_differences(table, ["method"], {"method": "nope"})


def _grid_table(sweeps: dict[str, dict[str, list]], seeds: int) -> pd.DataFrame:
    """A reproduction's summary as ``index.csv`` would hold it: grid values written by the
    sweep (lists and dicts as JSON text; an explicit None marked "null", as reproduce does),
    keys a sweep does not set missing."""
    rows = []
    for name, grid in sweeps.items():
        for values in itertools.product(*grid.values()):
            point = {
                k: ("null" if v is None else format_value(v) if isinstance(v, list | dict) else v)
                for k, v in zip(grid, values, strict=True)
            }
            for seed in range(seeds):
                rows.append({"sweep": name, "run": f"{name}{len(rows)}", **point, "seed": seed})
    table = pd.DataFrame(rows)
    rng = np.random.default_rng(0)
    metrics = (
        "final_accuracy",
        "time_to_target_s",
        "total_bits_up",
        "final_test_loss",
        "mean_delay_s",
        "mean_sparsification",
        "rank",
    )
    energy = ("device_energy_j", "max_device_energy_j", "budget_met_share", "virtual_time_s")
    energy += (*STUDY_ENERGY_COLUMNS, *STUDY_ACCURACY_ENERGY_COLUMNS, *STUDY_NR_COLUMNS)
    energy += tuple(STUDY_CELLS_COLUMNS)
    for metric in (*metrics, "bits_to_target", "updates_to_target", *energy):
        table[metric] = rng.uniform(size=len(table))
    return table


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("figure", list(REPRODUCTIONS))
def test_every_reproduction_reference_pairs_every_run_of_its_grid(figure, full):
    spec = REPRODUCTIONS[figure]
    if spec.reference is None:
        assert figure == "dpp"  # network only: no accuracy claim
        return
    sweeps = (spec.full_sweeps or spec.sweeps) if full else spec.sweeps
    table = _grid_table(sweeps, 5)
    ref = spec.reference
    keys = list(dict.fromkeys(k for g in sweeps.values() for k in g))
    context = [k for k in keys if k not in ref.method_keys]
    out = paired_differences(
        table, ref.method_keys, ref.at(full), metrics=ref.metrics, context_keys=context
    )
    assert len(out) and (out.n == 5).all() and (out.n_unpaired == 0).all()
    per_run = per_run_differences(
        table, ref.method_keys, ref.at(full), metrics=ref.metrics, context_keys=context
    )
    assert (per_run.reference_run != "").all()


def test_references_name_the_claims_methods():
    refs = {name: spec.reference for name, spec in REPRODUCTIONS.items()}
    assert refs["fig3ab"].at(False) == {"compression.sparsifier": "soft"}
    assert refs["fig3c"].method_keys == ("controller.name", "controller.rank")
    assert refs["fig45"].at(True) == {"learner.partition_options.n_shards": 100}
    assert refs["fslora-ratios"].metrics == ("final_accuracy", "time_to_target_s")
    assert refs["floral-mnist"].at(False) == {"algorithm.name": "fedavg_full"}
    assert refs["floral-synthetic-linear"].metrics == ("final_test_loss",)
    assert refs["h2tune-hybrid"].at(False) == {"algorithm.name": "h2tune"}
    assert refs["dpp"] is None


def test_reproduce_writes_paired_columns_and_table(tmp_path, monkeypatch, capsys):
    """Through ``reproduce``: a cut-down dpp figure with V = 1e-3 as the reference, 5 seeds;
    the explicit ``None`` of the no-outage sweep stays its own context."""
    from wirelessfl.study import reproduce as module

    spec = dataclasses.replace(
        REPRODUCTIONS["dpp"],
        sweeps={
            "V": {"controller.V": [1e-4, 1e-3]},
            "V_no_outage": {"controller.V": [1e-4, 1e-3], "faults.outage_snr_db": [None]},
        },
        reference=Reference(
            {"controller.V": 1e-3}, metrics=("final_accuracy", "mean_delay_s", "nonexistent")
        ),
        draw=None,
    )
    monkeypatch.setitem(module.REPRODUCTIONS, "dpp", spec)
    result = module.reproduce("dpp", out_dir=tmp_path, seeds=5, overrides=["rounds=30"])
    summary, paired = result["summary"], result["paired"]
    assert len(summary) == 20 and result["paired_problem"] is None
    on_disk = pd.read_csv(result["folder"] / "summary.csv")
    assert {"reference_run", "final_accuracy_vs_reference", "mean_delay_s_vs_reference"} <= set(
        on_disk.columns
    )
    for _, row in summary.iterrows():  # each run minus the V = 1e-3 run of its sweep and seed
        if row["controller.V"] == 1e-3:
            assert row.reference_run == "(reference)"
            continue
        partner = summary[
            (summary.sweep == row.sweep)
            & (summary["controller.V"] == 1e-3)
            & (summary.seed == row.seed)
        ].iloc[0]
        assert row.reference_run == f"{partner.sweep}/{partner.run}"
        want = row.mean_delay_s - partner.mean_delay_s
        assert row.mean_delay_s_vs_reference == pytest.approx(want, rel=1e-12)
    assert sorted(paired.metric) == ["final_accuracy"] * 2 + ["mean_delay_s"] * 2
    assert sorted(paired.context) == ["", ""] + ["faults.outage_snr_db=null"] * 2
    assert (paired.n == 5).all()
    written = pd.read_csv(result["folder"] / "paired.csv")
    assert list(written.columns) == PAIRED_COLUMNS and len(written) == 4
    delay = paired[(paired.metric == "mean_delay_s") & (paired.context == "")].iloc[0]
    diffs = [
        r.mean_delay_s_vs_reference
        for _, r in summary[(summary.sweep == "V") & (summary["controller.V"] == 1e-4)]
        .sort_values("seed")
        .iterrows()
    ]
    assert list(delay.diffs) == pytest.approx(diffs, rel=1e-12)
    again = module.reproduce("dpp", out_dir=tmp_path, seeds=5, overrides=["rounds=30"])
    assert (again["summary"].status == "skipped").all()
    pd.testing.assert_frame_equal(again["paired"], paired)
    args = argparse.Namespace(
        figure="dpp",
        out=str(tmp_path),
        full=False,
        jobs=1,
        quiet=True,
        seeds="5",
        set=["rounds=30"],
        target=None,
        executor="local",
        ray_address=None,
        plugin=None,
    )
    assert module._cmd_reproduce(args) == 0
    printed = capsys.readouterr().out
    assert "paired differences against controller.V=0.001" in printed
    assert "faults.outage_snr_db=null" in printed and "fewer than 5 seeds" not in printed
