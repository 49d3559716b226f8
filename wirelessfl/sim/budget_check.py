"""The end-of-run check of ``controller.energy_budget_j``: one warning line naming the devices
whose time-average energy per round is more than :data:`TOLERANCE` above their budget.

The start-of-run line (:func:`wirelessfl.sim.energy_band.budget_below_band`) predicts the
devices whose budget is below their band; this line reports what the run did (each device's
compute + transmit energy over the T rounds in the tables, divided by T, the time-average the
budget bounds), so a budget the closed loop did not reach is never missed silently.
"""

from __future__ import annotations

import numpy as np

from wirelessfl.sim.device_names import named_devices

#: how far above its budget a device's time-average energy may end without a report (relative)
TOLERANCE = 0.05


def budget_missed_line(spent_j: np.ndarray, budget_j: np.ndarray, rounds: int) -> str | None:
    """One line naming the devices whose energy over ``rounds`` = T rounds, spent_j (N,) [J],
    exceeds (1 + TOLERANCE) T budget_j (N,) [J/round]; None when none does or T = 0."""
    if rounds <= 0:
        return None
    mean_j = np.asarray(spent_j, dtype=float) / rounds
    budget_j = np.asarray(budget_j, dtype=float)
    missed = np.flatnonzero(mean_j > (1.0 + TOLERANCE) * budget_j)
    if missed.size == 0:
        return None
    named = named_devices(missed)
    worst = int(missed[np.argmax(mean_j[missed] / budget_j[missed])])
    return (
        f"controller.energy_budget_j: after {rounds:,} rounds {missed.size:,} of "
        f"{budget_j.size:,} devices spent more than {1.0 + TOLERANCE:g} times their budget "
        f"(devices {named}; device {worst}: {float(mean_j[worst]):.4g} J per round against "
        f"{float(budget_j[worst]):g} J); run longer (wirelessfl run --resume DIR --set "
        "rounds=N), or raise the budget or controller.d_th_s"
    )
