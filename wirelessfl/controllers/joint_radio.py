"""The online stage with ``controller.radio: joint``: ratio, powers, clocks, shares and round time
by the joint Lyapunov step (J2), ``optim.solve_joint_step`` (docs/solvers.md, "Joint power,
frequency, bandwidth and ratio"). No torch.

Each round: minimise V gamma(O) + Q D + sum_k omega Z_k E_k over O, p_k, f_k, b_k and D
(omega: ``controller.energy_weight``, eq. E3 of docs/solvers.md), with the
algorithm's affine upload bits_k(O) = fixed_k + per_ratio_k O (its cost model, as P3) and
gamma(O) its penalty in eq. (14)'s form; an algorithm without the ratio knob trains at the
controller's rank and O is no decision. D is the round's compute + upload time, and the delay
queue Q takes the same time (the longest compute + upload of the round, not eq. 21's longest
upload), so that Q D in (J2) prices what the queue counts; the energy queues Z_k take each
device's energy, as with ``radio: fixed``. Without an energy budget Z = 0: the step takes the
least round time at each O (full power and clock) and trades it against the penalty.

The step plans with the affine bits; the message's exact bits at the chosen O (integer value
counts) then get the least Z-weighted energy at that D (``optim.solve_energy_min``; when the
rounding makes the least time at the exact bits exceed D, that least time), so the planned
delay is what the simulator measures; without an energy price (Z = 0) the round takes the
least time at the exact bits. The step has no fallback (``solver_fallback`` stays 0).

With Q = 0 and some Z_k > 0, (J2) has no minimiser (the energy keeps falling as D grows, at no
delay cost). The round then takes O = 1 (the least penalty) and the least Z-weighted energy
under D = D_th (``controller.d_th_s``): the longest round time that keeps the queue empty.
Such a round's compute + upload sums to D_th only up to floating-point rounding, which can
leave Q at a few 1e-16 s; a queue within ``EMPTY_QUEUE_RTOL`` D_th of 0 counts as empty (the
step at that Q would search round times up to W / Q, 10^13 s, and fail).
"""

from __future__ import annotations

import numpy as np

from optim import (
    DeadlineInfeasibleError,
    client_block,
    min_feasible_deadline_s,
    solve_joint_step,
)
from optim.dispatch_radio import DispatchRadioSolution, solve_dispatch_radio
from wirelessfl.algorithms.cost import RATIO
from wirelessfl.controllers.base import Controller, ControllerContext, Decision
from wirelessfl.controllers.dispatch import DispatchCandidates
from wirelessfl.controllers.energy_min import LEAST_TIME_MARGIN, least_energy
from wirelessfl.controllers.radio_inputs import check_radio_context, radio_decisions, radio_inputs
from wirelessfl.errors import ConfigError

__all__ = ["JOINT_NOISE_BANDWIDTHS", "check_joint_radio", "decide_joint", "dispatch_radio"]

#: ``radio: joint`` plans with the rate b B log2(1 + SNR / b) (noise over the share)
JOINT_NOISE_BANDWIDTHS = frozenset({"share"})
#: a delay queue at or below this fraction of D_th is the rounding a round planned at exactly
#: D_th leaves (compute + upload summed in floating point), not a backlog
EMPTY_QUEUE_RTOL = 1.0e-12


def check_joint_radio(ctx: ControllerContext) -> None:
    """One line when the scenario cannot run ``radio: joint`` (clock range, solver)."""
    check_radio_context(ctx, "controller.radio: joint")
    if ctx.settings.method == "cvxpy":
        raise ConfigError(
            "controller.method: cvxpy solves P3 at full power and clock, and controller.radio: "
            "joint solves (J2) with optim.solve_joint_step (exact searches, no CVXPY form); use "
            "controller.method: exact"
        )


def _payload(ctl: Controller, snr: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(fixed bits (K',), bits per unit of O (K',), offset, a) of the round's plans."""
    c = ctl.ctx
    dense = ctl.round_plans(snr, ctl.rank, 1.0)
    if RATIO not in c.cost.knobs:  # the rank's message as sent: O is no decision
        return ctl.upload_bits(dense), np.zeros(len(snr)), ctl.penalty(dense), 0.0
    v = float(c.bits_per_value)
    splits = zip(*ctl.affine_uploads(dense), strict=True)
    n, h, side = (np.array(col, dtype=float) for col in splits)
    offset, a = c.cost.ratio_penalty_parts(dense, n_scheduled=len(dense), constants=c.constants)
    return v * h + side, v * n, float(offset), float(a)


def decide_joint(ctl: Controller, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
    """The round's decision by (J2) (module docstring) for the K' clients of ``snr`` (K',)
    with compute times ``compute_s`` (K',) [s] at f_max."""
    c, s = ctl.ctx, ctl.ctx.settings
    n = len(snr)
    p_max = ctl.round_tx_power_max_w
    if p_max is None or p_max.shape != (n,):
        raise ValueError("controller.radio: joint needs each client's P_max,k: pass tx_power_max_w")
    clients = ctl._clients(n)
    inputs = radio_inputs(c, clients, snr, compute_s, p_max)
    fixed_bits, per_ratio_bits, offset, a = _payload(ctl, snr)
    z = ctl.weighted_energy_queues(clients)
    q = float(ctl.queue)
    # no minimiser (Q = 0 with Z > 0): O = 1, the round (compute + upload) within D_th
    no_delay_cost = 1.0, float(s.d_th_s)
    fallbacks = 0
    if q <= EMPTY_QUEUE_RTOL * float(s.d_th_s) and z.max() > 0.0:
        o, deadline_s = no_delay_cost
    else:
        try:
            step = solve_joint_step(
                queue_s=q,
                V=s.V,
                energy_queue_j=z,
                offset=offset,
                a=a,
                o_min=s.o_min,
                fixed_bits=fixed_bits,
                per_ratio_bits=per_ratio_bits,
                **inputs,
            )
            o, deadline_s = float(step.ratio), float(step.round_s)
        except DeadlineInfeasibleError:
            # Q small against Z: the step searches round times up to D_min + W(D_min) / Q
            # (10^7 s and more), where the price search of (J3) breaks down; the round takes
            # the rule of Q = 0 and counts a solver fallback
            (o, deadline_s), fallbacks = no_delay_cost, 1
    ratio_knob = RATIO in c.cost.knobs
    plans = ctl.round_plans(snr, ctl.rank, o if ratio_knob else 1.0)
    bits = ctl.upload_bits(plans)
    if z.max() == 0.0:  # energy is free: the least round time at the exact bits
        least_s = min_feasible_deadline_s(client_block(bits=bits, **inputs))
        deadline_s = least_s * (1.0 + LEAST_TIME_MARGIN)
    solution, _ = least_energy(  # past D only by the value counts' rounding: no fallback
        bits, inputs, deadline_s=deadline_s, scheme="joint", weight=z
    )
    power, clock = radio_decisions(solution, inputs)
    return Decision(
        sparsification=o if ratio_knob else c.cost.compression.ratio_for(1.0),
        shares=np.asarray(solution.share, dtype=float),
        planned_delay_s=float(np.max(solution.upload_s, initial=0.0)),
        bound=offset + a * (1.0 - o) ** 2 / o**4,  # eq. (14)'s form, as the step's gamma(O)
        tx_power_w=power,
        cpu_hz=clock,
        fallbacks=fallbacks,
    )


def dispatch_radio(
    ctl: Controller,
    cand: DispatchCandidates,
    affine: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> DispatchRadioSolution:
    """The per-dispatch step over O, p_k and f_k, (D1)-(D4) of docs/solvers.md, for the
    candidates ``cand`` in the event-driven modes (rate with the noise over the whole band,
    the engine's processor sharing at b = 1/C).

    Args:
        ctl: the controller (queues, settings).
        cand: the candidates (n,), SNRs at their power-control powers P_max,k.
        affine: (fixed bits, bits per unit of O, offset_k, a_k), each (n,).
    """
    c, s = ctl.ctx, ctl.ctx.settings
    fixed_bits, per_ratio_bits, offset, a = affine
    inputs = radio_inputs(c, cand.clients, cand.snr, cand.compute_s, cand.tx_power_w)
    return solve_dispatch_radio(
        queue=float(ctl.queue),
        V=s.V,
        o_min=s.o_min,
        offset=offset,
        a=a,
        per_ratio_bits=per_ratio_bits,
        fixed_bits=fixed_bits,
        snr_per_w=inputs["snr_per_w"],
        share=cand.share,
        bandwidth_hz=inputs["bandwidth_hz"],
        p_max_w=inputs["p_max_w"],
        compute_s=cand.compute_s,
        cycles=inputs["cycles"],
        kappa=inputs["kappa"],
        f_min_hz=inputs["f_min_hz"],
        f_max_hz=inputs["f_max_hz"],
        weight=ctl.weighted_energy_queues(cand.clients),
        noise_bandwidth="band",
        empty_queue_budget_s=float(s.d_th_s),
    )
