"""A delay threshold below what a device's compute alone takes, when the delay queue counts it.

With ``controller.radio: joint`` the delay queue takes the round's longest compute + upload
(docs/solvers.md, "The energy queues' weight"), and so it does over the air
(``channel.uplink: aircomp``, whose analog sum waits for the slowest compute), so D_th
(``controller.d_th_s``) bounds the mean round time. A device whose compute at its highest
clock, c_k = FLOPs / flops_per_s,k [s], already exceeds D_th pushes the queue up in every
round that schedules it, and no clock or power brings it back: the simulator reports that in
one warning line when the run starts (:func:`round_limit_shortfall`).
"""

from __future__ import annotations

import numpy as np

from wirelessfl.sim.device_names import named_devices

__all__ = ["round_limit_shortfall"]


def round_limit_shortfall(
    d_th_s: float, compute_s: np.ndarray, why: str = "with controller.radio: joint"
) -> str | None:
    """One line naming the devices whose compute time at f_max (N,) [s] exceeds ``d_th_s``
    [s], or None when none does; ``why`` says what makes the queue count compute."""
    long = np.flatnonzero(np.asarray(compute_s) > d_th_s)
    if long.size == 0:
        return None
    named = named_devices(long)
    worst = int(long[np.argmax(compute_s[long])])
    return (
        f"controller.d_th_s = {d_th_s:g} s is below the compute time at the highest clock of "
        f"{long.size:,} of {len(compute_s):,} devices (devices {named}; device {worst}: "
        f"{float(compute_s[worst]):g} s): {why} the delay queue counts compute + upload, so "
        "every round that schedules them adds to it; raise controller.d_th_s above the slowest "
        "compute or expect the delay queue to grow"
    )
