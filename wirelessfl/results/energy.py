"""Device energy of a run: per device per round, and against the energy budget.

Definitions (every figure in joules [J]):

- a device's energy in a round, E_k^t: its compute energy plus its transmit energy
  (``clients.csv``'s columns; 0 in a round it did not train);
- energy per device per round: E_k^t averaged over the N devices (``n_clients``, scheduled or
  not), i.e. ``(compute_energy_j + transmit_energy_j) / N`` of a ``rounds.csv`` row; over a run,
  also averaged over its rounds;
- a device's time-average energy, E_k = (1/T) sum_t E_k^t over the run's T rounds: what
  ``controller.energy_budget_j`` (E_bar) bounds, as the energy queues of the online stage keep
  it (Z_k^{t+1} = max(Z_k^t + E_k^t - E_bar, 0), every device every round);
- a device met the budget when E_k <= E_bar (to a relative 1e-9, float rounding).

Per-device totals come from ``devices.csv`` (one row per device, written by the runner when a
run stops or finishes) or, for a run without it, from ``clients.csv`` (``output.clients``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wirelessfl.results.columns import DEVICE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

#: the run folder's per-device energy table (``DEVICE_COLUMNS``)
DEVICES_FILE = "devices.csv"
#: relative slack of "within the budget" (float rounding of sums of energies)
BUDGET_RTOL = 1e-9


def write_devices(out: Path, rounds: int, compute_j: np.ndarray, transmit_j: np.ndarray) -> None:
    """Write ``devices.csv`` atomically: each device's energy summed over ``rounds`` rounds.

    Args:
        out: the run folder.
        rounds: rounds counted (rounds 0..rounds-1).
        compute_j: (N,) compute energy of each device over those rounds [J].
        transmit_j: (N,) transmit energy of each device over those rounds [J].
    """
    from wirelessfl.results.files import atomic_write_text

    lines = [",".join(DEVICE_COLUMNS)]
    for k, (c, t) in enumerate(zip(compute_j.tolist(), transmit_j.tolist(), strict=True)):
        lines.append(f"{k},{rounds},{c!r},{t!r}")
    atomic_write_text(out / DEVICES_FILE, "\n".join(lines) + "\n")


def devices_cover(devices: Any, rounds_done: int, n_clients: int) -> bool:
    """Whether a ``devices.csv`` table (a DataFrame, or columns by name) holds every one of
    the N devices, each summed over exactly the run's ``rounds_done`` rounds."""
    if not set(DEVICE_COLUMNS) <= set(devices.keys()):
        return False
    counted = np.asarray(devices["rounds"], dtype=float)
    return len(counted) == n_clients and bool(np.all(counted == rounds_done))


def device_energy(
    rounds_done: int,
    n_clients: int,
    devices: pd.DataFrame | None = None,
    clients: pd.DataFrame | None = None,
) -> pd.DataFrame | None:
    """Each device's time-average energy per round over a run's ``rounds_done`` rounds.

    Args:
        rounds_done: rows in the run's ``rounds.csv``.
        n_clients: N, the run's devices.
        devices: the run's ``devices.csv`` (used when it covers exactly ``rounds_done`` rounds
            and N devices).
        clients: the run's ``clients.csv`` (used otherwise; devices it never lists spent 0).

    Returns:
        ``device`` (0..N-1), ``compute_energy_j``, ``transmit_energy_j``, ``energy_j`` [J per
        round]; None when neither table gives them (or no round was done).
    """
    import pandas as pd

    if rounds_done < 1 or n_clients < 1:
        return None
    if devices is not None and devices_cover(devices, rounds_done, n_clients):
        totals = devices.set_index("device")[["compute_energy_j", "transmit_energy_j"]]
    elif clients is not None and "compute_energy_j" in clients.columns:
        done = clients[clients["round"] < rounds_done]
        totals = done.groupby("client")[["compute_energy_j", "transmit_energy_j"]].sum()
    else:
        return None
    totals = totals.reindex(range(n_clients), fill_value=0.0).astype(float) / rounds_done
    table = totals.rename_axis("device").reset_index()
    table["energy_j"] = table["compute_energy_j"] + table["transmit_energy_j"]
    return pd.DataFrame(table)


def within_budget(energy_j: np.ndarray, budget_j: float) -> np.ndarray:
    """Which time-average energies [J per round] keep to ``budget_j`` (``BUDGET_RTOL``)."""
    return np.asarray(energy_j, dtype=float) <= budget_j * (1.0 + BUDGET_RTOL)


def budget_of(config: dict[str, Any]) -> float:
    """``controller.energy_budget_j`` of a resolved config [J per device per round]; NaN: none."""
    budget = (config.get("controller") or {}).get("energy_budget_j")
    return math.nan if budget is None else float(budget)


def energy_summary(
    rounds: pd.DataFrame | None,
    n_clients: int,
    budget_j: float,
    per_device: pd.DataFrame | None,
) -> dict[str, float]:
    """The energy columns of ``SUMMARY_COLUMNS`` for one run.

    Args:
        rounds: the run's ``rounds.csv`` (None or empty: every figure NaN).
        n_clients: N.
        budget_j: ``controller.energy_budget_j`` (NaN: none).
        per_device: :func:`device_energy` (None: the per-device figures are NaN).
    """
    if rounds is None or not len(rounds) or "compute_energy_j" not in rounds:
        return energy_figures(0, math.nan, math.nan, n_clients, budget_j, None)
    device = None if per_device is None else per_device["energy_j"].to_numpy(dtype=float)
    return energy_figures(
        len(rounds),
        float(rounds["compute_energy_j"].sum()),
        float(rounds["transmit_energy_j"].sum()),
        n_clients,
        budget_j,
        device,
    )


def energy_figures(
    rounds_done: int,
    compute_j: float,
    transmit_j: float,
    n_clients: int,
    budget_j: float,
    device_energy_j: np.ndarray | None,
) -> dict[str, float]:
    """:func:`energy_summary` from its numbers: the run's ``rounds_done`` rounds, the sums of
    their ``compute_energy_j`` and ``transmit_energy_j`` [J], N, the budget (NaN: none) and each
    device's time-average energy per round ``(N,)`` [J] (None: unknown)."""
    out = {
        "device_energy_j": math.nan,
        "device_compute_energy_j": math.nan,
        "device_transmit_energy_j": math.nan,
        "max_device_energy_j": math.nan,
        "energy_budget_j": budget_j,
        "budget_met_share": math.nan,
    }
    if rounds_done < 1 or n_clients < 1:
        return out
    per = rounds_done * n_clients
    compute, transmit = compute_j / per, transmit_j / per
    out.update(
        device_energy_j=compute + transmit,
        device_compute_energy_j=compute,
        device_transmit_energy_j=transmit,
    )
    if device_energy_j is not None:
        out["max_device_energy_j"] = float(device_energy_j.max())
        if not math.isnan(budget_j):
            out["budget_met_share"] = float(within_budget(device_energy_j, budget_j).mean())
    return out


def energy_lines(summary: dict[str, float], n_clients: int) -> list[str]:
    """The run summary's energy lines (``wirelessfl run``) from ``energy_summary``."""

    def fmt(x: float) -> str:
        return "n/a" if math.isnan(x) else f"{x:.4g} J"

    total = summary["device_energy_j"]
    if math.isnan(total):  # a run folder of an older version, or no round
        return ["energy         n/a"]
    lines = [
        f"energy         {fmt(total)} per device per round "
        f"(compute {fmt(summary['device_compute_energy_j'])}, "
        f"transmit {fmt(summary['device_transmit_energy_j'])})"
    ]
    budget, share = summary["energy_budget_j"], summary["budget_met_share"]
    largest = f"largest device {fmt(summary['max_device_energy_j'])}"
    if math.isnan(budget):
        lines.append(f"energy budget  none ({largest})")
    elif math.isnan(share):
        lines.append(f"energy budget  {fmt(budget)} per device per round (met by: n/a)")
    else:
        met = round(share * n_clients)
        lines.append(
            f"energy budget  {fmt(budget)} per device per round: met by {met} of {n_clients} "
            f"devices ({100 * share:.0f} %; {largest})"
        )
    return lines
