"""Reproduction figures: accuracy both ways (every reproduction), and the ``fslora-*`` figures
(the compute ordering of the heterogeneous-rank algorithms).

Runs that differ only in seed are one group (mean over seeds, min–max shaded), as in every
accuracy figure of :mod:`wirelessfl.plots`. Importing this module imports neither pandas nor
matplotlib (the CLI registers ``reproduce`` cheaply).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "accuracy_both_ways",
    "compute_table",
    "draw_hetero",
    "draw_ratios",
    "evaluations",
    "save_figure",
    "seed_band",
    "seed_means",
    "seed_band_figure",
]


def seed_means(summary: pd.DataFrame, keys: list[str], columns: dict[str, str]) -> pd.DataFrame:
    """One row per value of ``keys`` in ``summary`` (a study's table, one row per run; a key
    it lacks is left out, a key a sweep left at its default is empty): the seeds and the mean
    of each of ``columns`` (name -> summary column) over them."""
    keys = [k for k in keys if k in summary]
    grouped = summary.groupby(keys, sort=True, dropna=False)
    table = grouped.size().rename("seeds").to_frame()
    for name, column in columns.items():
        table[name] = grouped[column].mean()
    return table.reset_index()


def save_figure(fig, path: Path) -> Path:
    """``fig`` written to ``path`` (120 dpi, tight); returns ``path``."""
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def seed_band(ax, part: pd.DataFrame, x: str, value: str, label: str) -> str:
    """Draw on ``ax`` the mean of ``value`` over the rows of ``part`` at each ``x`` (one row per
    run: the seeds), its min–max shaded; returns the line's colour."""
    stats = part.groupby(x)[value].agg(["mean", "min", "max"])
    (drawn,) = ax.plot(stats.index, stats["mean"], "o-", label=label)
    ax.fill_between(stats.index, stats["min"], stats["max"], color=drawn.get_color(), alpha=0.2)
    return drawn.get_color()


def seed_band_figure(
    points: pd.DataFrame, *, line: str, value: str, xlabel: str, ylabel: str, title: str
):
    """A matplotlib Figure of ``points`` (one row per run: columns ``line``, ``x`` and
    ``value``): one line per ``line`` value, the mean over seeds against x with min–max shaded,
    ``value`` on a log scale; the title gains the number of seeds."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.subplots()
    for name, part in points.groupby(line, sort=False):
        seed_band(ax, part, "x", value, name)
    n_seeds = int(points.groupby([line, "x"]).size().max())
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title(f"{title}: mean over {n_seeds} seeds, min–max shaded", fontsize=9)
    fig.tight_layout()
    return fig


def evaluations(run, required: str = "accuracy") -> pd.DataFrame:
    """``run``'s evaluated rounds (:func:`~wirelessfl.results.tables.evaluated_rounds`):
    ``round``, ``rounds_done`` (round + 1), ``t_end_s``, ``accuracy`` and ``test_loss``, on
    the rounds where ``required`` was measured, led by the evaluation before round 0 where the
    run has one, so a curve starts where training starts."""
    from wirelessfl.results.tables import evaluated_rounds

    other = "test_loss" if required == "accuracy" else "accuracy"
    rows = evaluated_rounds(run, (required, other))
    rows.insert(1, "rounds_done", rows["round"] + 1)
    return rows


def accuracy_both_ways(out: Path, runs: list, stem: str, title: str) -> list[Path]:
    """Accuracy against the round (``stem.png``) and against virtual time (``stem_time.png``)."""
    from wirelessfl.plots import accuracy_vs_round, accuracy_vs_time

    by_round = accuracy_vs_round(runs, title=title)
    by_time = accuracy_vs_time(runs, title=f"{title} (latency–accuracy)")
    return [
        save_figure(by_round, out / f"{stem}.png"),
        save_figure(by_time, out / f"{stem}_time.png"),
    ]


def compute_table(runs: list) -> pd.DataFrame:
    """One row per run: algorithm, seed and what its training cost.

    Columns: ``device_flops`` (sum over arrived and straggling clients of compute_s times the
    client's FLOP/s; ``devices.kind: fixed`` gives every client ``devices.flops_per_s``),
    ``server_flops`` (the algorithm's ``algo.server_flops`` column summed, 0 without one),
    ``wall_s`` (measured seconds of the run: local training, aggregation and simulation) and
    ``bits_up``/``bits_down`` (uplink and downlink payload summed over the run).
    """
    import pandas as pd

    from wirelessfl.results.groups import config_value

    rows = []
    for run in runs:
        clients, rounds = run.clients, run.rounds
        speed = float(config_value(run, "devices.flops_per_s"))
        server = rounds["algo.server_flops"].sum() if "algo.server_flops" in rounds else 0.0
        rows.append(
            {
                "algorithm": config_value(run, "algorithm.name"),
                "seed": int(config_value(run, "seed")),
                "device_flops": float(clients.compute_s.sum()) * speed,
                "server_flops": float(server),
                "wall_s": float(rounds.wall_s.sum()),
                "bits_up": float(clients.bits.sum()),
                "bits_down": float(clients.bits_down.sum()),
            }
        )
    return pd.DataFrame(rows)


def _compute_bars(out: Path, runs: list) -> Path:
    """Device and server FLOPs per algorithm (mean over seeds, min–max bars).

    FLOPs, not wall time: they follow the runtime's FLOP model and do not change with the load
    of the machine the study ran on (``compute_table`` has the measured wall time too).
    """
    from matplotlib.figure import Figure

    stats = compute_table(runs).groupby("algorithm")[["device_flops", "server_flops"]]
    mean, low, high = stats.mean(), stats.min(), stats.max()
    fig = Figure(figsize=(9, 3.2))
    for ax, column, label in zip(
        fig.subplots(1, 2),
        ("device_flops", "server_flops"),
        ("FLOPs of the clients' local training", "FLOPs of the server's aggregation"),
        strict=True,
    ):
        errors = [mean[column] - low[column], high[column] - mean[column]]
        ax.bar(mean.index, mean[column], yerr=errors, capsize=3, color="0.6")
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle("Compute per algorithm (Table 5.1's GPU-hours column, at offline scale)")
    fig.tight_layout()
    return save_figure(fig, out / "fslora_compute.png")


def draw_hetero(out: Path, runs: list) -> list[Path]:
    """FSLoRA against HetLoRA, FlexLoRA and FedStack at the same heterogeneous ratios."""
    title = "FSLoRA vs heterogeneous-rank baselines"
    return [*accuracy_both_ways(out, runs, "fslora_hetero", title), _compute_bars(out, runs)]


def draw_ratios(out: Path, runs: list) -> list[Path]:
    """FSLoRA at fixed sketching ratios, and with the wireless sketch controller."""
    return accuracy_both_ways(
        out, runs, "fslora_ratios", "FSLoRA: fixed sketching ratios vs controller"
    )
