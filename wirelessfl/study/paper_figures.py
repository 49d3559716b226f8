"""Figures of the SOFT/TSFA paper's reproductions (``fig3ab*``, ``fig3c``, ``fig45``, ``dpp``).

Importing this module imports neither pandas nor matplotlib (the CLI registers ``reproduce``
cheaply): each drawing imports them when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from wirelessfl.study.figures import accuracy_both_ways, save_figure, seed_band

__all__ = ["draw_dpp", "draw_fig3c", "draw_fig45", "outage_label", "sparsifier_panels"]


def sparsifier_panels(tag: str = "") -> Callable[[Path, list], list[Path]]:
    """Fig. 3(a)/(b): one panel per rank, and per O when the sweep varies it; files
    ``fig3<a|b><tag>_rank<r>[_O<O>]``."""

    def draw(out: Path, runs: list) -> list[Path]:
        from wirelessfl.results.groups import config_value

        paths = []
        ratios = sorted({float(config_value(r, "controller.sparsification")) for r in runs})
        for panel, rank in (("a", 4), ("b", 8)):
            for ratio in ratios:
                chosen = [
                    r
                    for r in runs
                    if config_value(r, "controller.rank") == rank
                    and (
                        config_value(r, "compression.sparsifier") == "none"
                        or float(config_value(r, "controller.sparsification")) == ratio
                    )
                ]
                if not chosen:
                    continue
                suffix = "" if len(ratios) == 1 else f"_O{ratio:g}"
                label = f" ({tag.strip('_').replace('_', ' ')} head)" if tag else ""
                title = f"Fig. 3({panel}){label}: sparsifiers at r = {rank}, O = {ratio:g}"
                paths += accuracy_both_ways(
                    out, chosen, f"fig3{panel}{tag}_rank{rank}{suffix}", title
                )
        return paths

    return draw


def draw_fig3c(out: Path, runs: list) -> list[Path]:
    return accuracy_both_ways(out, runs, "fig3c", "Fig. 3(c): TSFA vs OSFA")


def draw_fig45(out: Path, runs: list) -> list[Path]:
    from wirelessfl.plots import cov_norm

    fig4 = cov_norm(runs)
    fig4.axes[0].set_title("Fig. 4: ||Cov(theta_B, theta_A)||_F vs shards")
    paths = [save_figure(fig4, out / "fig4_cov.png")]
    return paths + accuracy_both_ways(out, runs, "fig5_accuracy", "Fig. 5: accuracy vs shards")


def outage_label(threshold_db: float | None) -> str:
    if threshold_db is None:
        return "no outage cut-off"
    return f"outage below {threshold_db:g} dB"


def draw_dpp(out: Path, runs: list) -> list[Path]:
    """Time-average delay, bound and queue against V: one line per outage setting, the mean
    over seeds (min–max shaded)."""
    import pandas as pd
    from matplotlib.figure import Figure

    from wirelessfl.results.groups import config_value

    rows = pd.DataFrame(
        {
            "V": float(config_value(r, "controller.V")),
            "case": outage_label(config_value(r, "faults.outage_snr_db")),
            "delay": float(r.rounds.delay_s.mean()),
            "bound": float(r.rounds.bound.mean()),
            "queue": float(r.rounds.queue_after.mean()),
        }
        for r in runs
    )
    fig = Figure(figsize=(11, 3.2))
    axes = fig.subplots(1, 3)
    panels = (
        ("delay", "time-average D^t [s]"),
        ("bound", "time-average bound gamma^t"),
        ("queue", "time-average Q^t"),
    )
    for label, part in rows.groupby("case", sort=True):
        for ax, (column, _) in zip(axes, panels, strict=True):
            seed_band(ax, part, "V", column, label)
    for ax, (column, ylabel) in zip(axes, panels, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("linear" if column == "delay" else "log")
        ax.set_xlabel("V")
        ax.set_ylabel(ylabel)
    axes[0].axhline(
        float(config_value(runs[0], "controller.d_th_s")), color="k", ls=":", label="D_th"
    )
    axes[0].legend(fontsize=7)
    fig.suptitle(
        "Drift-plus-penalty with and without an outage cut-off: time-average delay, "
        "bound and queue against V (mean over seeds, min–max shaded)"
    )
    fig.tight_layout()
    return [save_figure(fig, out / "dpp_tradeoff.png")]
