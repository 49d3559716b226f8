"""The many-cell reproductions' columns, tables and figures (``cells-*``, docs/results.md,
"Many cells: interference and hierarchies")."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from wirelessfl.study.figures import save_figure, seed_band, seed_means

__all__ = [
    "EDGE_FRACTION",
    "cells_columns",
    "draw_hierarchy",
    "draw_interference",
    "hierarchy_tables",
    "interference_tables",
]

#: the cell-edge clients: this fraction of the clients, of highest coupling loss to their site
EDGE_FRACTION = 0.2


def _edge_clients(run: Any) -> np.ndarray:
    """The run's cell-edge clients (ids), from its layout (rebuilt from its config)."""
    from wirelessfl.config import scenario_from_dict
    from wirelessfl.config.cells import network_layout

    layout = network_layout(scenario_from_dict(run.config))
    loss = -10.0 * np.log10(layout.serving_gain)
    n_edge = max(1, int(round(EDGE_FRACTION * loss.size)))
    return np.argsort(loss)[-n_edge:]


def _to_target(run: Any, target: float | None) -> tuple[float, float]:
    """(cloud rounds, edge rounds) up to the first evaluation at ``target``; NaN if never."""
    rounds = run.rounds
    if target is None:
        return math.nan, math.nan
    hit = np.flatnonzero(rounds.accuracy.to_numpy() >= target)
    if hit.size == 0:
        return math.nan, math.nan
    first = int(hit[0])
    return float(rounds.cloud_round.iloc[: first + 1].sum()), float(first + 1)


def cells_columns(run: Any, target: float | None) -> dict[str, float]:
    """``summary.csv``'s many-cell columns of one run (``STUDY_CELLS_COLUMNS`` of
    ``wirelessfl.results.columns``)."""
    from wirelessfl.results.groups import config_value

    cells, clients = run.cells, run.clients
    by_cell = cells.groupby("cell")
    d_th = config_value(run, "controller.d_th_s")
    met = math.nan if d_th is None else float((by_cell.delay_s.mean() <= float(d_th)).mean())
    sent = clients[clients.status == "arrived"]
    edge = sent[sent.client.isin(_edge_clients(run))]
    cloud_rounds, edge_rounds = _to_target(run, target)
    return {
        "mean_cell_delay_s": float(cells.delay_s.mean()),
        "mean_cell_planned_s": float(cells.planned_delay_s.mean()),
        "mean_cell_queue": float(by_cell.queue_after.last().mean()),
        "cells_meeting_d_th": met,
        "mean_sinr_db": float(sent.sinr_db.mean()),
        "edge_sinr_db": float(edge.sinr_db.mean()),
        "edge_upload_s": float(edge.upload_s.mean()),
        "cloud_rounds_to_target": cloud_rounds,
        "edge_rounds_to_target": edge_rounds,
    }


def interference_tables(summary) -> dict[str, Any]:
    """``cells-interference``'s ``by_model.csv`` (per interference model and controller view,
    the seeds and the means of the cells' D^t, planned D^t, Q^T, share of cells meeting D_th,
    the SINR and the cell-edge clients' SINR and upload time) and ``views_vs_snr.csv`` (the
    controllers planning on last round's or the expected interference paired with those
    planning on the SNR, at each reuse and seed)."""
    keys = ["cells.interference", "cells.reuse", "cells.controller_sees"]
    columns = [
        "mean_cell_delay_s",
        "mean_cell_planned_s",
        "mean_cell_queue",
        "cells_meeting_d_th",
        "mean_sinr_db",
        "edge_sinr_db",
        "edge_upload_s",
        "mean_sparsification",
        "rank",
    ]
    from wirelessfl.study.paired import paired_differences

    interfered = summary[summary["cells.controller_sees"].notna()]
    views = paired_differences(
        interfered,
        ["cells.controller_sees"],
        {"cells.controller_sees": "snr"},
        metrics=["mean_cell_delay_s", "mean_cell_queue", "edge_upload_s"],
        context_keys=["cells.reuse"],
    )
    return {"by_model": seed_means(summary, keys, {c: c for c in columns}), "views_vs_snr": views}


def hierarchy_tables(summary) -> dict[str, Any]:
    """``cells-hierfavg``'s ``by_tau.csv``: per backhaul and tau, the seeds and the means of the
    final accuracy, time, cloud and edge rounds to the target."""
    keys = ["server.hierarchy.backhaul_latency_s", "server.hierarchy.edge_rounds"]
    columns = [
        "final_accuracy",
        "time_to_target_s",
        "cloud_rounds_to_target",
        "edge_rounds_to_target",
        "virtual_time_s",
    ]
    present = [c for c in columns if c in summary]
    return {"by_tau": seed_means(summary, keys, {c: c for c in present})}


def _model_name(run: Any) -> str:
    from wirelessfl.results.groups import config_value

    if not config_value(run, "cells.interference"):
        return "no interference"
    view = config_value(run, "cells.controller_sees")
    return f"reuse {config_value(run, 'cells.reuse')}, plans on {view}"


def draw_interference(out: Path, runs: list) -> list[Path]:
    """``cells_interference.png``: per interference model, each cell's time-average D^t
    against its planned D^t (left) and the SINR of the cell-edge clients' uploads against all
    (right), mean over seeds with min–max shaded."""
    import pandas as pd
    from matplotlib.figure import Figure

    rows = []
    for run in runs:
        c = cells_columns(run, None)
        rows.append({"model": _model_name(run), **c})
    points = pd.DataFrame(rows)
    fig = Figure(figsize=(10.0, 3.8))
    left, right = fig.subplots(1, 2)
    names = list(dict.fromkeys(points.model))
    x = np.arange(len(names))
    for ax, pairs in (
        (left, (("mean_cell_delay_s", "measured D^t"), ("mean_cell_planned_s", "planned"))),
        (right, (("mean_sinr_db", "all uploads"), ("edge_sinr_db", "cell-edge fifth"))),
    ):
        for column, label in pairs:
            stats = points.groupby("model")[column].agg(["mean", "min", "max"]).loc[names]
            err = [stats["mean"] - stats["min"], stats["max"] - stats["mean"]]
            ax.errorbar(x, stats["mean"], yerr=err, fmt="o", capsize=3, label=label)
        ax.set_xticks(x, names, rotation=20, fontsize=7, ha="right")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    left.set(ylabel="per-cell time-average D^t [s]", yscale="log")
    right.set(ylabel="mean upload SINR [dB]")
    n_seeds = int(points.groupby("model").size().max())
    fig.suptitle(
        f"7 cells x 20 clients, SOFT/TSFA per cell: mean over {n_seeds} seeds, min-max bars",
        fontsize=9,
    )
    fig.tight_layout()
    return [save_figure(fig, out / "cells_interference.png")]


def draw_hierarchy(out: Path, runs: list) -> list[Path]:
    """``cells_hierfavg.png``: the cloud model's accuracy against virtual time, one line per
    tau (mean over seeds at each evaluated round, min–max shaded), one panel per backhaul."""
    import pandas as pd
    from matplotlib.figure import Figure

    from wirelessfl.results.groups import config_value

    rows = []
    for run in runs:
        evaluated = run.rounds[run.rounds.accuracy.notna()]
        tau = int(config_value(run, "server.hierarchy.edge_rounds"))
        latency = float(config_value(run, "server.hierarchy.backhaul_latency_s"))
        for t, acc in zip(evaluated["round"], evaluated.accuracy, strict=True):
            rows.append(
                {
                    "latency": latency,
                    "tau": f"tau = {tau}",
                    "round": t,
                    "acc": acc,
                    "time": float(run.rounds.t_end_s.iloc[t]),
                }
            )
    points = pd.DataFrame(rows)
    latencies = sorted(points.latency.unique())
    fig = Figure(figsize=(5.0 * len(latencies), 3.8))
    axes = np.atleast_1d(fig.subplots(1, len(latencies)))
    for ax, latency in zip(axes, latencies, strict=True):
        part = points[points.latency == latency]
        for name, line in part.groupby("tau", sort=False):
            by_round = line.groupby("round").agg(time=("time", "mean")).reset_index()
            merged = line.merge(by_round, on="round", suffixes=("_run", ""))
            seed_band(ax, merged, "time", "acc", name)
        ax.set(
            xlabel="virtual time [s] (mean over seeds)",
            ylabel="cloud model accuracy",
            title=f"backhaul latency {latency:g} s each way",
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return [save_figure(fig, out / "cells_hierfavg.png")]
