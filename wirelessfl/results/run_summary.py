"""The summary ``wirelessfl run`` prints, read from the run folder with the csv module: a short
run would otherwise spend most of its start-up importing pandas (about 0.2 s) to print it.

The figures are those of the loaded tables (``wirelessfl.results.load``): means and sums skip
empty cells, as pandas' do; the energy lines are :func:`wirelessfl.results.energy.energy_lines`
of :func:`~wirelessfl.results.energy.energy_figures`, per device from ``devices.csv`` (a run
without one, from an older version, is summarised through pandas' ``clients.csv``).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from wirelessfl.results.energy import (
    DEVICES_FILE,
    budget_of,
    devices_cover,
    energy_figures,
    energy_lines,
)
from wirelessfl.results.store import read_config

__all__ = ["read_columns", "run_summary_text"]


def read_columns(path: Path) -> dict[str, np.ndarray] | None:
    """A run folder's CSV table as float64 columns (rows,), empty or non-numeric cells NaN and
    a partial last row left out; None when the file is missing."""
    if not path.exists():
        return None
    raw = path.read_bytes()
    rows = list(csv.reader(io.StringIO(raw[: raw.rfind(b"\n") + 1].decode("utf-8"))))
    if not rows:
        return {}
    header, body = rows[0], rows[1:]
    return {
        name: np.array([_number(row[i]) if i < len(row) else math.nan for row in body])
        for i, name in enumerate(header)
    }


def _number(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return math.nan


def _fmt(x: float, unit: str = "") -> str:
    return "n/a" if x != x else f"{x:.4g}{unit}"


def _mean(values: np.ndarray) -> float:
    """Mean of the non-NaN values (NaN when there is none), as pandas' ``mean``."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else math.nan


def _last(values: np.ndarray) -> float:
    return float(values[-1]) if values.size else math.nan


def _energy(folder: Path, rounds: dict[str, np.ndarray], config: dict) -> list[str]:
    n_clients = int(config.get("n_clients") or 0)
    done = len(rounds.get("round", ()))
    devices = read_columns(folder / DEVICES_FILE)
    covers = devices is not None and devices_cover(devices, done, n_clients)
    if not covers and (folder / "clients.csv").exists():  # an older run: clients.csv's sums
        from wirelessfl.results.summary import summarize_folder

        return energy_lines(summarize_folder(folder), n_clients)
    per_device = None
    if covers and done:
        per_device = (devices["compute_energy_j"] + devices["transmit_energy_j"]) / done
    known = "compute_energy_j" in rounds
    figures = energy_figures(
        done if known else 0,
        float(np.nansum(rounds["compute_energy_j"])) if known else math.nan,
        float(np.nansum(rounds["transmit_energy_j"])) if known else math.nan,
        n_clients,
        budget_of(config),
        per_device,
    )
    return energy_lines(figures, n_clients)


def run_summary_text(folder: str | Path) -> str:
    """The lines ``wirelessfl run`` prints for the run in ``folder``: rounds, virtual time,
    D^t against D_th, the final queue, O^t, uplink, energy and its budget, loss, accuracy, wall
    time and how to load the run."""
    folder = Path(folder)
    config = read_config(folder)
    r = read_columns(folder / "rounds.csv") or {}
    n = len(r.get("round", ()))
    empty = np.array([])
    col = lambda name: r.get(name, empty)  # noqa: E731 - a short local accessor
    accuracy = col("accuracy")
    evaluated = accuracy[~np.isnan(accuracy)]
    d_th = (config.get("controller") or {}).get("d_th_s", math.nan)
    rank = f"{int(col('rank')[-1])}" if n else "n/a"
    loss = col("loss")
    lines = [
        f"run            {folder}",
        f"rounds         {n}   (rank {rank})",
        f"virtual time   {_fmt(_last(col('t_end_s')), ' s')}",
        f"mean D^t       {_fmt(_mean(col('delay_s')), ' s')}   (D_th {_fmt(d_th, ' s')})",
        f"final queue    {_fmt(_last(col('queue_after')))}",
        f"mean O^t       {_fmt(_mean(col('sparsification')))}",
        f"uplink         {_fmt(float(np.nansum(col('bits_up'))) / 8e6, ' MB')} "
        f"({int(np.nansum(col('n_arrived')))} uploads arrived of "
        f"{int(np.nansum(col('n_scheduled')))} scheduled)",
        *_energy(folder, r, config),
        f"loss           {_fmt(loss[0] if n else math.nan)} -> {_fmt(_last(loss))}",
        f"accuracy       {_fmt(evaluated[0] if evaluated.size else math.nan)} -> "
        f"{_fmt(_last(evaluated))}",
        f"wall time      {_fmt(float(np.nansum(col('wall_s'))), ' s')}",
        f"load with      wirelessfl.results.load({str(folder)!r})",
    ]
    return "\n".join(lines)
