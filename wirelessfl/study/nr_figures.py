"""The NR gap study's columns, tables and figures (reproductions ``nr-gap``,
``nr-gap-accuracy`` and ``nr-gap-aircomp``; docs/results.md, "A 5G NR uplink: the gap to
Shannon"): the same cell, clients and payloads under Shannon's FDMA uplink and a 5G NR PUSCH.

Importing this module imports neither pandas nor matplotlib.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from wirelessfl.study.figures import (
    accuracy_both_ways,
    save_figure,
    seed_band,
    seed_band_figure,
    seed_means,
)

__all__ = [
    "UPLINK_NAMES",
    "accuracy_tables",
    "draw_aircomp_gap",
    "draw_accuracy_gap",
    "draw_dth_gap",
    "dth_tables",
    "nr_gap_columns",
    "uplink_name",
]

#: the figures' names of the uplinks
UPLINK_NAMES = {"fdma": "FDMA (Shannon)", "nr": "5G NR PUSCH", "aircomp": "AirComp"}


def uplink_name(run: Any) -> str:
    """The figure name of ``run``'s uplink (``UPLINK_NAMES``)."""
    from wirelessfl.results.groups import config_value

    uplink = str(config_value(run, "channel.uplink"))
    return UPLINK_NAMES.get(uplink, uplink)


def nr_gap_columns(run: Any, target: float | None) -> dict[str, float]:
    """``summary.csv``'s NR-gap columns of one run (``STUDY_NR_COLUMNS`` of
    ``wirelessfl.results.columns``): the mean planned D^t, the measured mean over the planned
    mean, whether the time-average D^t met D_th (1 or 0; NaN without a D_th), and the NR
    uplink's mean BLER and MCS (NaN on another uplink)."""
    from wirelessfl.results.groups import config_value

    rounds = run.rounds
    planned = float(rounds.planned_delay_s.mean())
    d_th = config_value(run, "controller.d_th_s")
    d_th = math.nan if d_th is None else float(d_th)
    delay = float(rounds.delay_s.mean())
    return {
        "mean_planned_delay_s": planned,
        "delay_over_plan": delay / planned if planned > 0 else math.nan,
        "meets_d_th": math.nan if math.isnan(d_th) else float(delay <= d_th),
        "mean_nr_bler": float(rounds.nr_bler.mean()) if "nr_bler" in rounds else math.nan,
        "mean_nr_mcs": float(rounds.nr_mean_mcs.mean()) if "nr_mean_mcs" in rounds else math.nan,
    }


def dth_tables(summary) -> dict[str, Any]:
    """``nr-gap``'s ``dth.csv``: per uplink and D_th, the seeds, the share of seeds whose
    time-average D^t met D_th, the mean D^t, planned D^t, their ratio, O^t, rank and
    queue Q^T."""
    columns = {
        "met_share": "meets_d_th",
        "mean_delay_s": "mean_delay_s",
        "mean_planned_delay_s": "mean_planned_delay_s",
        "delay_over_plan": "delay_over_plan",
        "mean_sparsification": "mean_sparsification",
        "rank": "rank",
        "final_queue": "final_queue",
        "mean_nr_bler": "mean_nr_bler",
    }
    return {"dth": seed_means(summary, ["channel.uplink", "controller.d_th_s"], columns)}


def accuracy_tables(summary) -> dict[str, Any]:
    """``nr-gap-accuracy``'s ``by_uplink.csv`` (per sparsifier and uplink: seeds, mean final
    accuracy, time to target, D^t) and ``nr_vs_fdma.csv`` (each sparsifier's NR runs paired
    with its FDMA runs at the same seed: D^t, time to target, final accuracy)."""
    from wirelessfl.study.paired import paired_differences

    keys = ["compression.sparsifier", "channel.uplink"]
    columns = {
        "final_accuracy": "final_accuracy",
        "time_to_target_s": "time_to_target_s",
        "mean_delay_s": "mean_delay_s",
        "mean_nr_bler": "mean_nr_bler",
    }
    paired = paired_differences(
        summary,
        ["channel.uplink"],
        {"channel.uplink": "fdma"},
        metrics=["mean_delay_s", "time_to_target_s", "final_accuracy"],
        context_keys=["compression.sparsifier"],
    )
    return {"by_uplink": seed_means(summary, keys, columns), "nr_vs_fdma": paired}


def draw_dth_gap(out: Path, runs: list) -> list[Path]:
    """``nr_gap_dth.png``: the time-average D^t (left) and the mean O^t (right) against D_th,
    one line per uplink, mean over seeds with min–max shaded; D^t = D_th dotted."""
    import pandas as pd
    from matplotlib.figure import Figure

    from wirelessfl.results.groups import config_value

    points = pd.DataFrame(
        {
            "uplink": uplink_name(run),
            "d_th": float(config_value(run, "controller.d_th_s")),
            "delay_s": float(run.rounds.delay_s.mean()),
            "planned_s": float(run.rounds.planned_delay_s.mean()),
            "ratio": float(run.rounds.sparsification.mean()),
        }
        for run in runs
    )
    fig = Figure(figsize=(9.6, 3.8))
    left, right = fig.subplots(1, 2)
    for name, part in points.groupby("uplink", sort=False):
        colour = seed_band(left, part, "d_th", "delay_s", name)
        seed_band(right, part, "d_th", "ratio", name)
        planned = part.groupby("d_th")["planned_s"].mean()
        left.plot(planned.index, planned, "x--", color=colour, label=f"{name}, planned")
    d_th = sorted(points.d_th.unique())
    left.plot(d_th, d_th, "k:", label="D^t = D_th")
    left.set(xlabel="D_th [s]", ylabel="time-average D^t [s]", xscale="log", yscale="log")
    right.set(xlabel="D_th [s]", ylabel="mean sparsification ratio O^t", xscale="log")
    n_seeds = int(points.groupby(["uplink", "d_th"]).size().max())
    for ax in (left, right):
        ax.set_xticks(d_th, [f"{value:g}" for value in d_th], minor=False)
        ax.set_xticks([], minor=True)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    left.set_yticks(d_th, [f"{value:g}" for value in d_th], minor=False)
    left.set_yticks([], minor=True)
    fig.suptitle(f"SOFT/TSFA under Shannon FDMA and NR: mean over {n_seeds} seeds", fontsize=9)
    fig.tight_layout()
    return [save_figure(fig, out / "nr_gap_dth.png")]


def draw_accuracy_gap(out: Path, runs: list) -> list[Path]:
    """Accuracy against the round and against virtual time per uplink
    (``nr_gap_accuracy_<uplink>.png``, ``..._time.png``)."""
    from wirelessfl.results.groups import config_value

    paths = []
    for uplink in ("fdma", "nr"):
        chosen = [run for run in runs if config_value(run, "channel.uplink") == uplink]
        if chosen:
            title = f"Fig. 3(a)/(b)'s sparsifiers over {UPLINK_NAMES[uplink]}"
            paths += accuracy_both_ways(out, chosen, f"nr_gap_accuracy_{uplink}", title)
    return paths


def draw_aircomp_gap(out: Path, runs: list) -> list[Path]:
    """``nr_gap_aircomp_<B>mhz.png``: the mean D^t against K per uplink at each bandwidth."""
    import pandas as pd

    from wirelessfl.results.groups import config_value

    points = pd.DataFrame(
        {
            "uplink": uplink_name(run),
            "x": int(config_value(run, "n_scheduled")),
            "bandwidth_mhz": float(config_value(run, "channel.bandwidth_hz")) / 1e6,
            "delay_s": float(run.rounds.delay_s.mean()),
        }
        for run in runs
    )
    paths = []
    for mhz, part in points.groupby("bandwidth_mhz"):
        fig = seed_band_figure(
            part,
            line="uplink",
            value="delay_s",
            xlabel="scheduled clients K",
            ylabel="mean upload time per round D^t [s]",
            title=f"AirComp, Shannon FDMA and NR at {mhz:g} MHz",
        )
        paths.append(save_figure(fig, out / f"nr_gap_aircomp_{mhz:g}mhz.png"))
    return paths
