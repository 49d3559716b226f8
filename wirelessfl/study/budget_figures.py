"""The energy-budget study's table and figures (reproduction ``energy-budget-joint``,
docs/results.md, "The energy budget with power and clock as decisions").

Each device's time-average energy per round is its compute + transmit energy summed over the
run's ``clients`` table, divided by the rounds [J/round]; a device follows the budget Ē when
|E_k − Ē| / Ē ≤ 5 %. With the joint radio a run's ``meta.json`` holds each device's band
[E_lo,k, E_hi,k] (:mod:`wirelessfl.sim.energy_band`), and a device follows its clipped target
clip(Ē, E_lo,k, E_hi,k) when its energy is within 5 % of that.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wirelessfl.study.figures import save_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "budget_table",
    "clipped_target_j",
    "device_band_j",
    "device_energy_j",
    "draw_budget",
    "lost_drain_j",
    "running_energy_j",
]

#: a device within this relative distance of its budget follows it
FOLLOW_RTOL = 0.05


def device_energy_j(run) -> pd.Series:
    """client -> its time-average compute + transmit energy per round [J/round], every one of
    the N clients (0 for a client never scheduled)."""
    from wirelessfl.results.groups import config_value

    c = run.clients
    spent = (c.compute_energy_j + c.transmit_energy_j).groupby(c["client"]).sum()
    n_clients = int(config_value(run, "n_clients"))
    return spent.reindex(range(n_clients), fill_value=0.0) / len(run.rounds)


def _spent_j(run) -> np.ndarray:
    """(T, N) each device's compute + transmit energy in each round [J] (0 when not training)."""
    from wirelessfl.results.groups import config_value

    c = run.clients
    spent = np.zeros((len(run.rounds), int(config_value(run, "n_clients"))))
    np.add.at(
        spent,
        (c["round"].to_numpy(), c.client.to_numpy()),
        c.compute_energy_j + c.transmit_energy_j,
    )
    return spent


def _queue_rule(run) -> str:
    """The run's ``controller.energy_queue`` (every_round for a run from before the key)."""
    from wirelessfl.results.groups import config_value

    rule = config_value(run, "controller.energy_queue")
    return rule if isinstance(rule, str) else "every_round"


def _replay_queues_j(
    spent: np.ndarray, budget_j: float, rule: str
) -> tuple[np.ndarray, np.ndarray]:
    """(T, N) Z_k^{t+1} [J] replayed from the energy per round ``spent`` (T, N) by (E1)
    (``rule`` every_round), (E1') (at_participation: a queue moves in the rounds its device
    spends, by Ē times the rounds since its last move) or (E1'') (signed: no max), and (N,) the
    budget each device's queue did not bank [J]: the drain its max cut, plus (E1') the drain
    still pending after its last move; 0 under (E1''), which cuts nothing."""
    if rule == "signed":
        return np.cumsum(spent - budget_j, axis=0), np.zeros(spent.shape[1])
    queue_j = np.zeros_like(spent)
    z_j = np.zeros(spent.shape[1])
    lost_j = np.zeros(spent.shape[1])
    idle = np.zeros(spent.shape[1])
    for t in range(len(spent)):
        idle += 1.0
        moves = spent[t] > 0.0 if rule == "at_participation" else np.ones(len(z_j), dtype=bool)
        drain_j = budget_j * idle[moves]
        lost_j[moves] += np.maximum(drain_j - z_j[moves] - spent[t, moves], 0.0)
        z_j[moves] = np.maximum(z_j[moves] + spent[t, moves] - drain_j, 0.0)
        idle[moves] = 0.0
        queue_j[t] = z_j
    return queue_j, lost_j + budget_j * idle


def running_energy_j(run) -> tuple[np.ndarray, np.ndarray]:
    """(T, N) each device's energy per round [J/round] averaged over rounds 0..t, and (T, N)
    its energy queue Z_k^{t+1} [J] replayed by (E1), (E1') or (E1'') (the run's
    ``controller.energy_queue``) from the ``clients`` table: the budget holds up to Z_k^T / T
    (docs/solvers.md, "Energy budgets in the online stage")."""
    from wirelessfl.results.groups import config_value

    spent = _spent_j(run)
    budget_j = float(config_value(run, "controller.energy_budget_j"))
    average_j = np.cumsum(spent, axis=0) / np.arange(1, len(spent) + 1)[:, None]
    return average_j, _replay_queues_j(spent, budget_j, _queue_rule(run))[0]


def device_band_j(run) -> np.ndarray | None:
    """(2, N) each device's E_lo,k (row 0) and E_hi,k (row 1) [J/round] from the run's
    ``meta.json`` (``energy_band_j``), or None for a run without one (not the joint radio)."""
    band = run.meta.get("energy_band_j")
    return None if band is None else np.array([band["low"], band["high"]], dtype=float)


def clipped_target_j(budget_j: float, band_j: np.ndarray) -> np.ndarray:
    """(N,) clip(Ē, E_lo,k, E_hi,k) [J/round]: what each device's time-average energy can
    settle on under the budget ``budget_j`` and D_th, given its band (2, N)."""
    return np.clip(budget_j, band_j[0], band_j[1])


def lost_drain_j(run) -> np.ndarray:
    """(N,) each device's budget its queue could not bank, per round [J/round]. By (E1):
    (1/T) sum_t max(Ē − Z_k^t − E_k^t, 0), the part of a round's drain cut at Z = 0; by (E1')
    (``controller.energy_queue: at_participation``): the same cut at each move, of the drain
    Ē g of the g rounds since the last one, plus Ē times the rounds after the last move; by
    (E1'') (signed): 0. Each way E_k = Ē + Z_k^T / T − this, exactly ((B3), docs/solvers.md)."""
    from wirelessfl.results.groups import config_value

    spent = _spent_j(run)
    budget_j = float(config_value(run, "controller.energy_budget_j"))
    return _replay_queues_j(spent, budget_j, _queue_rule(run))[1] / len(spent)


def budget_table(runs: list) -> pd.DataFrame:
    """One row per run, the columns of ``STUDY_BUDGET_COLUMNS``
    (:mod:`wirelessfl.results.columns`): radio, energy queue rule, budget [J/round], seed, the mean
    |E_k − Ē| / Ē over devices, the devices within 5 % and at or below 1.05 Ē, the mean energy
    [J/round], the mean Z_k^T / T [J/round] (the overspend (E1) still allows), the share of
    rounds that start with a busy delay queue (Q > 0), the last evaluated (surrogate) accuracy
    and the virtual time [s]; with a band (the joint radio), the same against each device's
    clipped target, the devices whose budget lies below and above their band, and the mean
    lost drain (:func:`lost_drain_j`); NaN without one."""
    import pandas as pd

    from wirelessfl.results.groups import config_value

    rows = []
    for run in runs:
        budget_j = float(config_value(run, "controller.energy_budget_j"))
        energy_j = device_energy_j(run).to_numpy()
        gap = abs(energy_j - budget_j) / budget_j
        rows.append(
            {
                "radio": config_value(run, "controller.radio"),
                "energy_queue": _queue_rule(run),
                "budget_j": budget_j,
                "seed": int(config_value(run, "seed")),
                "mean_rel_gap": float(gap.mean()),
                "within_5pct": int((gap <= FOLLOW_RTOL).sum()),
                "at_or_below": int((energy_j <= budget_j * (1 + FOLLOW_RTOL)).sum()),
                "devices": len(energy_j),
                "mean_energy_j": float(energy_j.mean()),
                "queue_gap_j": float(running_energy_j(run)[1][-1].mean() / len(run.rounds)),
                "delay_busy_share": float((run.rounds.queue > 0.0).mean()),
                "accuracy": float(run.rounds.accuracy.dropna().iloc[-1]),
                "virtual_time_s": float(run.rounds.t_end_s.iloc[-1]),
                **_band_columns(run, budget_j, energy_j),
            }
        )
    keys = ["radio", "energy_queue", "budget_j", "seed"]
    return pd.DataFrame(rows).sort_values(keys, ignore_index=True)


def _band_columns(run, budget_j: float, energy_j: np.ndarray) -> dict[str, float]:
    """The columns against each device's clipped target (NaN without a band)."""
    band_j = device_band_j(run)
    if band_j is None:
        names = ("target_rel_gap", "within_5pct_of_target", "below_band", "above_band")
        return {name: math.nan for name in (*names, "lost_drain_j")}
    target_j = clipped_target_j(budget_j, band_j)
    gap = abs(energy_j - target_j) / target_j
    return {
        "target_rel_gap": float(gap.mean()),
        "within_5pct_of_target": int((gap <= FOLLOW_RTOL).sum()),
        "below_band": int((budget_j < band_j[0]).sum()),
        "above_band": int((budget_j > band_j[1]).sum()),
        "lost_drain_j": float(lost_drain_j(run).mean()),
    }


#: how each (radio, energy queue rule) is drawn: marker, colour, legend label
_STYLES = {
    ("joint", "every_round"): ("o", "C0", "joint"),
    ("fixed", "every_round"): ("x", "C1", "fixed"),
    ("joint", "at_participation"): ("s", "C9", "joint, queue at participation"),
    ("fixed", "at_participation"): ("+", "C8", "fixed, queue at participation"),
    ("joint", "signed"): ("D", "C3", "joint, signed queue"),
    ("fixed", "signed"): ("1", "C2", "fixed, signed queue"),
}


def _style(run) -> tuple[str, str, str]:
    from wirelessfl.results.groups import config_value

    return _STYLES[(config_value(run, "controller.radio"), _queue_rule(run))]


def _is_reference_joint(run) -> bool:
    """The joint radio with the queue of (E1): the runs of the convergence and target panels."""
    from wirelessfl.results.groups import config_value

    return config_value(run, "controller.radio") == "joint" and _queue_rule(run) == "every_round"


def draw_budget(out: Path, runs: list) -> list[Path]:
    """``energy_budget.png``: each device's time-average energy against the budget (every seed,
    the diagonal E = Ē dotted), and the surrogate's last accuracy and the virtual time against
    the budget (mean over seeds), one line per radio and queue rule; the joint radio's
    convergence to and distance from its clipped target; with runs of both queue rules, the
    mean |E_k − T_k| / T_k of each against the budget; ``energy_budget.csv``:
    :func:`budget_table`."""
    from matplotlib.figure import Figure

    from wirelessfl.results.groups import config_value

    table = budget_table(runs)
    table.to_csv(out / "energy_budget.csv", index=False)
    rules = set(table.energy_queue)
    fig = Figure(figsize=(18 if len(rules) == 1 else 21.6, 3.4))
    axes = fig.subplots(1, 5 if len(rules) == 1 else 6)
    for run in runs:
        marker, color, _ = _style(run)
        budget_j = float(config_value(run, "controller.energy_budget_j"))
        energy_j = device_energy_j(run).to_numpy()
        axes[0].plot([budget_j] * len(energy_j), energy_j, marker, color=color, alpha=0.4)
    top = float(table.budget_j.max())
    axes[0].plot([0.0, top], [0.0, top], "k:", label="E = budget")
    for (radio, rule), part in table.groupby(["radio", "energy_queue"]):
        mean = part.groupby("budget_j")[["accuracy", "virtual_time_s"]].mean()
        marker, color, label = _STYLES[(radio, rule)]
        axes[0].plot([], [], marker, color=color, label=f"radio: {label}")
        axes[1].plot(mean.index, mean.accuracy, marker + "-", color=color, label=label)
        axes[2].plot(mean.index, mean.virtual_time_s, marker + "-", color=color)
    reference = [run for run in runs if _is_reference_joint(run)]
    _draw_convergence(axes[3], reference)
    _draw_targets(axes[4], reference)
    if len(rules) > 1:
        _draw_queue_rules(axes[5], table)
    labels = (
        "time-average energy per device [J/round]",
        "last accuracy (surrogate)",
        "virtual time [s]",
    )
    for ax, label in zip(axes[:3], labels, strict=True):
        ax.set_xlabel("energy budget [J/round]")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.suptitle("The energy budget with power and clock as decisions (joint) and without (fixed)")
    fig.tight_layout()
    return [save_figure(fig, out / "energy_budget.png")]


def _draw_queue_rules(ax, table: pd.DataFrame) -> None:
    """The joint radio's mean over devices of |E_k − T_k| / T_k against the budget, one line
    per queue rule (mean over seeds, bars: min–max)."""
    for rule, part in table[table.radio == "joint"].groupby("energy_queue"):
        gap = part.groupby("budget_j").target_rel_gap
        mean, low, high = gap.mean(), gap.min(), gap.max()
        marker, color, label = _STYLES[("joint", rule)]
        ax.errorbar(
            mean.index,
            mean,
            yerr=[mean - low, high - mean],
            fmt=marker + "-",
            color=color,
            capsize=3,
            label=label,
        )
    ax.axhline(FOLLOW_RTOL, color="k", linestyle=":")
    ax.set_xlabel("energy budget [J/round]")
    ax.set_ylabel("joint: mean |E_k - T_k| / T_k")
    ax.legend(fontsize=7)


def _draw_targets(ax, runs: list) -> None:
    """Each device's time-average energy against its clipped target clip(Ē, E_lo,k, E_hi,k)
    (runs with a band, one colour per budget; the diagonal dotted, ±5 % shaded)."""
    from wirelessfl.results.groups import config_value

    budgets = sorted({float(config_value(run, "controller.energy_budget_j")) for run in runs})
    top = 0.0
    for run in runs:
        band_j = device_band_j(run)
        if band_j is None:
            continue
        budget_j = float(config_value(run, "controller.energy_budget_j"))
        target_j = clipped_target_j(budget_j, band_j)
        color = f"C{budgets.index(budget_j) + 2}"
        ax.plot(target_j, device_energy_j(run).to_numpy(), "o", color=color, alpha=0.4, ms=3)
        top = max(top, float(target_j.max()), float(device_energy_j(run).max()))
    for i, budget_j in enumerate(budgets):
        ax.plot([], [], "o", color=f"C{i + 2}", label=f"{budget_j:g} J")
    line = np.array([0.0, top])
    ax.plot(line, line, "k:")
    ax.fill_between(line, line * (1 - FOLLOW_RTOL), line * (1 + FOLLOW_RTOL), color="k", alpha=0.1)
    ax.set_xlabel("clipped target clip(budget, E_lo, E_hi) [J/round]")
    ax.set_ylabel("joint: time-average energy [J/round]")
    ax.legend(fontsize=7)


def _draw_convergence(ax, runs: list) -> None:
    """The joint radio's mean over devices and seeds of E_k(T) / Ē against the rounds T, one
    line per budget (1 dotted)."""
    from wirelessfl.results.groups import config_value

    ratios: dict[float, list[np.ndarray]] = {}
    for run in runs:
        if config_value(run, "controller.radio") != "joint":
            continue
        budget_j = float(config_value(run, "controller.energy_budget_j"))
        ratios.setdefault(budget_j, []).append(running_energy_j(run)[0].mean(axis=1) / budget_j)
    for i, (budget_j, curves) in enumerate(sorted(ratios.items())):
        length = min(len(curve) for curve in curves)
        mean = np.mean([curve[:length] for curve in curves], axis=0)
        ax.plot(np.arange(1, length + 1), mean, color=f"C{i + 2}", label=f"{budget_j:g} J")
    ax.axhline(1.0, color="k", linestyle=":")
    ax.set_xlabel("rounds T")
    ax.set_ylabel("joint: mean E_k(T) / budget")
    ax.legend(fontsize=7)
