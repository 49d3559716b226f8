"""The band of time-average energy per round each device can settle on with the joint radio.

With ``controller.radio: joint`` and ``controller.energy_budget_j`` the Lyapunov step (J2)
weighs device k's energy by omega Z_k and the round time by Q (docs/solvers.md, "Where a
budget binds"). Device k's time-average energy per round lies in a band [E_lo,k, E_hi,k],
both ends at rounds of D = D_th (``controller.d_th_s``, the longest round that keeps the
delay queue empty):

- E_lo,k, the least energy that still keeps the mean round time within D_th: O = O_min (the
  smallest upload) and the round of least total energy at D_th (equal weights): the compute at
  a clock that fits D_th, never below the compute at f_min. A budget below it cannot be met
  together with D_th: the delay and energy queues both grow.
- E_hi,k, what the device spends when its budget does not bind (Z_k = 0) while other devices'
  queues are positive: its energy is then free in (J2), and the least-energy round gives it
  the least share, at P_max and f_max for the whole round,
  kappa_k C_k f_max,k^2 + P_max,k (D_th - C_k / f_max,k) at O = 1. A budget above it never
  makes the device's queue positive.

Each end is an expectation over the schedule and the fading, 0 in a round that does not
schedule the device:

    E_k = E_{S,h}[ 1{k in S} (kappa_k C_k f_k^2 + p_k t_k) ]      [J/round].

Uniform selection schedules a device in K/N of the rounds, so each end is K/N times the
device's mean energy over the rounds that schedule it (another ``selection.method`` is taken
as uniform). The mean is a fixed-seed Monte Carlo (:data:`BAND_SEED`, about
:data:`DRAWS_PER_DEVICE` rounds per device): rounds of K clients drawn uniformly from the N,
each client's SNR its mean SNR (its large-scale gain; where clients move, at times spread
evenly over the run's expected virtual time, T rounds of D_th, since the joint radio's rounds
with a budget last about D_th) times a draw of the scenario's fading power |s|^2 / E|s|^2. A
client below ``faults.outage_snr_db`` neither trains nor spends (so a device often in outage
can have E_lo below the compute floor of :mod:`wirelessfl.sim.energy_floor`, which counts
every scheduled round). A round whose least time exceeds D_th (a deep fade) takes its
decision at that least time, as the controller does. The simulator computes the band when a
synchronous run with the joint radio and a budget starts on a modelled channel (not an SNR
trace), writes it to ``meta.json`` (``energy_band_j``) and reports the devices whose budget is
below E_lo in one warning line (:func:`budget_below_band`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from optim import client_block, min_feasible_deadline_s
from wirelessfl.algorithms.cost import RATIO
from wirelessfl.controllers.base import Controller
from wirelessfl.controllers.energy_min import least_energy
from wirelessfl.controllers.radio_inputs import radio_inputs
from wirelessfl.sim.device_names import named_devices

__all__ = ["BAND_SEED", "budget_below_band", "energy_band_j"]

#: the Monte Carlo's seed: the band of a scenario is the same at every run of it
BAND_SEED = 20_261_126
#: each device is scheduled in about this many of the drawn rounds
DRAWS_PER_DEVICE = 100
#: at most this many rounds are drawn (large N)
MAX_ROUNDS = 2_000


def energy_band_j(
    ctl: Controller,
    *,
    channel_at: Callable[[float], tuple[np.ndarray, np.ndarray]],
    horizon_s: float,
    fading,
    compute_s: np.ndarray,
    n_scheduled: int,
    d_th_s: float,
    outage_snr: float | None = None,
) -> np.ndarray:
    """(2, N) each device's E_lo,k (row 0) and E_hi,k (row 1) [J/round] (module docstring).

    Input: ``ctl`` the run's joint-radio controller (its rank, O_min, cost model and clock
    ranges); ``channel_at(time_s)`` -> ((N,) linear mean SNR, (N,) P_max,k [W]) at a virtual
    time; ``horizon_s`` the run's expected virtual time [s]: the drawn rounds take the channel
    at times spread evenly over it; ``fading`` the cell's fading model (``mean_power``,
    ``sample``); ``compute_s`` (N,) compute time of a round at f_max [s]; ``n_scheduled`` K;
    ``d_th_s`` D_th [s]; ``outage_snr`` the linear SNR below which a client is in outage
    (None: never).
    """
    n = len(compute_s)
    rounds = min(MAX_ROUNDS, math.ceil(DRAWS_PER_DEVICE * n / n_scheduled))
    rng = np.random.default_rng(BAND_SEED)
    power = np.abs(fading.sample(rng, rounds, n)) ** 2 / float(fading.mean_power)
    o_min = float(ctl.ctx.settings.o_min) if RATIO in ctl.ctx.cost.knobs else 1.0
    spent, scheduled = np.zeros((2, n)), np.zeros(n)
    saved = ctl.round_index, ctl.round_clients, ctl.round_tx_power_max_w
    try:
        for t in range(rounds):
            clients = np.sort(rng.choice(n, n_scheduled, replace=False))
            scheduled[clients] += 1
            mean_snr, p_max_w = channel_at((t + 0.5) / rounds * horizon_s)
            tx_power_max_w = np.broadcast_to(np.asarray(p_max_w, dtype=float), (n,))
            snr = np.asarray(mean_snr, dtype=float)[clients] * power[t, clients]
            if outage_snr is not None:
                clients, snr = clients[snr >= outage_snr], snr[snr >= outage_snr]
            if clients.size == 0:
                continue
            ctl.begin_round(t, clients, tx_power_max_w[clients])
            inputs = radio_inputs(
                ctl.ctx, clients, snr, compute_s[clients], tx_power_max_w[clients]
            )
            spent[0, clients] += _least_energy_j(ctl, snr, inputs, o_min, d_th_s)
            spent[1, clients] += _free_energy_j(ctl, snr, inputs, d_th_s)
    finally:
        ctl.round_index, ctl.round_clients, ctl.round_tx_power_max_w = saved
    # E[E_k | k scheduled] over the rounds drawn with k, times P(k scheduled) = K / N
    return n_scheduled / n * spent / np.maximum(scheduled, 1)


def _least_energy_j(ctl: Controller, snr, inputs: dict, ratio: float, d_th_s: float):
    """(K',) each client's energy [J] in the round of least total energy at D_th and O."""
    bits = ctl.upload_bits(ctl.round_plans(snr, ctl.rank, ratio))
    solution, _ = least_energy(bits, inputs, deadline_s=d_th_s, scheme="joint")
    return solution.compute_energy_j + solution.upload_energy_j


def _free_energy_j(ctl: Controller, snr, inputs: dict, d_th_s: float) -> np.ndarray:
    """(K',) each client's energy [J] at O = 1 when its own is free: f_max, and P_max for the
    rest of the round (D_th, or the least round time when that is longer); no upload, no
    transmit energy."""
    bits = ctl.upload_bits(ctl.round_plans(snr, ctl.rank, 1.0))
    round_s = max(d_th_s, min_feasible_deadline_s(client_block(bits=bits, **inputs)))
    f_max, cycles = inputs["f_max_hz"], inputs["cycles"]
    compute_j = inputs["kappa"] * cycles * f_max**2
    return compute_j + np.where(bits > 0, inputs["p_max_w"] * (round_s - cycles / f_max), 0.0)


def budget_below_band(budget_j: np.ndarray, band_j: np.ndarray, d_th_s: float) -> str | None:
    """One line naming the devices whose budget (N,) [J/round] is below E_lo,k (row 0 of
    ``band_j`` (2, N)), or None when every budget is at or above it."""
    low_j = np.asarray(band_j)[0]
    short = np.flatnonzero(np.asarray(budget_j) < low_j)
    if short.size == 0:
        return None
    named = named_devices(short)
    worst = int(short[np.argmax(low_j[short] - budget_j[short])])
    return (
        f"controller.energy_budget_j = {float(budget_j[worst]):g} J is below the least "
        f"time-average energy per round that keeps rounds within controller.d_th_s = "
        f"{d_th_s:g} s for {short.size:,} of {len(low_j):,} devices (devices {named}; device "
        f"{worst}: {float(low_j[worst]):.4g} J at O_min): their energy and delay queues will "
        "both grow; raise the budget or controller.d_th_s (each device's band is in "
        "meta.json, energy_band_j)"
    )
