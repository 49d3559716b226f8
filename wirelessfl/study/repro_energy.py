"""The energy reproductions (scenarios under ``energy/``): Yang et al.'s energy against the
completion-time limit and the devices (``energy-min-*``), the energy budget with the joint
radio (``energy-budget-joint``), accuracy against time and energy with the fixed and the joint
radio (``energy-joint-accuracy-*``) and against the joint radio's energy price
(``energy-price-umi``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wirelessfl.study.budget_figures import draw_budget
from wirelessfl.study.energy_figures import SCHEME_KEY, draw_energy, energy_columns, trend_table
from wirelessfl.study.joint_accuracy_figures import (
    PRICE_KEY,
    RADIO_KEY,
    accuracy_energy_columns,
    draw_joint_accuracy,
    radio_tables,
)
from wirelessfl.study.paired import Reference
from wirelessfl.study.repro_spec import Reproduction

__all__ = [
    "DEFAULT_BUDGET_J",
    "ENERGY_BUDGETS_J",
    "ENERGY_PRICES",
    "ENERGY_REPRODUCTIONS",
    "ENERGY_SCHEMES",
    "FIXED_RADIO_REFERENCE",
    "JOINT_REFERENCE",
    "PRICED_ENERGY_PRICE",
    "UMI_BUDGET_J",
    "energy_trend",
    "radio_sweeps",
]

#: Yang et al.'s four schemes (``controller.energy_scheme``): the proposed joint optimisation
#: and its baselines
ENERGY_SCHEMES = ["joint", "equal_bandwidth", "max_power", "max_frequency"]
#: the schemes against the proposed one at the same seed and the same T or K (the context)
JOINT_REFERENCE = Reference(
    {SCHEME_KEY: "joint"},
    metrics=("round_energy_j", "round_compute_energy_j", "round_transmit_energy_j"),
    label="joint",
)


def radio_sweeps(
    budgets_j: list[float | None], priced_budget_j: float
) -> dict[str, dict[str, list]]:
    """The joint and the fixed radio at each energy budget of ``budgets_j`` [J per device per
    round, time-average; None: no budget, no energy queues], and the joint radio with the
    energy price ``PRICED_ENERGY_PRICE`` at ``priced_budget_j`` (sweep ``joint-priced``). The
    fixed radio's online stage plans with noise over the whole band and refuses noise on the
    share, so its sweep sets ``channel.noise_bandwidth: band``: its rates are
    b B log2(1 + SNR), the joint radio's b B log2(1 + SNR / b)."""
    return {
        "joint": {RADIO_KEY: ["joint"], "controller.energy_budget_j": budgets_j},
        "fixed": {
            RADIO_KEY: ["fixed"],
            "channel.noise_bandwidth": ["band"],
            "controller.energy_budget_j": budgets_j,
        },
        "joint-priced": {
            RADIO_KEY: ["joint"],
            PRICE_KEY: [PRICED_ENERGY_PRICE],
            "controller.energy_budget_j": [priced_budget_j],
        },
    }


#: the energy price μ of the priced joint radio [per J] (docs/solvers.md, (E4)): the joint
#: step prices every scheduled device's energy at ω Z_k + μ
PRICED_ENERGY_PRICE = 0.01

#: the joint radio, with and without the energy price, against the fixed one at the same seed
#: and budget
FIXED_RADIO_REFERENCE = Reference(
    {RADIO_KEY: "fixed"},
    keys=("channel.noise_bandwidth", PRICE_KEY),
    metrics=(
        "final_accuracy",
        "virtual_time_s",
        "total_energy_j",
        "time_to_target_s",
        "energy_to_target_j",
    ),
    label="fixed radio",
)
#: energy-joint-accuracy-umi's budget [J per device per round]: under every device's energy
#: with the fixed radio and no budget (0.0041-0.0109 J, seed 0), above every floor (compute at
#: 2 GHz: at most 6e-5 J)
UMI_BUDGET_J = 0.004
#: energy-price-umi's energy prices μ [per J]: 0 (the default) and 1e-6 to 1 (1e-6 and 1e-4
#: look for the price below which the step stops pricing the devices whose queue is empty)
ENERGY_PRICES = [0.0, 1.0e-6, 1.0e-4, 0.001, 0.01, 0.1, 1.0]
#: energy-joint-accuracy-default's budget [J per device per round]: under the fixed radio's
#: mean energy without a budget (0.175 J, seed 0, first 8 rounds), above every device's floor
#: with it (compute at 2 GHz, 5 of 20 rounds: 0.045 J; 0.0028 J at 0.5 GHz)
DEFAULT_BUDGET_J = 0.1


def energy_trend(x_key: str) -> Callable[[Any], dict[str, Any]]:
    """The ``tables`` of an energy reproduction: ``energy_trend`` (:func:`trend_table` of the
    energy per round along ``x_key``)."""

    def tables(summary) -> dict[str, Any]:
        return {"energy_trend": trend_table(summary, x_key)}

    return tables


#: budgets [J per device per round]: 0.2 J, below the low-end phones' E_lo (0.29-0.30 J, seeds
#: 0-4) and above every other device's, then 0.4, 0.6, 0.9 and 1.2 J, inside every device's band
#: in every seed (their common band is [0.30, 1.33] J), and 3 J, above every device's E_hi
#: (at most 2.56 J; docs/results.md)
ENERGY_BUDGETS_J = [0.2, 0.4, 0.6, 0.9, 1.2, 3.0]


#: the energy claims, by name
ENERGY_REPRODUCTIONS: dict[str, Reproduction] = {
    "energy-min-deadline": Reproduction(
        scenario="energy/yang_cell.yaml",
        # from just above the least round time (0.5 s: a slow device cannot meet it in some rounds)
        sweeps={
            "deadline": {
                SCHEME_KEY: ENERGY_SCHEMES,
                "controller.round_time_s": [0.5, 0.6, 0.7, 1.0, 1.5, 2.0],
            }
        },
        claim="Yang et al.: the joint power, clock and bandwidth allocation spends less energy "
        "per round than equal bandwidth, full power or full clock at every completion-time "
        "limit T, and the energy falls as T loosens",
        seeds=5,
        full=[],
        draw=draw_energy(
            "energy_vs_deadline",
            "controller.round_time_s",
            "completion-time limit T [s]",
            "Energy per round against T (K = 5 of 20 devices)",
        ),
        reference=JOINT_REFERENCE,
        run_columns=energy_columns,
        tables=energy_trend("controller.round_time_s"),
    ),
    "energy-min-devices": Reproduction(
        scenario="energy/yang_cell.yaml",
        sweeps={
            "devices": {
                SCHEME_KEY: ENERGY_SCHEMES,
                "n_scheduled": [2, 4, 6, 8, 10],  # of 20, at the scenario's T = 1 s
            }
        },
        claim="Yang et al.: the joint allocation spends less energy per round than each "
        "baseline for every number K of scheduled devices (at T = 1 s), and the energy "
        "grows with K",
        seeds=5,
        full=[],
        draw=draw_energy(
            "energy_vs_devices",
            "n_scheduled",
            "scheduled devices K",
            "Energy per round against K (T = 1 s)",
        ),
        reference=JOINT_REFERENCE,
        run_columns=energy_columns,
        tables=energy_trend("n_scheduled"),
    ),
    "energy-budget-joint": Reproduction(
        scenario="energy/umi_budget_joint.yaml",
        sweeps={
            "joint": {
                "controller.radio": ["joint"],
                "controller.energy_budget_j": ENERGY_BUDGETS_J,
            },
            # the paper's P3 plans with noise over the whole band (refuses noise on the share)
            "fixed": {
                "controller.radio": ["fixed"],
                "channel.noise_bandwidth": ["band"],
                "controller.energy_budget_j": ENERGY_BUDGETS_J,
            },
            # the queues that move only when their device spends, at the budgets inside the band
            "joint-at-participation": {
                "controller.radio": ["joint"],
                "controller.energy_queue": ["at_participation"],
                "controller.energy_budget_j": [0.4, 0.6, 0.9, 1.2],
            },
            # the signed queue of (E1''): inside the band, and 3 J above every band
            "joint-signed": {
                "controller.radio": ["joint"],
                "controller.energy_queue": ["signed"],
                "controller.energy_budget_j": [0.4, 0.6, 0.9, 1.2, 3.0],
            },
        },
        claim="with power and clock as decisions each device's time-average energy meets its "
        "budget, and settles on it where the budget binds against the delay queue; with the "
        "fixed radio it barely moves; queues that move only when their device spends bring it "
        "within 5 % of the budget inside the band; the signed queue makes it follow the budget "
        "inside the band",
        seeds=5,
        full=[],
        draw=draw_budget,
        # the joint radio against the fixed one at the same budget and seed
        reference=Reference(
            {"controller.radio": "fixed"},
            keys=("channel.noise_bandwidth", "controller.energy_queue"),
            metrics=("device_energy_j", "max_device_energy_j", "budget_met_share"),
            label="fixed radio",
        ),
    ),
    "energy-joint-accuracy-umi": Reproduction(
        scenario="energy/umi_joint_accuracy.yaml",
        # and without a budget, for contrast
        sweeps=radio_sweeps([UMI_BUDGET_J, None], UMI_BUDGET_J),
        claim="at the same energy budget, deciding power and clock (joint radio) reaches the "
        "same accuracy as full power and clock (fixed radio) with less energy",
        target_accuracy=0.75,
        seeds=5,
        full=[],
        draw=draw_joint_accuracy("joint_accuracy_umi", "umi cell, MLP / digits"),
        reference=FIXED_RADIO_REFERENCE,
        run_columns=accuracy_energy_columns,
        tables=radio_tables,
    ),
    "energy-joint-accuracy-default": Reproduction(
        scenario="energy/default_joint_accuracy.yaml",
        sweeps=radio_sweeps([DEFAULT_BUDGET_J], DEFAULT_BUDGET_J),
        claim="at the same energy budget, deciding power and clock (joint radio) reaches the "
        "same accuracy as full power and clock (fixed radio) with less energy, on the default "
        "task",
        target_accuracy=0.7,
        seeds=5,
        full=[],
        draw=draw_joint_accuracy("joint_accuracy_default", "EfficientNet-Lite0 / MNIST-5k"),
        reference=FIXED_RADIO_REFERENCE,
        run_columns=accuracy_energy_columns,
        tables=radio_tables,
    ),
    "energy-price-umi": Reproduction(
        scenario="energy/umi_joint_accuracy.yaml",
        sweeps={
            "price": {
                RADIO_KEY: ["joint"],
                PRICE_KEY: ENERGY_PRICES,
                "controller.energy_budget_j": [UMI_BUDGET_J],
            }
        },
        claim="the joint radio's energy at the umi budget falls as the energy price grows, at "
        "the same accuracy",
        target_accuracy=0.75,
        seeds=3,
        full=[],
        draw=draw_joint_accuracy("energy_price_umi", "umi cell, energy price μ"),
        reference=Reference({PRICE_KEY: 0.0}, metrics=FIXED_RADIO_REFERENCE.metrics, label="μ = 0"),
        run_columns=accuracy_energy_columns,
        tables=radio_tables,
    ),
}
