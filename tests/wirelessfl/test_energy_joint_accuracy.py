"""Fixed against joint radio control (docs/results.md, "Fixed against joint radio control:
accuracy, time and energy"): the reproductions' grids, the scenarios, a tiny end-to-end run
with both radios and the study's columns and table against sums written out here."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.results import load
from wirelessfl.study.grid import format_value
from wirelessfl.study.joint_accuracy_figures import (
    PRICE_KEY,
    RADIO_KEY,
    accuracy_curve,
    accuracy_energy_columns,
    radio_table,
    variant_label,
)
from wirelessfl.study.paired import paired_differences
from wirelessfl.study.reproduce import REPRODUCTIONS, reproduce
from wirelessfl.study.reproductions import FIXED_RADIO_REFERENCE, PRICED_ENERGY_PRICE

STUDIES = {"energy-joint-accuracy-umi": 5, "energy-joint-accuracy-default": 5}


@pytest.mark.parametrize(("name", "min_seeds"), STUDIES.items())
def test_the_reproduction_compares_the_radios_at_each_budget(name, min_seeds):
    """Three sweeps: joint and fixed at the same budgets (one at least), and the joint radio
    with the energy price at one of them, over real training with CMOS compute energy whose
    clock the joint radio may lower; the fixed radio plans with noise over the band (it refuses
    noise on the share), the joint radio on the share."""
    spec = REPRODUCTIONS[name]
    assert spec.seeds >= min_seeds and spec.target_accuracy is not None
    resolved = {}
    for grid in spec.sweeps.values():
        for values in itertools.product(*grid.values()):
            sets = [f"{k}={format_value(v)}" for k, v in zip(grid, values, strict=True)]
            sc = load_scenario(SCENARIO_DIR / spec.scenario, sets)
            c = sc.controller
            resolved[variant_label(c.radio, c.energy_price), c.energy_budget_j] = sc
    priced = f"joint, μ = {PRICED_ENERGY_PRICE:g}"
    assert sorted({variant for variant, _ in resolved}) == ["fixed", "joint", priced]
    budgets_j = {budget_j for variant, budget_j in resolved if variant == "fixed"}
    priced_budgets_j = [budget_j for variant, budget_j in resolved if variant == priced]
    assert len(resolved) == 2 * len(budgets_j) + 1 and set(priced_budgets_j) <= budgets_j
    assert any(b is not None and b > 0.0 for b in budgets_j) and priced_budgets_j[0] > 0.0
    for budget_j in budgets_j:
        joint, fixed = resolved["joint", budget_j], resolved["fixed", budget_j]
        assert (joint.channel.noise_bandwidth, fixed.channel.noise_bandwidth) == ("share", "band")
        assert joint.controller.energy_price == fixed.controller.energy_price == 0.0
        for sc in (joint, fixed):
            assert sc.learner.kind == "lora"
            assert sc.devices.energy.model == "cmos"
            assert sc.devices.energy.cpu_freq_min_hz < sc.devices.energy.cpu_freq_hz
    priced_sc = resolved[priced, priced_budgets_j[0]]
    assert priced_sc.controller.radio == "joint" and priced_sc.channel.noise_bandwidth == "share"
    assert FIXED_RADIO_REFERENCE.method_keys == (RADIO_KEY, "channel.noise_bandwidth", PRICE_KEY)


def test_the_default_study_scenario_runs_network_only_with_both_radios(tmp_path):
    """Its channel, devices and controller with the surrogate learner: one round per radio."""
    from wirelessfl.sim import run_scenario

    path = SCENARIO_DIR / "energy/default_joint_accuracy.yaml"
    base = ["rounds=2", "learner.kind=surrogate", "controller.energy_budget_j=0.1"]
    for radio, noise in (("joint", "share"), ("fixed", "band")):
        sets = [*base, f"controller.radio={radio}", f"channel.noise_bandwidth={noise}"]
        run = run_scenario(load_scenario(path, sets), tmp_path / radio)
        assert len(run.rounds) == 2
        assert (run.clients.compute_energy_j > 0).all()


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    """energy-joint-accuracy-umi at one seed, 2 rounds, evaluated every round (real training)."""
    out = tmp_path_factory.mktemp("study")
    return reproduce(
        "energy-joint-accuracy-umi",
        out_dir=out,
        seeds=[0],
        overrides=["rounds=2", "eval_every=1"],
    )


def _client_energy_j(run) -> pd.Series:
    """round -> every client's compute + transmit energy in that round, from clients.csv [J]."""
    c = run.clients
    return (c.compute_energy_j + c.transmit_energy_j).groupby(c["round"]).sum()


def test_the_tiny_study_runs_both_radios_and_draws(tiny_study):
    table = tiny_study["summary"]
    # each radio with and without the budget, and the priced joint radio at the budget
    assert table.finished.all() and len(table) == 5
    assert sorted(table[RADIO_KEY]) == ["fixed", "fixed", "joint", "joint", "joint"]
    assert all(p.exists() and p.stat().st_size > 0 for p in tiny_study["figures"])
    means = tiny_study["tables"]["radio_means"]
    assert len(means) == 5 and (means.runs == 1).all()
    assert sorted(means.energy_budget_j.isna()) == [False, False, False, True, True]
    priced = f"joint, μ = {PRICED_ENERGY_PRICE:g}"
    assert sorted(means.variant) == ["fixed", "fixed", "joint", "joint", priced]
    paired = tiny_study["paired"]
    assert set(paired.metric) == set(FIXED_RADIO_REFERENCE.metrics)
    assert paired.method.str.contains(PRICE_KEY).any()  # the priced joint radio is compared
    assert (paired.verdict == "not established").all()  # one seed
    for _, row in table.iterrows():
        run = load(tiny_study["folder"] / row["sweep"] / row["run"])
        per_round_j = _client_energy_j(run)
        assert row["total_energy_j"] == pytest.approx(per_round_j.sum(), rel=1e-9)
        curve = accuracy_curve(run)
        assert curve.energy_j.iloc[-1] == pytest.approx(per_round_j.sum(), rel=1e-9)
        assert (np.diff(curve.energy_j) >= 0).all() and (np.diff(curve.t_end_s) >= 0).all()


def test_energy_to_target_is_the_sum_up_to_the_first_evaluation_at_the_target(tiny_study):
    run = next(
        load(tiny_study["folder"] / s / r)
        for s, r in zip(tiny_study["summary"].sweep, tiny_study["summary"].run, strict=True)
    )
    per_round_j = _client_energy_j(run)
    accuracy = run.rounds.set_index("round").accuracy
    last = float(accuracy.iloc[-1])
    first = int(next(r for r, a in accuracy.items() if a >= last))
    want_j = 0.0 if run.initial_accuracy >= last else float(per_round_j.loc[:first].sum())
    assert accuracy_energy_columns(run, last)["energy_to_target_j"] == pytest.approx(want_j)
    assert math.isnan(accuracy_energy_columns(run, 1.01)["energy_to_target_j"])
    assert math.isnan(accuracy_energy_columns(run)["energy_to_target_j"])


def _summary(seeds: int) -> pd.DataFrame:
    """A summary of ``seeds`` seeds per radio at one budget, the joint radio's energy
    2 J + seed / 10 J below the fixed radio's; no energy price (NaN: the sweeps do not set it,
    as in a reproduction's summary)."""
    rows = []
    for seed in range(seeds):
        for radio, noise, energy_j in (("fixed", "band", 10.0), ("joint", "share", 8.0)):
            rows.append(
                {
                    "controller.radio": radio,
                    "channel.noise_bandwidth": noise,
                    "controller.energy_budget_j": 0.004,
                    PRICE_KEY: math.nan,
                    "energy_budget_j": 0.004,
                    "seed": seed,
                    "finished": True,
                    "final_accuracy": 0.8 + 0.01 * seed,
                    "virtual_time_s": 9.0 if radio == "fixed" else 170.0 + seed,
                    "total_energy_j": energy_j - (0.1 * seed if radio == "joint" else 0.0),
                    "time_to_target_s": math.nan if (radio, seed) == ("joint", 0) else 5.0,
                    "energy_to_target_j": 1.0,
                }
            )
    return pd.DataFrame(rows)


def test_variant_label_names_the_price_only_when_positive():
    assert variant_label("joint", None) == variant_label("joint", math.nan) == "joint"
    assert variant_label("joint", 0.0) == "joint" and variant_label("fixed", 0.0) == "fixed"
    assert variant_label("joint", 0.01) == "joint, μ = 0.01"
    assert variant_label("joint", 1.0) == "joint, μ = 1"


def _priced(summary: pd.DataFrame, price: float, energy_j: float) -> pd.DataFrame:
    """``summary`` with the joint radio's rows again at the energy price ``price``, each run's
    energy ``energy_j`` [J] and virtual time 180 s."""
    rows = summary[summary[RADIO_KEY] == "joint"].assign(
        **{PRICE_KEY: price, "total_energy_j": energy_j, "virtual_time_s": 180.0}
    )
    return pd.concat([summary, rows], ignore_index=True)


def test_radio_table_by_hand():
    table = radio_table(_summary(5)).set_index("variant")
    joint = table.loc["joint"]
    assert joint.runs == 5 and joint.reached == 4 and table.loc["fixed"].reached == 5
    assert joint.total_energy_j == pytest.approx(np.mean([8.0 - 0.1 * s for s in range(5)]))
    assert (joint.total_energy_j_min, joint.total_energy_j_max) == pytest.approx((7.6, 8.0))
    assert joint.virtual_time_s == pytest.approx(172.0)


def test_the_joint_radio_pairs_with_the_fixed_one_across_the_noise_rule():
    """noise_bandwidth is part of the method, so joint (share) pairs with fixed (band) at each
    seed; the interval is the paired t interval written out here."""
    summary = _summary(5)
    paired = paired_differences(
        summary,
        FIXED_RADIO_REFERENCE.method_keys,
        FIXED_RADIO_REFERENCE.value,
        metrics=["total_energy_j"],
        context_keys=["controller.energy_budget_j"],
    ).iloc[0]
    diffs = np.array([-2.0 - 0.1 * s for s in range(5)])
    half = stats.t.ppf(0.975, 4) * diffs.std(ddof=1) / math.sqrt(5)
    assert paired.n == 5 and paired.mean_diff == pytest.approx(diffs.mean())
    want = (diffs.mean() - half, diffs.mean() + half)
    assert (paired.ci_low, paired.ci_high) == pytest.approx(want)
    assert paired.verdict == "below"


def test_radio_table_has_a_row_per_variant():
    """The priced joint runs form a group of their own, apart from the unpriced ones."""
    table = radio_table(_priced(_summary(5), 0.01, 0.3)).set_index("variant")
    assert list(table.index) == ["fixed", "joint", "joint, μ = 0.01"]
    assert (table.runs == 5).all()
    assert table.loc["joint"].total_energy_j == pytest.approx(7.8)  # 8 - mean(0..0.4)
    assert table.loc["joint, μ = 0.01"].total_energy_j == pytest.approx(0.3)
    assert table.loc["joint, μ = 0.01"].virtual_time_s == pytest.approx(180.0)


def test_the_priced_joint_radio_pairs_with_the_fixed_one_as_a_method_of_its_own():
    """With the price a method key the priced and the unpriced joint runs are two methods,
    each paired with the fixed radio at the same seed and budget."""
    summary = _priced(_summary(5), 0.01, 0.3)
    paired = paired_differences(
        summary,
        FIXED_RADIO_REFERENCE.method_keys,
        FIXED_RADIO_REFERENCE.value,
        metrics=["total_energy_j"],
        context_keys=["controller.energy_budget_j"],
    ).set_index("method")
    assert len(paired) == 2 and (paired.n == 5).all()
    priced = paired.loc[[m for m in paired.index if PRICE_KEY in m][0]]
    assert priced.mean_diff == pytest.approx(0.3 - 10.0) and priced.sd_diff == pytest.approx(0.0)
    assert priced.verdict == "below"
    unpriced = paired.loc[[m for m in paired.index if PRICE_KEY not in m][0]]
    assert unpriced.mean_diff == pytest.approx(np.mean([-2.0 - 0.1 * s for s in range(5)]))


def test_the_price_study_sweeps_mu_at_the_umi_budget_against_mu_zero():
    """energy-price-umi: the joint radio at energy-joint-accuracy-umi's budget, one run per
    price, the unpriced one the reference of every other."""
    from wirelessfl.study.reproductions import ENERGY_PRICES, UMI_BUDGET_J

    spec = REPRODUCTIONS["energy-price-umi"]
    assert spec.scenario == REPRODUCTIONS["energy-joint-accuracy-umi"].scenario
    (grid,) = spec.sweeps.values()
    assert grid == {
        RADIO_KEY: ["joint"],
        PRICE_KEY: ENERGY_PRICES,
        "controller.energy_budget_j": [UMI_BUDGET_J],
    }
    assert ENERGY_PRICES[0] == 0.0 and sorted(ENERGY_PRICES) == ENERGY_PRICES
    assert dict(spec.reference.value) == {PRICE_KEY: 0.0}
    for price in ENERGY_PRICES:
        sets = [f"{k}={format_value(v[0] if k != PRICE_KEY else price)}" for k, v in grid.items()]
        ctl = load_scenario(SCENARIO_DIR / spec.scenario, sets).controller
        assert (ctl.radio, ctl.energy_price, ctl.energy_budget_j) == ("joint", price, UMI_BUDGET_J)
