"""A network round's row of ``rounds.csv`` from its cells' rows, and the rows of ``cells.csv``
(docs/results.md, "Run folders"; docs/simulator.md, "Many cells")."""

from __future__ import annotations

import math

import numpy as np

from wirelessfl.results.columns import ROUND_COLUMNS

__all__ = ["CELL_COLUMNS", "NETWORK_ROUND_COLUMNS", "cell_row", "network_record"]

#: the columns a network adds to rounds.csv
NETWORK_ROUND_COLUMNS: dict[str, str] = {
    "n_cells": "cells (edge servers) in the network",
    "cloud_round": "1 when the cloud averaged the edge models after this edge round, else 0",
    "backhaul_s": "virtual time of the edge-cloud exchange after this round (0 without one)",
    "mean_sinr_db": "mean SINR of the round's uploads over all cells [dB]",
}

#: cells.csv: one row per cell and edge round
CELL_COLUMNS: dict[str, str] = {
    "round": "edge round index t",
    "cell": "the cell (its site's index in the grid's spiral order)",
    "t_start_s": "virtual time of the cell's broadcast",
    "t_end_s": "virtual time of the cell's aggregation (before a cloud exchange)",
    "delay_s": "the cell's D^t",
    "planned_delay_s": "the D^t the cell's controller planned (on the interference-free SNR)",
    "queue": "the cell's virtual queue Q^t before the round",
    "queue_after": "the cell's Q^{t+1}",
    "n_scheduled": "clients the cell scheduled",
    "n_arrived": "uploads the cell aggregated",
    "bits_up": "bits the cell's arrived clients delivered",
    "mean_snr_db": "mean SNR of the cell's scheduled clients [dB]",
    "mean_sinr_db": "mean SINR of the cell's uploads [dB]; NaN when none uploaded",
    "loss": "the cell's training loss after its aggregation",
}

#: rounds.csv columns summed over the cells
_SUMMED = (
    "n_scheduled",
    "n_arrived",
    "n_dropped",
    "n_outage",
    "n_unavailable",
    "n_stragglers",
    "bits_up",
    "bits_down",
    "index_bits",
    "compute_energy_j",
    "transmit_energy_j",
    "solver_fallback",
)
#: rounds.csv columns of the worst cell (C = 1: the cell's own)
_LARGEST = ("delay_s", "queue", "queue_after", "planned_delay_s", "t_end_s")
#: rounds.csv columns averaged over the cells' scheduled clients, and over their arrivals
_BY_SCHEDULED = ("sparsification", "mean_client_rank", "bound", "mean_snr_db")
_BY_ARRIVALS = ("loss", "cov_norm", "orth_residual")


def _mean(values: list[float], weights: list[float] | None = None) -> float:
    v = np.asarray(values, dtype=float)
    w = np.ones(v.size) if weights is None else np.asarray(weights, dtype=float)
    keep = ~np.isnan(v) & (w > 0)
    return float(np.dot(v[keep], w[keep]) / w[keep].sum()) if keep.any() else math.nan


def cell_row(record: dict, cell: int, mean_sinr_db: float) -> dict:
    """``cells.csv``'s row of ``cell`` from its simulator's round record."""
    row = {name: record.get(name, math.nan) for name in CELL_COLUMNS}
    row.update(cell=cell, mean_sinr_db=mean_sinr_db)
    return row


def network_record(
    records: list[dict],
    *,
    sinr_db: np.ndarray,
    end_s: float,
    cloud: bool,
    backhaul_s: float,
    evaluation: dict[str, float],
) -> dict:
    """rounds.csv's row of a network round from its cells' ``records``: counts, bits and
    energy summed; D^t, the queues, the planned delay and the end the largest (the slowest
    cell; ``end_s`` after the cloud's exchange); the start the earliest; means weighted by
    the cells' scheduled (SNR, rank, ratio, bound) or arrived (loss) clients; accuracy the
    cloud's ``evaluation``; the uplink's own columns (NR's, AirComp's) the mean over the
    cells weighted by their scheduled clients. ``sinr_db`` (M,) the round's uploads."""
    first = records[0]
    out = {name: first[name] for name in first}
    scheduled = [r["n_scheduled"] for r in records]
    arrived = [r["n_arrived"] for r in records]
    for name in first:
        values = [r[name] for r in records]
        if name in _SUMMED:
            out[name] = type(first[name])(sum(values))
        elif name in _LARGEST:
            out[name] = max(values)
        elif name in _BY_SCHEDULED or name not in ROUND_COLUMNS and not name.startswith("algo."):
            out[name] = _mean(values, scheduled)  # the uplink's own columns too
        elif name in _BY_ARRIVALS or name.startswith("algo."):
            out[name] = _mean(values, arrived)
    out["t_start_s"] = min(r["t_start_s"] for r in records)
    out["t_end_s"] = max(out["t_end_s"], end_s)
    out["completion_s"] = out["t_end_s"] - out["t_start_s"]
    lows = np.asarray([r["min_snr_db"] for r in records], dtype=float)
    out["min_snr_db"] = float(np.nanmin(lows)) if (~np.isnan(lows)).any() else math.nan
    out["wall_s"] = sum(r["wall_s"] for r in records)
    out["accuracy"] = evaluation.get("accuracy", math.nan)
    out["test_loss"] = evaluation.get("test_loss", math.nan)
    out.update(
        n_cells=len(records),
        cloud_round=int(cloud),
        backhaul_s=backhaul_s,
        mean_sinr_db=float(np.mean(sinr_db)) if sinr_db.size else math.nan,
    )
    return out
