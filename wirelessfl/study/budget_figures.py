"""The energy-budget study's table and figures (reproduction ``energy-budget-joint``,
docs/results.md, "The energy budget with power and clock as decisions").

Each device's time-average energy per round is its compute + transmit energy summed over the
run's ``clients`` table, divided by the rounds [J/round]; a device follows the budget Ē when
|E_k − Ē| / Ē ≤ 5 %.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wirelessfl.study.figures import save_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["budget_table", "device_energy_j", "draw_budget", "running_energy_j"]

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


def running_energy_j(run) -> np.ndarray:
    """(T, N) each device's energy per round [J/round] averaged over rounds 0..t, and (T, N)
    its energy queue Z_k^{t+1} [J] replayed by (E1) from the ``clients`` table: the budget
    holds up to Z_k^T / T (docs/solvers.md, "Energy budgets in the online stage")."""
    from wirelessfl.results.groups import config_value

    c = run.clients
    n_rounds, n_clients = len(run.rounds), int(config_value(run, "n_clients"))
    budget_j = float(config_value(run, "controller.energy_budget_j"))
    spent = np.zeros((n_rounds, n_clients))
    np.add.at(
        spent,
        (c["round"].to_numpy(), c.client.to_numpy()),
        c.compute_energy_j + c.transmit_energy_j,
    )
    queue_j = np.zeros_like(spent)
    z_j = np.zeros(n_clients)
    for t in range(n_rounds):
        z_j = np.maximum(z_j + spent[t] - budget_j, 0.0)
        queue_j[t] = z_j
    average_j = np.cumsum(spent, axis=0) / np.arange(1, n_rounds + 1)[:, None]
    return average_j, queue_j


def budget_table(runs: list) -> pd.DataFrame:
    """One row per run: radio, budget [J/round], seed, the mean |E_k − Ē| / Ē over devices,
    the devices within 5 % and at or below 1.05 Ē, the mean energy [J/round], the mean
    Z_k^T / T [J/round] (the overspend (E1) still allows), the share of rounds that start with
    a busy delay queue (Q > 0), the last evaluated (surrogate) accuracy and the virtual time
    [s]."""
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
            }
        )
    return pd.DataFrame(rows).sort_values(["radio", "budget_j", "seed"], ignore_index=True)


def draw_budget(out: Path, runs: list) -> list[Path]:
    """``energy_budget.png``: each device's time-average energy against the budget (every seed,
    the diagonal E = Ē dotted), and the surrogate's last accuracy and the virtual time against
    the budget (mean over seeds), one line per radio; ``energy_budget.csv``:
    :func:`budget_table`."""
    from matplotlib.figure import Figure

    from wirelessfl.results.groups import config_value

    table = budget_table(runs)
    table.to_csv(out / "energy_budget.csv", index=False)
    fig = Figure(figsize=(14.5, 3.4))
    axes = fig.subplots(1, 4)
    markers = {"joint": "o", "fixed": "x"}
    for run in runs:
        radio = config_value(run, "controller.radio")
        budget_j = float(config_value(run, "controller.energy_budget_j"))
        energy_j = device_energy_j(run).to_numpy()
        color = "C0" if radio == "joint" else "C1"
        axes[0].plot([budget_j] * len(energy_j), energy_j, markers[radio], color=color, alpha=0.4)
    top = float(table.budget_j.max())
    axes[0].plot([0.0, top], [0.0, top], "k:", label="E = budget")
    for radio, part in table.groupby("radio"):
        mean = part.groupby("budget_j")[["accuracy", "virtual_time_s"]].mean()
        color = "C0" if radio == "joint" else "C1"
        axes[0].plot([], [], markers[radio], color=color, label=f"radio: {radio}")
        axes[1].plot(mean.index, mean.accuracy, markers[radio] + "-", color=color, label=radio)
        axes[2].plot(mean.index, mean.virtual_time_s, markers[radio] + "-", color=color)
    _draw_convergence(axes[3], runs)
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
