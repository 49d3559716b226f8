"""The one place where result columns are defined and documented.

Units are in the names (``_s`` seconds of virtual time, ``_db`` decibels, ``bits``).

Besides :data:`ROUND_COLUMNS`, ``rounds.csv`` has one ``algo.<name>`` column per metric the
run's algorithm declares (``FederatedAlgorithm.METRICS``, documented there and listed by
:func:`algorithm_columns`); a metric named like a column below fills that column instead.
A run that quantises (``quantize.bits`` or ``controller.bits_choices``) adds the quantiser
stage's ``algo.quant_bits`` and (real training) ``algo.quant_rel_error``, documented in
``wirelessfl.algorithms.quantization.QUANT_METRICS``; other runs' tables do not change.
"""

from __future__ import annotations

ROUND_COLUMNS: dict[str, str] = {
    "round": "round index t, from 0",
    "t_start_s": "virtual time of the broadcast that opens the round",
    "t_end_s": "virtual time of the aggregation that closes the round",
    "delay_s": "D^t: the slowest arrived client's upload duration (the paper's delay)",
    "completion_s": "t_end_s - t_start_s: downlink + compute + upload (+ waiting for a deadline)",
    "queue": "Q^t: virtual queue at the start of the round, before its update (eq. 21)",
    "queue_after": "Q^{t+1} = max(Q^t + D^t - D_th, 0) (controller.radio: joint: D^t the longest "
    "compute + upload, the round time its step prices; channel.uplink: aircomp: the slowest "
    "compute + the analog time)",
    "sparsification": "O^t: the fraction of their LoRA factors the clients send (the ratio the "
    "controller chose for a compression stage that follows it, a stage's fixed ratio, or 1 "
    "without a stage)",
    "rank": "LoRA rank r of the model (the largest rank a client can get)",
    "mean_client_rank": "mean rank the clients that trained trained at (the controller's rank "
    "knob, capped by each client's own rank); NaN when nobody trained",
    "n_scheduled": "clients scheduled (K^t)",
    "n_arrived": "clients whose update reached the server and was aggregated",
    "n_dropped": "scheduled clients that dropped out after the broadcast",
    "n_outage": "scheduled clients in outage (SNR below the threshold: no upload)",
    "n_unavailable": "scheduled clients that were not available (availability model)",
    "n_stragglers": "uploads still running at the deadline (not aggregated)",
    "bits_up": "uplink bits delivered by the arrived clients (values + index bits if counted)",
    "bits_down": "downlink bits the server sent the clients that trained",
    "index_bits": "index bits of the arrived clients' sparse payloads (reported even if not sent)",
    "mean_snr_db": "mean SNR of the scheduled clients",
    "min_snr_db": "lowest SNR among the scheduled clients",
    "compute_energy_j": "energy the clients spent computing this round (a client cut by the "
    "deadline while computing: the part done)",
    "transmit_energy_j": "energy the clients spent uploading: transmit power x upload time "
    "(a cut upload: up to the deadline)",
    "energy_queue_mean_j": "mean over devices of the energy queues Z_k^{t+1} "
    "(controller.energy_budget_j; NaN without a budget; with controller.energy_queue: "
    "at_participation each device's Z as of the last round it spent, before the drain of the "
    "rounds since; signed: Z_k may be negative, banked credit)",
    "planned_delay_s": "D^t the controller planned: the longest upload of the clients' "
    "messages as the algorithm's cost model sizes them, with the decided shares (and powers, "
    "where the controller decides them; before faults; the sketch controller adds compute; "
    "channel.uplink: aircomp: the slowest compute + n / B); on a known channel without "
    "faults, D^t",
    "bound": "the algorithm's convergence penalty of the round: gamma^t of Theorem 1 (SOFT and "
    "the LoRA algorithms without a bound of their own), FSLoRA's mean r^2 / k_i^2 (Theorem "
    "4.4); NaN when none is known (FLoRAL, H2Tune)",
    "solver_fallback": "P3 solver fallbacks in the round: solvers that failed before one "
    "answered (0: the first; controller.method = cvxpy: 1 if SCS rescued CLARABEL, 2 if both "
    "failed and the exact solver answered); energy_min: 1 when controller.round_time_s was "
    "below the round's least achievable time and the round took that least time",
    "loss": "training loss after aggregation (mean over arrived clients, data-weighted)",
    "accuracy": "test accuracy; NaN when the round is not evaluated",
    "test_loss": "test loss; NaN when the round is not evaluated",
    "cov_norm": "||Cov(theta_B, theta_A)||_F over the arrived clients (eq. 12); NaN if the "
    "algorithm does not measure it or fewer than two arrived",
    "orth_residual": "normalised orthogonality residual of the global LoRA (Fig. 2); NaN if the "
    "algorithm does not measure it",
    "wall_s": "wall-clock seconds the round took (training + simulation)",
}

#: The ``rounds.csv`` columns the readers of run folders need (the summaries, the study index,
#: the figures): every rounds.csv wirelessfl has written holds them; one that lacks any was cut
#: or edited, and is refused in one line naming the file and the columns.
CORE_ROUND_COLUMNS = (
    "round",
    "t_end_s",
    "delay_s",
    "sparsification",
    "bits_up",
    "queue_after",
    "rank",
    "accuracy",
)

EVENT_COLUMNS: dict[str, str] = {
    "round": "round index",
    "time_s": "virtual time of the event",
    "kind": "broadcast | drop | outage | unavailable | download_start | download_end | "
    "compute_start | compute_end | upload_start | upload_end | straggler | aggregate | "
    "handover (download_start and download_end: event-driven modes with "
    "channel.downlink_rate_bps; handover: a network of cells with moving clients)",
    "client": "client id (-1 for server events)",
    "value": "kind-specific number: bits for upload_end and download_end, clients aggregated "
    "for aggregate, the new cell for handover; event-driven modes: the version downloaded for "
    "download_start and compute_start",
}

CLIENT_COLUMNS: dict[str, str] = {
    "round": "round index",
    "client": "client id",
    "snr_db": "instantaneous SNR of the upload (at tx_power_w)",
    "share": "bandwidth share b_k^t (channel.uplink: aircomp: 1, the whole band)",
    "compute_s": "local compute duration",
    "upload_s": "upload duration (inf: no bandwidth)",
    "bits": "uplink payload bits (0 for dropped and outage clients)",
    "status": "arrived | dropped | outage | unavailable | straggler | excluded (channel.uplink: "
    "aircomp: left out by the power control policy, did not train)",
    "rank": "LoRA rank r_k planned for the client (0: no decision, outage)",
    "ratio": "sparsification O_k planned for the client (NaN: no decision, outage)",
    "bits_down": "downlink bits the server sent the client (0 if it did not train)",
    "tx_power_w": "transmit power of the client this round (the power control's P_max,k, or "
    "the controller's p_k <= P_max,k when it decides powers)",
    "compute_energy_j": "energy of the local training (0 if it did not train)",
    "transmit_energy_j": "energy of the upload: tx_power_w x the time it transmitted",
}

#: ``clients.csv``'s column after :data:`CLIENT_COLUMNS` when the run's controller decides
#: each client's CPU clock (``Controller.decides_cpu_frequency``; docs/simulator.md,
#: "Transmit power and CPU frequency as decisions").
CPU_CLOCK_COLUMNS: dict[str, str] = {
    "cpu_hz": "CPU clock f_k the client computed at [Hz], in [devices.energy.cpu_freq_min_hz, "
    "cpu_freq_hz] of its device class (NaN: outage, no decision)",
}

#: ``rounds.csv``'s columns after :data:`ROUND_COLUMNS` with ``channel.uplink: aircomp``
#: (docs/simulator.md, "Over-the-air aggregation"); there ``delay_s`` is the analog
#: transmission time n / B, ``bits_up`` and ``bits`` the messages' digital size (what FDMA
#: would send; the analog transmission carries their n dense values), ``share`` in
#: ``clients.csv`` 1 (the whole band) for a client that sends and ``tx_power_w`` its policy
#: power p_k.
AIRCOMP_ROUND_COLUMNS: dict[str, str] = {
    "aircomp_mse": "the power control's aggregation MSE per value, sum_k (c_k - 1)^2 + 1 / eta, "
    "over the scheduled clients not in outage (an excluded client adds 1), in units of the "
    "symbol power (NaN: all in outage)",
    "aircomp_snr_db": "10 log10 eta: the received SNR of an aligned client (the denoising "
    "factor; NaN: nobody sent)",
    "aircomp_excluded": "scheduled clients the power control policy excluded (truncation)",
}

#: ``rounds.csv``'s column after :data:`AIRCOMP_ROUND_COLUMNS` with
#: ``channel.aircomp.policy: optimal_fading`` (docs/simulator.md, "Fading with an average power")
AIRCOMP_FADING_ROUND_COLUMNS: dict[str, str] = {
    "aircomp_mean_price": "mean over the clients in the round's power control of the price "
    "nu_k = lambda_k average_power_w of their average power constraint, as the round used it "
    "(dimensionless; 0: no constraint binds yet; NaN: all in outage)",
}

#: ``rounds.csv``'s columns after :data:`ROUND_COLUMNS` with ``channel.uplink: nr``
#: (docs/simulator.md, "A 5G NR uplink")
NR_ROUND_COLUMNS: dict[str, str] = {
    "nr_prb_allocated": "fraction of the carrier's PRBs given to the round's uploads (prb_policy "
    "pf: nr_prb_utilisation)",
    "nr_prb_utilisation": "fraction of the carrier's PRB-slots carrying PUSCH from the first "
    "slot to the last upload's end (NaN: nobody sent)",
    "nr_mean_mcs": "mean MCS index of the round's new transport blocks",
    "nr_bler": "fraction of the round's transmissions NACKed (first and retransmissions)",
    "nr_transmissions": "transmissions of the round's uploads (slots x clients sending)",
}

#: ``clients.csv``'s columns after :data:`CLIENT_COLUMNS` with ``channel.uplink: nr`` (NaN for
#: a client that did not send)
NR_CLIENT_COLUMNS: dict[str, str] = {
    "nr_prbs": "PRBs the client held for its upload (prb_policy pf: its mean PRBs per "
    "transmission)",
    "nr_mean_mcs": "mean MCS index of its new transport blocks",
    "nr_transmissions": "its transmissions (slots it sent in)",
    "nr_bler": "fraction of its transmissions NACKed",
    "nr_goodput_bps": "bits delivered / (slots x slot duration) [bit/s]",
}

#: ``rounds.csv``'s columns after :data:`ROUND_COLUMNS` in the event-driven modes
#: (``server.mode`` async | buffered | semi_sync), where a row is one aggregation: ``round`` is
#: its index, ``t_start_s`` the previous aggregation's time (0 for the first), ``t_end_s`` its
#: own, ``n_arrived`` the updates it took, ``n_scheduled`` the clients dispatched since the
#: previous one (lost ones included), ``delay_s`` the longest upload it took, ``bits_up``,
#: ``index_bits`` and the SNR columns those of the updates it took, ``n_dropped``,
#: ``n_outage``, ``n_unavailable`` and ``n_stragglers`` the updates lost since the previous
#: one, the energy columns those of the updates it took and lost, ``bits_down`` the
#: dispatched clients' downloads. The controller decides per dispatch (docs/solvers.md,
#: "Per-dispatch step (asynchronous modes)"): ``queue`` is Q during the aggregation's period
#: (what its dispatches saw), ``queue_after`` Q after eq. (21) once per update taken, in
#: arrival order, with its compute + upload latency against ``controller.d_th_s``;
#: ``sparsification`` the mean ratio O_k the updates taken sent with, ``planned_delay_s`` the
#: mean of their planned latencies (compute + upload of their exact bits at the share 1/C),
#: ``bound`` the mean of their penalties gamma_k (K = C), ``solver_fallback`` the sum of their
#: decisions' fallbacks, ``energy_queue_mean_j`` the mean Z_k after the energy queues took each
#: device's energy of the updates taken and lost (NaN without ``controller.energy_budget_j``);
#: ``sparsification``, ``planned_delay_s`` and ``bound`` are NaN when nothing was taken.
EVENT_DRIVEN_ROUND_COLUMNS: dict[str, str] = {
    "version": "model version after the aggregation (aggregations done: round + 1)",
    "mean_staleness": "mean staleness tau of the updates taken (NaN: none taken)",
    "max_staleness": "largest staleness tau of the updates taken (NaN: none taken)",
    "n_in_flight": "clients dispatched and not yet aggregated after the aggregation",
}

#: ``clients.csv``'s columns in the event-driven modes: one row per update, by aggregation, the
#: taken ones in arrival order, then the ones lost since the previous aggregation.
UPDATE_COLUMNS: dict[str, str] = {
    "round": "index of the aggregation that took the update (a lost one: the first "
    "aggregation after it was lost)",
    "client": "client id",
    "status": "arrived (taken) | dropped | outage | unavailable | straggler (lost: at its "
    "dispatch, unavailable when its download, compute or upload ended, or still in flight "
    "faults.deadline_s after its dispatch)",
    "dispatch_s": "virtual time the client was dispatched (its download started)",
    "download_s": "duration of its download on the shared downlink (0 without "
    "channel.downlink_rate_bps; NaN: lost before its download ended)",
    "upload_start_s": "virtual time its upload started (its compute ended; NaN: lost before)",
    "arrival_s": "virtual time its upload ended at the server (NaN: lost)",
    "lost_s": "virtual time it was lost (NaN: taken)",
    "compute_s": "local compute duration (0: lost at its dispatch)",
    "upload_s": "upload duration on the shared band (arrival_s - upload_start_s)",
    "snr_db": "SNR of its upload (the channel at its dispatch)",
    "bits": "uplink payload bits (0: lost at its dispatch, did not train)",
    "bits_down": "downlink bits of its download (0: lost at its dispatch)",
    "rank": "LoRA rank r_k it trained",
    "ratio": "sparsification O_k it sent with",
    "version": "model version it started from (aggregations done at its dispatch)",
    "staleness": "tau = the aggregation's round - version: aggregations it missed (-1: lost)",
    "weight": "its server weight w: FedAsync's alpha s(tau), FedBuff's eta_g s(tau) / M "
    "(NaN: lost)",
    "tx_power_w": "its transmit power",
    "compute_energy_j": "energy of its local training (the part done, for a straggler cut "
    "while computing; 0 if its compute never started)",
    "transmit_energy_j": "energy of its upload: tx_power_w x the time it transmitted (to "
    "lost_s for a lost upload; 0 if its upload never started)",
}

DEVICE_COLUMNS: dict[str, str] = {
    "device": "device (client) id k, 0..n_clients-1",
    "rounds": "rounds the sums cover (rounds 0..rounds-1; equal to rounds.csv's rows when the "
    "file is current)",
    "compute_energy_j": "the device's compute energy summed over those rounds [J]",
    "transmit_energy_j": "the device's transmit energy summed over those rounds [J] (divide "
    "the sum of both by rounds: the time-average energy per round that "
    "controller.energy_budget_j bounds)",
}

#: ``summary.csv`` columns of the server-mode reproductions (``wirelessfl reproduce async-*``,
#: ``wirelessfl.study.async_figures.update_columns``), one row per run
STUDY_UPDATE_COLUMNS: dict[str, str] = {
    "updates_taken": "client updates the server aggregated (sum of n_arrived)",
    "updates_to_target": "client updates aggregated up to and including the first evaluation "
    "at or above the target accuracy (0 when the initial evaluation meets it; NaN: never)",
    "mean_staleness": "mean staleness tau over the aggregated updates (0 in synchronous rounds)",
    "max_staleness": "largest staleness tau of an aggregated update (0 in synchronous rounds)",
}

#: ``summary.csv`` columns of the energy reproductions (``wirelessfl reproduce energy-min-*``,
#: ``wirelessfl.study.energy_figures.energy_columns``), one row per run
STUDY_ENERGY_COLUMNS: dict[str, str] = {
    "round_energy_j": "mean over rounds of the energy all scheduled devices spent in a round, "
    "compute + transmit [J] (compute_energy_j + transmit_energy_j of rounds.csv)",
    "round_compute_energy_j": "its compute part [J]",
    "round_transmit_energy_j": "its transmit part [J]",
    "fallback_rounds": "rounds with a solver_fallback (energy_min: the limit T was below the "
    "round's least achievable time, and the round took that least time)",
}

#: ``summary.csv`` columns of the fixed-against-joint radio reproductions (``wirelessfl
#: reproduce energy-joint-accuracy-*``,
#: ``wirelessfl.study.joint_accuracy_figures.accuracy_energy_columns``), one row per run
STUDY_ACCURACY_ENERGY_COLUMNS: dict[str, str] = {
    "total_energy_j": "energy all devices spent over the run, compute + transmit [J] (sum of "
    "compute_energy_j + transmit_energy_j of rounds.csv)",
    "energy_to_target_j": "the same sum up to and including the first evaluation at or above "
    "the target accuracy [J] (0 when the initial evaluation meets it; NaN: never)",
}

#: ``energy_budget.csv`` columns of the energy-budget reproduction (``wirelessfl reproduce
#: energy-budget-joint``, ``wirelessfl.study.budget_figures.budget_table``), one row per run;
#: E_k is device k's time-average compute + transmit energy per round, Ē the budget
STUDY_BUDGET_COLUMNS: dict[str, str] = {
    "radio": "controller.radio",
    "energy_queue": "controller.energy_queue: every_round (E1), at_participation (E1') or "
    "signed (E1'')",
    "budget_j": "controller.energy_budget_j, Ē [J per device per round]",
    "seed": "the run's seed",
    "mean_rel_gap": "mean over devices of |E_k - Ē| / Ē",
    "within_5pct": "devices with |E_k - Ē| / Ē <= 5 %",
    "at_or_below": "devices with E_k <= 1.05 Ē",
    "devices": "N, the devices",
    "mean_energy_j": "mean over devices of E_k [J/round]",
    "queue_gap_j": "mean over devices of Z_k^T / T [J/round], the overspend the energy queue "
    "of (E1), (E1') or (E1'') still allows after the run's T rounds (replayed from "
    "clients.csv; negative under signed: credit left unspent)",
    "delay_busy_share": "share of rounds that start with a busy delay queue (Q > 0)",
    "accuracy": "the last evaluated accuracy (the surrogate's: no measure of learning)",
    "virtual_time_s": "the run's virtual time [s]",
    "target_rel_gap": "mean over devices of |E_k - T_k| / T_k, T_k = clip(Ē, E_lo,k, E_hi,k) "
    "the clipped target of the device's band (meta.json energy_band_j; NaN without a band: "
    "the fixed radio)",
    "within_5pct_of_target": "devices with |E_k - T_k| / T_k <= 5 % (NaN without a band)",
    "below_band": "devices whose budget is below E_lo,k (NaN without a band)",
    "above_band": "devices whose budget is above E_hi,k (NaN without a band)",
    "lost_drain_j": "mean over devices of (1/T) sum_t max(Ē - Z_k^t - E_k^t, 0) [J/round], the "
    "budget the queue could not bank (E_k = Ē + Z_k^T / T - this; NaN without a band); with "
    "energy_queue at_participation the cut at each round the device spends, of Ē times the "
    "rounds since its last, plus Ē times the rounds after its last; 0 with signed (no max)",
}

#: ``summary.csv`` columns of the NR gap reproductions (``wirelessfl reproduce nr-gap*``,
#: ``wirelessfl.study.nr_figures.nr_gap_columns``), one row per run
STUDY_NR_COLUMNS: dict[str, str] = {
    "mean_planned_delay_s": "mean over rounds of planned_delay_s [s]",
    "delay_over_plan": "mean delay_s over mean planned_delay_s",
    "meets_d_th": "1 when the time-average D^t is at most controller.d_th_s, else 0 (NaN: none)",
    "mean_nr_bler": "mean over rounds of nr_bler (NaN: another uplink)",
    "mean_nr_mcs": "mean over rounds of nr_mean_mcs (NaN: another uplink)",
}

#: ``summary.csv`` columns of the AirComp reproductions (``wirelessfl reproduce aircomp-*``,
#: ``wirelessfl.study.aircomp_figures.aircomp_columns``), one row per run
STUDY_AIRCOMP_COLUMNS: dict[str, str] = {
    "mean_aircomp_mse": "mean over rounds of aircomp_mse (NaN: an FDMA run)",
    "mean_aircomp_excluded": "mean over rounds of aircomp_excluded (NaN: an FDMA run)",
    "mean_client_transmit_energy_j": "mean over rounds of the transmit energy of a scheduled "
    "client, transmit_energy_j / n_scheduled of rounds.csv [J]",
    "mean_energy_floor_j": "FDMA with equal-delay shares under the band noise rule: mean over "
    "rounds of the least transmit energy per arrived client that scaling every client's power "
    "down by one factor reaches, mean_k p_k ln 2 / B * sum_j bits_j / SNR_j [J] (the limit of "
    "a vanishing power; NaN: AirComp, another share or noise rule, or no clients.csv)",
}

#: ``summary.csv`` columns of the many-cell reproductions (``wirelessfl reproduce cells-*``,
#: ``wirelessfl.study.cells_figures.cells_columns``), one row per run
STUDY_CELLS_COLUMNS: dict[str, str] = {
    "mean_cell_delay_s": "mean over cells and rounds of cells.csv's delay_s (each cell's D^t)",
    "mean_cell_planned_s": "mean over cells and rounds of cells.csv's planned_delay_s",
    "mean_cell_queue": "mean over cells of the last round's queue_after (each cell's Q^T)",
    "cells_meeting_d_th": "share of cells whose time-average D^t is at most controller.d_th_s",
    "mean_sinr_db": "mean SINR of every upload [dB]",
    "edge_sinr_db": "mean SINR of the cell-edge clients' uploads (the fifth of the clients of "
    "highest coupling loss to their serving site) [dB]",
    "edge_upload_s": "mean upload time of the cell-edge clients' arrived uploads [s]",
    "cloud_rounds_to_target": "cloud aggregations up to the first evaluation at the target "
    "accuracy (NaN: not reached)",
    "edge_rounds_to_target": "edge rounds up to the first evaluation at the target accuracy "
    "(NaN: not reached)",
}

#: ``rounds.csv``'s columns after the algorithm's when the run has DP (docs/privacy.md): the
#: first three with client-level DP (``privacy.mode`` central | local), the last with
#: ``privacy.dp_sgd``.
PRIVACY_COLUMNS: dict[str, str] = {
    "dp_epsilon": "epsilon of client-level DP after the round, at privacy.delta, by Opacus's "
    "accountant (central: the aggregations that took an update so far, at q = K/N or 1, and "
    "q = 1 in the event-driven server modes; local: the device that sent most often, q = 1, "
    "event-driven: counted at each dispatch)",
    "dp_clip_norm": "C the round clipped each client's shared update to (adaptive clipping: "
    "the current estimate)",
    "dp_clipped_fraction": "fraction of the arrived updates whose norm exceeded C (NaN: none "
    "arrived)",
    "dp_sgd_epsilon": "epsilon of sample-level DP-SGD after the round (privacy.dp_sgd), at "
    "privacy.delta: the largest over the devices of their local steps so far at q = B / |D_k|",
}

#: ``summary.csv`` columns of the privacy reproductions (``wirelessfl reproduce dp-*``,
#: ``wirelessfl.study.privacy_figures.privacy_columns``), one row per run
STUDY_PRIVACY_COLUMNS: dict[str, str] = {
    "final_dp_sgd_epsilon": "dp_sgd_epsilon of the last round (inf: no DP-SGD)",
    "final_dp_epsilon": "dp_epsilon of the last round (inf: no client-level DP)",
}

#: Prefix of the columns holding an algorithm's own metrics.
ALGORITHM_PREFIX = "algo."


def algorithm_column(metric: str) -> str:
    """The ``rounds.csv`` column of an algorithm metric: ``algo.<metric>``."""
    return ALGORITHM_PREFIX + metric


def metric_column(metric: str) -> str:
    """The ``rounds.csv`` column of a learner metric: the standard column of that name, a
    :data:`PRIVACY_COLUMNS` one, else ``algo.<metric>``."""
    return (
        metric if metric in ROUND_COLUMNS or metric in PRIVACY_COLUMNS else algorithm_column(metric)
    )


def algorithm_columns(metrics: dict[str, str]) -> dict[str, str]:
    """Column -> doc for a learner's metrics that are not standard round columns (the
    algorithm's ``algo.<name>`` ones and the DP stage's)."""
    return {metric_column(k): doc for k, doc in metrics.items() if k not in ROUND_COLUMNS}
