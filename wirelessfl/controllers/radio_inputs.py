"""What the joint radio solvers (``optim.solve_energy_min``, ``optim.solve_joint_step``) need of
one round's clients, and their answer as a controller's powers and clocks. No torch.

The solvers model client k as C_k cycles at clock f (C_k / f seconds, kappa_k C_k f^2 joules)
and a channel of SNR snr_k per watt on the whole band (rate b B log2(1 + p snr_k / b)). The
simulator's device computes for c_k seconds at f_max (``compute_s``), for c_k f_max / f at f, and
spends c_k flops_per_s j_k (f / f_max)^2 joules (j_k: the energy of one FLOP at f_max, CMOS
model; docs/simulator.md "Transmit power and CPU frequency as decisions"). So

    C_k = c_k f_max,k,    kappa_k = j_k flops_per_s,k / f_max,k^3,    snr_k = SNR_k / P_max,k

reproduce the simulator's times and energies exactly. A client with no compute time
(``devices.include_compute: false``) has C_k = 0: its clock changes no time, and it computes at
f_min, its least energy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optim import EnergyMinSolution
from wirelessfl.controllers.base import ControllerContext
from wirelessfl.errors import ConfigError

__all__ = ["check_radio_context", "radio_decisions", "radio_inputs"]


def check_radio_context(ctx: ControllerContext, what: str) -> None:
    """A one-line ``ConfigError`` unless the devices have a clock range (``cmos``)."""
    needed = (ctx.cpu_hz_min, ctx.cpu_hz_max, ctx.joules_per_flop_at_fmax, ctx.flops_per_s)
    if any(value is None for value in needed):
        raise ConfigError(
            f"{what} decides each client's CPU clock, which needs devices.energy.model: cmos "
            "(with devices.energy.cpu_freq_hz and cpu_freq_min_hz as f_max and f_min); set it"
        )


def radio_inputs(
    ctx: ControllerContext,
    clients: np.ndarray,
    snr: np.ndarray,
    compute_s: np.ndarray,
    tx_power_max_w: np.ndarray,
) -> dict[str, Any]:
    """The solvers' per-client keyword arguments (all but ``bits``), arrays (K',).

    Args:
        ctx: the controller's context (clock range, FLOP speed and energy per device).
        clients: (K',) device ids.
        snr: (K',) linear whole-band SNRs at ``tx_power_max_w``.
        compute_s: (K',) compute times at f_max [s] (0: no compute time).
        tx_power_max_w: (K',) P_max,k [W].
    """
    f_max = np.asarray(ctx.cpu_hz_max, dtype=float)[clients]
    speed = np.asarray(ctx.flops_per_s, dtype=float)[clients]
    joules = np.asarray(ctx.joules_per_flop_at_fmax, dtype=float)[clients]
    p_max = np.asarray(tx_power_max_w, dtype=float)
    return {
        "cycles": np.asarray(compute_s, dtype=float) * f_max,
        "snr_per_w": np.asarray(snr, dtype=float) / p_max,
        "f_min_hz": np.asarray(ctx.cpu_hz_min, dtype=float)[clients],
        "f_max_hz": f_max,
        "kappa": joules * speed / f_max**3,
        "p_max_w": p_max,
        "bandwidth_hz": float(ctx.bandwidth_hz),
    }


def radio_decisions(
    solution: EnergyMinSolution, inputs: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """(K',) transmit powers [W] and clocks [Hz] of ``solution`` in the simulator's ranges.

    A client that uploads nothing transmits at P_max,k (it spends no transmit energy); one
    without compute time runs at f_min (module docstring). Rounding past a limit is clipped.
    """
    p_max, f_min, f_max = inputs["p_max_w"], inputs["f_min_hz"], inputs["f_max_hz"]
    power = np.where(solution.power_w > 0.0, np.minimum(solution.power_w, p_max), p_max)
    clock = np.where(inputs["cycles"] > 0.0, solution.frequency_hz, f_min)
    return power, np.clip(clock, f_min, f_max)
