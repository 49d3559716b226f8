"""The ns-3 gap study's columns, tables and figures (reproductions ``ns3-gap``,
``ns3-gap-wifi`` and ``ns3-gap-training``; docs/results.md, "Packets against formulas: the gap
to ns-3"): the same cell, clients and payloads under the analytic uplinks (Shannon's FDMA, a
5G NR PUSCH) and packets in ns-3 (LTE with EPC, or 802.11ax).

Each client's upload under an uplink is paired with its upload under FDMA in the run at the
same seed, K and payload: the same round, the same client (the scheduled clients do not
depend on the uplink). Importing this module imports neither pandas nor matplotlib.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from wirelessfl.study.figures import save_figure, seed_means
from wirelessfl.study.nr_figures import UPLINK_NAMES as NR_UPLINK_NAMES

__all__ = [
    "client_ratio_tables",
    "draw_training_gap",
    "draw_upload_gap",
    "ns3_gap_columns",
    "training_tables",
    "upload_tables",
]

#: the figures' names of the uplinks: the NR study's and the ns-3 cells'
UPLINK_NAMES = {**NR_UPLINK_NAMES, "ns3_lte": "ns-3 LTE (TCP)", "ns3_wifi": "ns-3 802.11ax (TCP)"}
#: the payload of a client [MB] per rank of the study's one 12,500 x 12,500 layer, dense
#: (r (12,500 + 12,500) values of 32 bits: 0.1 MB per rank)
MB_PER_RANK = 0.1
#: the quantiles of the per-client ratios in ``ratio_quantiles.csv``
QUANTILES = {"p10": 0.1, "median": 0.5, "p90": 0.9}


def ns3_gap_columns(run: Any, target: float | None) -> dict[str, float]:
    """``summary.csv``'s ns-3-gap columns of one run: the mean planned D^t, the measured mean
    over the planned mean, whether the time-average D^t met D_th (1 or 0; NaN without a
    D_th, as the fixed controller's runs here), the mean payload a client [MB], and the mean
    TCP retransmissions and MAC MCS a client and round (NaN off ns-3, or where ns-3 reports
    none)."""
    from wirelessfl.results.groups import config_value

    rounds, clients = run.rounds, run.clients
    planned = float(rounds.planned_delay_s.mean())
    delay = float(rounds.delay_s.mean())
    d_th = config_value(run, "controller.d_th_s")
    controller = config_value(run, "controller.name")
    met = math.nan if d_th is None or controller == "fixed" else float(delay <= float(d_th))

    def mean_of(column: str) -> float:
        if clients is None or column not in clients:
            return math.nan
        return float(clients[column].mean())

    return {
        "mean_planned_delay_s": planned,
        "delay_over_plan": delay / planned if planned > 0 else math.nan,
        "meets_d_th": met,
        "payload_mb": mean_of("bits") / 8e6,
        "mean_ns3_retransmissions": mean_of("ns3_retransmissions"),
        "mean_ns3_mcs": mean_of("ns3_mean_mcs"),
    }


def _client_rows(runs: list):
    """One row per client upload of every run: uplink, K, payload [MB], seed, round, client,
    its SNR [dB] and upload time [s], and its ns-3 columns where it has them."""
    import pandas as pd

    from wirelessfl.results.groups import config_value

    parts = []
    for run in runs:
        clients = run.clients
        if clients is None or clients.empty:
            continue
        keep = [
            c for c in ("round", "client", "snr_db", "upload_s", "status", "bits") if c in clients
        ]
        keep += [c for c in ("ns3_retransmissions", "ns3_mean_mcs") if c in clients]
        part = clients[keep].copy()
        part["uplink"] = str(config_value(run, "channel.uplink"))
        part["n_scheduled"] = int(config_value(run, "n_scheduled"))
        part["seed"] = int(config_value(run, "seed"))
        part["payload_mb"] = part.pop("bits") / 8e6
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def client_ratio_tables(runs: list) -> dict[str, Any]:
    """``client_ratios.csv``: every client upload of a non-FDMA run beside the same client's
    FDMA upload (same seed, K, payload, round), and their ratio; ``ratio_quantiles.csv``: per
    uplink, K and payload, the uploads paired, the quantiles of the ratio (``QUANTILES``), its
    least and largest value and the share of uploads the analytic FDMA upload was shorter
    than (``fdma_optimistic``: ratio above 1). An upload that never arrived has an infinite
    ratio; the quantiles count it."""
    import numpy as np

    rows = _client_rows(runs)
    if rows.empty:
        return {}
    keys = ["n_scheduled", "payload_mb", "seed", "round", "client"]
    fdma = rows[rows.uplink == "fdma"].set_index(keys)["upload_s"].rename("fdma_upload_s")
    others = rows[rows.uplink != "fdma"].join(fdma, on=keys, how="inner")
    others["ratio"] = others.upload_s / others.fdma_upload_s
    grouped = others.groupby(["uplink", "n_scheduled", "payload_mb"], sort=True)
    table = grouped.size().rename("uploads").to_frame()
    for name, q in QUANTILES.items():
        table[name] = grouped["ratio"].quantile(q)
    table["min"] = grouped["ratio"].min()
    table["max"] = grouped["ratio"].max()
    table["fdma_optimistic"] = grouped["ratio"].apply(lambda r: float(np.mean(r > 1.0)))
    table["mean_upload_s"] = grouped["upload_s"].mean()
    table["mean_fdma_upload_s"] = grouped["fdma_upload_s"].mean()
    return {"client_ratios": others.reset_index(drop=True), "ratio_quantiles": table.reset_index()}


def upload_tables(summary) -> dict[str, Any]:
    """``by_uplink.csv``: per uplink, K and payload, the seeds and the means over them of the
    round's upload time D^t, the plan, their ratio and ns-3's retransmissions and MCS."""
    columns = {
        "mean_delay_s": "mean_delay_s",
        "mean_planned_delay_s": "mean_planned_delay_s",
        "delay_over_plan": "delay_over_plan",
        "mean_ns3_retransmissions": "mean_ns3_retransmissions",
        "mean_ns3_mcs": "mean_ns3_mcs",
    }
    keys = ["channel.uplink", "n_scheduled", "payload_mb"]
    return {"by_uplink": seed_means(summary, keys, columns)}


def draw_upload_gap(out: Path, runs: list) -> list[Path]:
    """``ns3_gap_ratios_<cell>.png``: per K (a panel each), the per-client ratio of each
    uplink's upload to FDMA's against the payload (median, 10th to 90th percentile shaded;
    ratio 1 dotted), log-log; ``<cell>`` is the ns-3 uplink's name."""
    from matplotlib.figure import Figure

    tables = client_ratio_tables(runs)
    if not tables:
        return []
    quantiles = tables["ratio_quantiles"]
    ks = sorted(quantiles.n_scheduled.unique())
    fig = Figure(figsize=(3.4 * len(ks), 3.6))
    axes = fig.subplots(1, len(ks), sharey=True, squeeze=False)[0]
    for ax, k in zip(axes, ks, strict=True):
        for uplink, part in quantiles[quantiles.n_scheduled == k].groupby("uplink", sort=True):
            part = part.sort_values("payload_mb")
            (line,) = ax.plot(part.payload_mb, part["median"], "o-", label=UPLINK_NAMES[uplink])
            ax.fill_between(part.payload_mb, part.p10, part.p90, color=line.get_color(), alpha=0.2)
        ax.axhline(1.0, color="k", ls=":", lw=1)
        ax.set(xscale="log", yscale="log", xlabel="payload a client [MB]", title=f"K = {k}")
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("upload time / FDMA's, per client")
    axes[-1].legend(fontsize=7, loc="upper right")
    cell = "wifi" if "ns3_wifi" in set(quantiles.uplink) else "lte"
    seeds = int(tables["client_ratios"].seed.nunique())
    fig.suptitle(
        f"Each client's upload against Shannon FDMA's ({seeds} seeds; median, 10th-90th pct.)",
        fontsize=9,
    )
    fig.tight_layout()
    return [save_figure(fig, out / f"ns3_gap_ratios_{cell}.png")]


def training_tables(summary) -> dict[str, Any]:
    """``ns3-gap-training``'s ``dth.csv``: per uplink, the seeds, the share of seeds whose
    time-average D^t met D_th, the mean D^t and plan, their ratio, O^t, the final queue and
    accuracy."""
    columns = {
        "met_share": "meets_d_th",
        "mean_delay_s": "mean_delay_s",
        "mean_planned_delay_s": "mean_planned_delay_s",
        "delay_over_plan": "delay_over_plan",
        "mean_sparsification": "mean_sparsification",
        "final_queue": "final_queue",
        "final_accuracy": "final_accuracy",
    }
    return {"dth": seed_means(summary, ["channel.uplink"], columns)}


def draw_training_gap(out: Path, runs: list) -> list[Path]:
    """``ns3_gap_training.png``: per round, the measured D^t (solid) and the plan (dashed) of
    each uplink, mean over seeds with min–max shaded, D_th dotted (left), and O^t (right)."""
    import pandas as pd
    from matplotlib.figure import Figure

    from wirelessfl.results.groups import config_value

    parts = []
    for run in runs:
        part = run.rounds[["round", "delay_s", "planned_delay_s", "sparsification"]].copy()
        uplink = str(config_value(run, "channel.uplink"))
        part["uplink"] = UPLINK_NAMES.get(uplink, uplink)
        parts.append(part)
    points = pd.concat(parts, ignore_index=True)
    d_th = float(config_value(runs[0], "controller.d_th_s"))
    fig = Figure(figsize=(9.6, 3.8))
    left, right = fig.subplots(1, 2)
    for name, part in points.groupby("uplink", sort=False):
        stats = part.drop(columns="uplink").groupby("round").agg(["mean", "min", "max"])
        (line,) = left.plot(stats.index, stats.delay_s["mean"], "-", label=f"{name}, measured")
        colour = line.get_color()
        left.fill_between(
            stats.index, stats.delay_s["min"], stats.delay_s["max"], color=colour, alpha=0.2
        )
        left.plot(
            stats.index, stats.planned_delay_s["mean"], "--", color=colour, label=f"{name}, planned"
        )
        right.plot(stats.index, stats.sparsification["mean"], "-", color=colour, label=name)
        right.fill_between(
            stats.index,
            stats.sparsification["min"],
            stats.sparsification["max"],
            color=colour,
            alpha=0.2,
        )
    left.axhline(d_th, color="k", ls=":", label="D_th")
    left.set(xlabel="round", ylabel="upload time D^t [s]", yscale="log")
    right.set(xlabel="round", ylabel="sparsification ratio O^t")
    for ax in (left, right):
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    n_seeds = int(len(runs) / max(points.uplink.nunique(), 1))
    fig.suptitle(f"SOFT/TSFA planning with Shannon FDMA: mean over {n_seeds} seeds", fontsize=9)
    fig.tight_layout()
    return [save_figure(fig, out / "ns3_gap_training.png")]
