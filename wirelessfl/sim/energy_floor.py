"""The least time-average energy per round a device can reach, and a budget below it.

With ``controller.energy_budget_j`` = Ē every device's time-average energy per round should
stay within Ē. A device that trains spends at least its compute energy at the lowest clock the
run's controller may choose: f_min (``devices.energy.cpu_freq_min_hz``) when the controller
decides clocks (:attr:`~wirelessfl.controllers.base.Controller.decides_cpu_frequency`), the
device's one clock otherwise (no controller lowers the FLOPs of a round: the rank is fixed
before round 0). K of the N devices train in a round, so a device trains in K/N of the rounds
on average, and its floor is

    E_floor,k = (K / N) · E_comp,k(FLOPs of a round at the run's rank, f_min,k)      [J/round].

The transmit part is left out (an upload costs at least bits · ln 2 · N0 / g_k, the Shannon
limit of energy per bit, which a controller approaches only by slowing the upload without
bound), so this is a lower bound: a budget below it cannot be met on average whatever the
controller does (docs/solvers.md, "When a budget cannot be met"). The simulator reports such
a budget in one warning line when the run starts (:func:`budget_shortfall`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from channels.energy import ComputeEnergyModel
from wirelessfl.sim.device_names import named_devices

__all__ = ["budget_shortfall", "compute_energy_floor_j"]


def compute_energy_floor_j(
    model: ComputeEnergyModel,
    *,
    flops: float,
    client_class: Sequence[str] | None,
    cpu_hz_min: np.ndarray | None,
    n_scheduled: int,
    n_clients: int,
) -> np.ndarray:
    """(N,) E_floor,k [J/round] (module docstring).

    Input: ``flops`` FLOPs of one client's round at the run's rank [FLOP]; ``client_class``
    (N,) or None; ``cpu_hz_min`` (N,) the lowest clock each device may run at [Hz] (None:
    the energy model's own clock); ``n_scheduled`` K; ``n_clients`` N.
    """
    work = np.full(n_clients, float(flops))
    if cpu_hz_min is None:
        per_round = model.energy_j(work, client_class)
    else:
        per_round = model.energy_j(work, client_class, cpu_hz=cpu_hz_min)  # type: ignore[call-arg]
    return (n_scheduled / n_clients) * np.asarray(per_round, dtype=float)


def budget_shortfall(budget_j: np.ndarray, floor_j: np.ndarray) -> str | None:
    """One line naming the devices whose budget (N,) [J/round] is below their floor (N,), or
    None when every budget is at or above it."""
    short = np.flatnonzero(np.asarray(budget_j) < np.asarray(floor_j))
    if short.size == 0:
        return None
    named = named_devices(short)
    worst = int(short[np.argmax(floor_j[short] - budget_j[short])])
    return (
        f"controller.energy_budget_j = {float(budget_j[worst]):g} J is below the least "
        f"time-average energy per round of {short.size:,} of {len(floor_j):,} devices "
        f"(devices {named}; device {worst}: {float(floor_j[worst]):g} J, its compute alone at "
        "the lowest clock, K/N of the rounds): their energy queues will grow without bound; "
        "raise the budget, lower devices.energy.cpu_freq_min_hz (with a controller that "
        "decides clocks) or the compute per round"
    )
