"""Solvers for wireless federated LoRA: bound, TSFA offline search, Lyapunov online control.

Library use (no torch, no simulator)::

    from optim import (BoundConstants, convergence_bound, offline_rank_search, solve_slot,
                       LyapunovController, equal_delay_bandwidth, minmax_bandwidth)

Modules, one concern each: :mod:`optim.bound` (gamma^t of Theorem 1), :mod:`optim.offline`
(Lemma 2, Algorithm 2), :mod:`optim.p3` / :mod:`optim.p3_cvxpy` (the per-slot problem P3, exact
and CVXPY), :mod:`optim.online` (:func:`solve_slot`), :mod:`optim.controller` (virtual queue,
eq. 21), :mod:`optim.bandwidth` (eq. 31 and min-max shares), :mod:`optim.noise_share` (the shares
when the noise is over each client's share), :mod:`optim.selection`,
:mod:`optim.calibration`, :mod:`optim.sketch_ratio` (FSLoRA's per-client sketch sizes),
:mod:`optim.dispatch` (the per-dispatch step of the event-driven modes),
:mod:`optim.dispatch_radio` (its power and clock with ``radio: joint``),
:mod:`optim.energy_min` (least round energy under a time limit, Yang et al., and baselines),
:mod:`optim.joint` (the joint ratio / power / frequency / bandwidth Lyapunov step),
:mod:`optim.joint_cvxpy` (the same step as a CVXPY problem: the baseline of its tests and
benchmark, not imported here). CVXPY is imported only when ``method="cvxpy"`` is used.
"""

from optim.bandwidth import (
    completion_times_s,
    equal_delay_bandwidth,
    minmax_bandwidth,
    minmax_deadline_s,
)
from optim.bound import BoundConstants, BoundTerms, bound_terms, convergence_bound
from optim.calibration import PilotRecord, calibrate_constants
from optim.controller import LyapunovController, VirtualQueue, queue_update
from optim.dispatch import DispatchSolution, queue_after_updates, solve_dispatch
from optim.energy_min import (
    ENERGY_MIN_METHODS,
    DeadlineInfeasibleError,
    EnergyMinSolution,
    client_block,
    min_feasible_deadline_s,
    solve_energy_min,
)
from optim.energy_queue import ENERGY_QUEUE_RULES, EnergyQueues, energy_queue_update
from optim.joint import JointSolution, solve_joint_step
from optim.noise_share import deadline_shares, share_for_upload
from optim.offline import (
    InfeasibleError,
    OfflineResult,
    average_delay_s,
    offline_rank_search,
    offline_sparsification,
)
from optim.online import SLOT_METHODS, SlotSolution, solve_slot
from optim.selection import SELECTION_METHODS, select_clients, update_average_rate
from optim.sketch_ratio import SketchSolution, solve_sketch_ratios, solve_sketch_ratios_relaxed

__all__ = [
    "ENERGY_MIN_METHODS",
    "ENERGY_QUEUE_RULES",
    "DeadlineInfeasibleError",
    "EnergyMinSolution",
    "JointSolution",
    "client_block",
    "min_feasible_deadline_s",
    "solve_energy_min",
    "solve_joint_step",
    "SELECTION_METHODS",
    "SLOT_METHODS",
    "BoundConstants",
    "BoundTerms",
    "DispatchSolution",
    "EnergyQueues",
    "InfeasibleError",
    "LyapunovController",
    "OfflineResult",
    "PilotRecord",
    "SketchSolution",
    "SlotSolution",
    "VirtualQueue",
    "average_delay_s",
    "bound_terms",
    "calibrate_constants",
    "completion_times_s",
    "convergence_bound",
    "deadline_shares",
    "energy_queue_update",
    "equal_delay_bandwidth",
    "minmax_bandwidth",
    "minmax_deadline_s",
    "offline_rank_search",
    "offline_sparsification",
    "queue_after_updates",
    "queue_update",
    "select_clients",
    "share_for_upload",
    "solve_sketch_ratios",
    "solve_dispatch",
    "solve_sketch_ratios_relaxed",
    "solve_slot",
    "update_average_rate",
]
