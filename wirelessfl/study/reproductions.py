"""Named reproductions: scenario, grids, claim, target and drawing.

The SOFT/TSFA paper's section V figures (``fig3ab`` ... ``dpp``, shipped scenarios under
``paper/``), the FSLoRA paper's claims at offline scale (``fslora-*``, under ``fslora/``),
FLoRAL's (``floral-*``, under ``floral/``), H2Tune's (``h2tune-*``, under ``h2tune/``) and
FedBuff's and FedScale's claim on the server modes (``async-*``, under ``async/``), Yang et
al.'s energy against the completion-time limit and the devices (``energy-min-*``, under
``energy/``) and the energy budget with the joint radio (``energy-budget-joint``, under
``energy/``) and accuracy against time and energy with the fixed and the joint radio
(``energy-joint-accuracy-*``, under ``energy/``) and against the joint radio's energy price
(``energy-price-umi``); docs/results.md has a section per claim.

Every accuracy figure is drawn twice, against the round index (``<stem>.png``, as the paper
draws it) and against cumulative virtual time (``<stem>_time.png``, the latency–accuracy view:
a larger rank or a denser payload makes each round longer). ``target_accuracy`` is the stated
accuracy whose time-to-target (virtual seconds and uplink bits) goes into ``summary.csv``.
``reference`` names the method every other run is compared with, seed by seed
(:mod:`wirelessfl.study.paired`: ``paired.csv``, docs/statistics.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from wirelessfl.study.aircomp_figures import (
    aircomp_columns,
    default_study_tables,
    draw_by_k,
    draw_by_snr,
    draw_default_study,
    draw_latency,
    snr_study_tables,
)
from wirelessfl.study.async_figures import draw_modes, update_columns
from wirelessfl.study.budget_figures import draw_budget
from wirelessfl.study.energy_figures import SCHEME_KEY, draw_energy, energy_columns, trend_table
from wirelessfl.study.figures import (
    accuracy_both_ways,
    draw_hetero,
    draw_ratios,
    save_figure,
)
from wirelessfl.study.floral_figures import draw_adaptors, draw_methods, draw_synthetic
from wirelessfl.study.h2tune_figures import draw_ablation, draw_comparison
from wirelessfl.study.joint_accuracy_figures import (
    PRICE_KEY,
    RADIO_KEY,
    accuracy_energy_columns,
    draw_joint_accuracy,
    radio_tables,
)
from wirelessfl.study.paired import Reference
from wirelessfl.study.privacy_figures import draw_dp_ffa, drop_table, privacy_columns

FULL_TRAINING = ["n_clients=100", "n_scheduled=10", "rounds=200", "eval_every=10"]
SPARSIFIERS = ["soft", "topk", "random", "structured"]
#: Fig. 3(a)/(b) where LoRA carries the learning: every sparsifier at r in {4, 8} and
#: O in {0.5, 0.1}, and dense ILoRA (no O) at both ranks.
SPARSIFIERS_AT_TWO_RATIOS = {
    "sparsified": {
        "compression.sparsifier": SPARSIFIERS,
        "controller.rank": [4, 8],
        "controller.sparsification": [0.5, 0.1],
    },
    "dense": {"compression.sparsifier": ["none"], "controller.rank": [4, 8]},
}
#: The FSLoRA paper's GLUE scale (Appendix A): every one of N = 20 devices in each of 200
#: rounds, H = 50 local steps of batch 16, 128-token inputs.
FSLORA_FULL = [
    "n_scheduled=20",
    "rounds=200",
    "eval_every=10",
    "learner.local_steps=50",
    "learner.batch_size=16",
    "learner.dataset_options.max_length=128",
    "learner.dataset_options.max_test=null",
]


def floral_methods(
    n_clusters: int, rhos: tuple[float, ...] = (0.01,), floral: dict | None = None
) -> dict[str, dict]:
    """Table 1's methods as sweeps (each sets the whole strategy section, so one scenario
    serves every algorithm): FedAvg, Local Adaptor, Ensemble and FLoRAL(rhos[0]) with a
    learned and the oracle router, FLoRAL at the other rhos with a learned router; C = the
    task's clusters. ``floral``: further FLoRAL settings (the grid replaces the scenario's
    ``strategy`` section, so a scenario's ``strategy.floral`` table must be repeated here)."""
    routers = [{"router": "learned"}, {"router": "oracle"}]
    extra = dict(floral or {})
    return {
        "fedavg": {"algorithm.name": ["fedavg_full"], "strategy": [{}]},
        "local": {"algorithm.name": ["floral_local"], "strategy": [{}]},
        "ensemble": {
            "algorithm.name": ["ensemble"],
            "strategy": [{"n_members": n_clusters, **r} for r in routers],
        },
        "floral": {
            "algorithm.name": ["floral"],
            "strategy": [{"n_adaptors": n_clusters, "rho": rhos[0], **r, **extra} for r in routers]
            + [{"n_adaptors": n_clusters, "rho": rho, **routers[0], **extra} for rho in rhos[1:]],
        },
    }


#: Table 1's MNIST methods (C = 4; FLoRAL at rho = 1 % and 10 %) on both concept shifts.
FLORAL_MNIST = {
    name: {**grid, "learner.dataset": ["mnist_rotate", "mnist_label_shift"]}
    for name, grid in floral_methods(4, (0.01, 0.1)).items()
}
#: The same on reduced MNIST, with FLoRAL's router lr 0.3 of scenarios/floral/mnist_reduced.yaml
#: (the authors' reduced runs).
FLORAL_MNIST_REDUCED = {
    name: {**grid, "learner.dataset": ["mnist_rotate", "mnist_label_shift"]}
    for name, grid in floral_methods(4, (0.01, 0.1), {"router_lr": 0.3}).items()
}


def h2tune_devices(large_flops_per_s: float, small_flops_per_s: float) -> dict:
    """``devices`` of ``scenarios/h2tune/hybrid.yaml``: clients 0-3 (MiniLM-L6, the large
    model) at one speed, clients 4-7 (3-block MiniLM, random 4-block BERT) at another."""
    speeds = [large_flops_per_s] * 4 + [small_flops_per_s] * 4
    return {"kind": "listed", "per_client_flops_per_s": speeds}


#: H2Tune and its baselines, with the large-model clients on slow (1e10 FLOP/s) devices and
#: the small-model clients on fast (1e11) ones, and the other way round.
H2TUNE_METHODS = {
    "methods": {
        "algorithm.name": ["h2tune", "h2tune_local", "fllm", "h2tune_hetlora"],
        "devices": [h2tune_devices(1.0e10, 1.0e11), h2tune_devices(1.0e11, 1.0e10)],
    }
}


def server_modes(
    *,
    k: int,
    updates: int,
    eval_updates: int,
    concurrency: int,
    semi_sync_deadline_s: float,
    semi_sync_rounds: int,
    semi_sync_eval_every: int,
) -> dict[str, dict]:
    """Sync, semi-sync, buffered and async rounds as sweeps (docs/results.md, "Asynchronous
    rounds"). Sync, buffered and async aggregate the same ``updates`` client updates (sync:
    updates / k rounds of k clients; buffered: M = k, updates / k aggregations; async: one
    update per aggregation) and evaluate every ``eval_updates`` updates. Buffered and async
    keep ``concurrency`` clients training at once; semi-sync keeps k, as sync, and aggregates
    every ``semi_sync_deadline_s`` what arrived, for ``semi_sync_rounds`` aggregations."""
    return {
        "sync": {
            "server.mode": ["sync"],
            "rounds": [updates // k],
            "eval_every": [eval_updates // k],
        },
        "semi_sync": {
            "server.mode": ["semi_sync"],
            "server.concurrency": [k],
            "server.deadline_s": [semi_sync_deadline_s],
            "rounds": [semi_sync_rounds],
            "eval_every": [semi_sync_eval_every],
        },
        "buffered": {
            "server.mode": ["buffered"],
            "server.concurrency": [concurrency],
            "server.buffer_size": [k],
            "rounds": [updates // k],
            "eval_every": [eval_updates // k],
        },
        "async": {
            "server.mode": ["async"],
            "server.concurrency": [concurrency],
            "rounds": [updates],
            "eval_every": [eval_updates],
        },
    }


#: the modes against synchronous rounds at the same seed; each mode's settings (concurrency,
#: buffer, deadline, rounds, evaluations) are part of the method, not a context
SYNC_REFERENCE = Reference(
    {"server.mode": "sync"},
    keys=("server.concurrency", "server.buffer_size", "server.deadline_s", "rounds", "eval_every"),
    metrics=("time_to_target_s", "updates_to_target", "bits_to_target", "final_accuracy"),
    label="sync",
)


#: Yang et al.'s four schemes (``controller.energy_scheme``): the proposed joint optimisation
#: and its baselines
ENERGY_SCHEMES = ["joint", "equal_bandwidth", "max_power", "max_frequency"]
#: the schemes against the proposed one at the same seed and the same T or K (the context)
JOINT_REFERENCE = Reference(
    {SCHEME_KEY: "joint"},
    metrics=("round_energy_j", "round_compute_energy_j", "round_transmit_energy_j"),
    label="joint",
)


def radio_sweeps(
    budgets_j: list[float | None], priced_budget_j: float
) -> dict[str, dict[str, list]]:
    """The joint and the fixed radio at each energy budget of ``budgets_j`` [J per device per
    round, time-average; None: no budget, no energy queues], and the joint radio with the
    energy price ``PRICED_ENERGY_PRICE`` at ``priced_budget_j`` (sweep ``joint-priced``). The
    fixed radio's online stage plans with noise over the whole band and refuses noise on the
    share, so its sweep sets ``channel.noise_bandwidth: band``: its rates are
    b B log2(1 + SNR), the joint radio's b B log2(1 + SNR / b)."""
    return {
        "joint": {RADIO_KEY: ["joint"], "controller.energy_budget_j": budgets_j},
        "fixed": {
            RADIO_KEY: ["fixed"],
            "channel.noise_bandwidth": ["band"],
            "controller.energy_budget_j": budgets_j,
        },
        "joint-priced": {
            RADIO_KEY: ["joint"],
            PRICE_KEY: [PRICED_ENERGY_PRICE],
            "controller.energy_budget_j": [priced_budget_j],
        },
    }


#: the energy price μ of the priced joint radio [per J] (docs/solvers.md, (E4)): the joint
#: step prices every scheduled device's energy at ω Z_k + μ
PRICED_ENERGY_PRICE = 0.01

#: the joint radio, with and without the energy price, against the fixed one at the same seed
#: and budget
FIXED_RADIO_REFERENCE = Reference(
    {RADIO_KEY: "fixed"},
    keys=("channel.noise_bandwidth", PRICE_KEY),
    metrics=(
        "final_accuracy",
        "virtual_time_s",
        "total_energy_j",
        "time_to_target_s",
        "energy_to_target_j",
    ),
    label="fixed radio",
)
#: energy-joint-accuracy-umi's budget [J per device per round]: under every device's energy
#: with the fixed radio and no budget (0.0041-0.0109 J, seed 0), above every floor (compute at
#: 2 GHz: at most 6e-5 J)
UMI_BUDGET_J = 0.004
#: energy-price-umi's energy prices μ [per J]: 0 (the default) and 1e-6 to 1 (1e-6 and 1e-4
#: look for the price below which the step stops pricing the devices whose queue is empty)
ENERGY_PRICES = [0.0, 1.0e-6, 1.0e-4, 0.001, 0.01, 0.1, 1.0]
#: energy-joint-accuracy-default's budget [J per device per round]: under the fixed radio's
#: mean energy without a budget (0.175 J, seed 0, first 8 rounds), above every device's floor
#: with it (compute at 2 GHz, 5 of 20 rounds: 0.045 J; 0.0028 J at 0.5 GHz)
DEFAULT_BUDGET_J = 0.1


def energy_trend(x_key: str) -> Callable[[Any], dict[str, Any]]:
    """The ``tables`` of an energy reproduction: ``energy_trend`` (:func:`trend_table` of the
    energy per round along ``x_key``)."""

    def tables(summary) -> dict[str, Any]:
        return {"energy_trend": trend_table(summary, x_key)}

    return tables


@dataclass(frozen=True)
class Reproduction:
    """A figure: its scenario, its sweeps (name -> grid) and how to draw it.

    ``target_accuracy`` is None where accuracy is not a claim (network-only runs, whose accuracy
    is the surrogate's). ``reference`` is the method the claim compares the others with
    (paired differences per seed, ``paired.csv``); None where there is no such claim.
    """

    scenario: str  # path under SCENARIO_DIR (wirelessfl/scenarios/)
    sweeps: dict[str, dict[str, list]]
    claim: str
    target_accuracy: float | None = None
    seeds: int = 1  # seeds per grid point when ``--seeds`` is not given
    full: list[str] = field(default_factory=lambda: list(FULL_TRAINING))
    full_sweeps: dict[str, dict[str, list]] | None = None
    draw: Callable[[Path, list], list[Path]] | None = None
    reference: Reference | None = None
    #: further ``summary.csv`` columns of one run: (its loaded results, the target accuracy)
    #: -> column -> value
    run_columns: Callable[[Any, float | None], dict[str, float]] | None = None
    #: further tables of the whole reproduction: the summary table -> name -> table, each
    #: written to ``<name>.csv`` next to ``summary.csv``
    tables: Callable[[Any], dict[str, Any]] | None = None


#: the sparsifier figures: every sparsifier (and dense ILoRA) against SOFT at the same rank
#: and sparsification (ILoRA, which has none, against SOFT at each)
SOFT_REFERENCE = Reference({"compression.sparsifier": "soft"}, label="SOFT")
#: Table 1's methods against FedAvg on the same task
FEDAVG_REFERENCE = Reference({"algorithm.name": "fedavg_full"}, keys=("strategy",), label="FedAvg")
#: the synthetic tasks' claims are about the test loss (``final_test_loss``: lower is better)
FEDAVG_SYNTHETIC = Reference(
    {"algorithm.name": "fedavg_full"},
    keys=("strategy",),
    metrics=("final_test_loss",),
    label="FedAvg",
)


def _sparsifier_panels(tag: str = "") -> Callable[[Path, list], list[Path]]:
    """Fig. 3(a)/(b): one panel per rank, and per O when the sweep varies it; files
    ``fig3<a|b><tag>_rank<r>[_O<O>]``."""

    def draw(out: Path, runs: list) -> list[Path]:
        from wirelessfl.results.groups import config_value

        paths = []
        ratios = sorted({float(config_value(r, "controller.sparsification")) for r in runs})
        for panel, rank in (("a", 4), ("b", 8)):
            for ratio in ratios:
                chosen = [
                    r
                    for r in runs
                    if config_value(r, "controller.rank") == rank
                    and (
                        config_value(r, "compression.sparsifier") == "none"
                        or float(config_value(r, "controller.sparsification")) == ratio
                    )
                ]
                if not chosen:
                    continue
                suffix = "" if len(ratios) == 1 else f"_O{ratio:g}"
                label = f" ({tag.strip('_').replace('_', ' ')} head)" if tag else ""
                title = f"Fig. 3({panel}){label}: sparsifiers at r = {rank}, O = {ratio:g}"
                paths += accuracy_both_ways(
                    out, chosen, f"fig3{panel}{tag}_rank{rank}{suffix}", title
                )
        return paths

    return draw


def _draw_fig3c(out: Path, runs: list) -> list[Path]:
    return accuracy_both_ways(out, runs, "fig3c", "Fig. 3(c): TSFA vs OSFA")


def _draw_fig45(out: Path, runs: list) -> list[Path]:
    from wirelessfl.plots import cov_norm

    fig4 = cov_norm(runs)
    fig4.axes[0].set_title("Fig. 4: ||Cov(theta_B, theta_A)||_F vs shards")
    paths = [save_figure(fig4, out / "fig4_cov.png")]
    return paths + accuracy_both_ways(out, runs, "fig5_accuracy", "Fig. 5: accuracy vs shards")


def _outage_label(threshold_db: float | None) -> str:
    if threshold_db is None:
        return "no outage cut-off"
    return f"outage below {threshold_db:g} dB"


def _draw_dpp(out: Path, runs: list) -> list[Path]:
    """Time-average delay, bound and queue against V: one line per outage setting, the mean
    over seeds (min–max shaded)."""
    import pandas as pd
    from matplotlib.figure import Figure

    from wirelessfl.results.groups import config_value

    rows = pd.DataFrame(
        {
            "V": float(config_value(r, "controller.V")),
            "case": _outage_label(config_value(r, "faults.outage_snr_db")),
            "delay": float(r.rounds.delay_s.mean()),
            "bound": float(r.rounds.bound.mean()),
            "queue": float(r.rounds.queue_after.mean()),
        }
        for r in runs
    )
    fig = Figure(figsize=(11, 3.2))
    axes = fig.subplots(1, 3)
    panels = (
        ("delay", "time-average D^t [s]"),
        ("bound", "time-average bound gamma^t"),
        ("queue", "time-average Q^t"),
    )
    for label, part in rows.groupby("case", sort=True):
        stats = part.groupby("V")[["delay", "bound", "queue"]].agg(["mean", "min", "max"])
        for ax, (column, _) in zip(axes, panels, strict=True):
            (line,) = ax.plot(stats.index, stats[column]["mean"], "o-", label=label)
            ax.fill_between(
                stats.index,
                stats[column]["min"],
                stats[column]["max"],
                color=line.get_color(),
                alpha=0.2,
            )
    for ax, (column, ylabel) in zip(axes, panels, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("linear" if column == "delay" else "log")
        ax.set_xlabel("V")
        ax.set_ylabel(ylabel)
    axes[0].axhline(
        float(config_value(runs[0], "controller.d_th_s")), color="k", ls=":", label="D_th"
    )
    axes[0].legend(fontsize=7)
    fig.suptitle(
        "Drift-plus-penalty with and without an outage cut-off: time-average delay, "
        "bound and queue against V (mean over seeds, min–max shaded)"
    )
    fig.tight_layout()
    return [save_figure(fig, out / "dpp_tradeoff.png")]


#: DP-SGD's noise multipliers of ``dp-ffa``: on ``privacy/dp_digits.yaml`` (iid, |D_k| = 71 or 72,
#: B = 16, 5 local steps, K = 5 of N = 20 for 20 rounds) they reach epsilon about 7 and 2 at
#: delta 1e-5 on the device that trained most (the runs report what each reached)
DP_SGD_SIGMAS = [1.4, 3.5]
#: FFA-LoRA's claim: each DP run against the same algorithm's run without DP, seed by seed
#: (the algorithm is the context, the noise multiplier the method)
NO_DP_REFERENCE = Reference(
    {"privacy.dp_sgd": False}, keys=("privacy.sample_noise_multiplier",), label="no DP"
)

#: DP-SGD's noise multipliers of ``dp-minilm``: on ``privacy/dp_minilm.yaml`` (iid, |D_k| = 492
#: to 510 by seed, B = 8, 8 local steps, K = 2 of N = 20 for 10 rounds; the device that trains
#: most sends in 3 rounds at seeds 0 to 4) Opacus's RDP accountant gives epsilon 26, 8.3-8.4
#: and 1.95-1.98 at delta 1e-5 (the runs report what each reached)
DP_SGD_SIGMAS_MINILM = [0.3, 0.48, 0.85]
#: DP-SGD's noise multipliers of ``dp-default``: on ``privacy/dp_default.yaml`` (iid, |D_k| = 200,
#: B = 32, 5 local steps, K = 5 of N = 20 for 20 rounds; the device that trains most sends in 7,
#: 9 and 8 rounds at seeds 0, 1 and 2) Opacus's RDP accountant gives epsilon 7.8-8.7 and
#: 2.0-2.3 at delta 1e-5 (the runs report what each reached)
DP_SGD_SIGMAS_DEFAULT = [1.0, 2.4]

#: budgets [J per device per round]: 0.2 J, below the low-end phones' E_lo (0.29-0.30 J, seeds
#: 0-4) and above every other device's, then 0.4, 0.6, 0.9 and 1.2 J, inside every device's band
#: in every seed (their common band is [0.30, 1.33] J), and 3 J, above every device's E_hi
#: (at most 2.56 J; docs/results.md)
ENERGY_BUDGETS_J = [0.2, 0.4, 0.6, 0.9, 1.2, 3.0]
#: the AirComp study: every FDMA uplink against AirComp at the same K (or SNR) and seed
AIRCOMP_REFERENCE = Reference(
    {"channel.uplink": "aircomp"},
    keys=(
        "algorithm.name",
        "compression.ratio",
        "controller.sparsification",
        "quantize.bits",
        "payload.index_overhead",
    ),
    metrics=("mean_delay_s",),
    label="AirComp",
)
#: the digital uploads' compression in the AirComp study: a ratio O = 0.1 fixed for SOFT and
#: top-k, b = 4 bits per value for the quantised ones
AIRCOMP_RATIO = 0.1
AIRCOMP_BITS = 4


def uplinks(
    key: str, values: list, names: tuple[str, ...] | None = None
) -> dict[str, dict[str, list]]:
    """The AirComp study's sweeps over ``key``: AirComp, and FDMA dense, dense at b bits,
    SOFT at O fixed, top-k at O and top-k at O and b bits (labels in
    :data:`~wirelessfl.study.aircomp_figures.UPLINK_LABELS`); only ``names``, in that order,
    where given. The sparse uploads carry their index bits (``payload.index_overhead``): they
    are compared with dense and analog uploads, which need none (docs/simulator.md, "Index
    bits")."""
    fdma = {"channel.uplink": ["fdma"], key: values}
    sparse = {**fdma, "payload.index_overhead": [True]}
    topk = {**sparse, "algorithm.name": ["fedit_topk"], "compression.ratio": [AIRCOMP_RATIO]}
    every = {
        "aircomp": {"channel.uplink": ["aircomp"], key: values},
        "fdma_dense": fdma,
        "fdma_dense_4bit": {**fdma, "quantize.bits": [AIRCOMP_BITS]},
        "fdma_soft": {
            **sparse,
            "algorithm.name": ["soft"],
            "controller.sparsification": [AIRCOMP_RATIO],
        },
        "fdma_topk": topk,
        "fdma_topk_4bit": {**topk, "quantize.bits": [AIRCOMP_BITS]},
    }
    return every if names is None else {name: every[name] for name in names}


#: the AirComp study in real training: the latency reference's pairing on time, final accuracy and
#: time to target (each FDMA upload against AirComp at the same K and seed)
AIRCOMP_ACCURACY_REFERENCE = Reference(
    {"channel.uplink": "aircomp"},
    keys=AIRCOMP_REFERENCE.keys,
    metrics=("mean_delay_s", "final_accuracy", "time_to_target_s"),
    label="AirComp",
)


#: the full-length default study's pairing: FDMA dense against AirComp at the same K and seed
AIRCOMP_DENSE_REFERENCE = Reference(
    {"channel.uplink": "aircomp"}, metrics=AIRCOMP_ACCURACY_REFERENCE.metrics, label="AirComp"
)


def aircomp_default_sweeps() -> dict[str, dict[str, list]]:
    """``aircomp-default``'s uplinks: AirComp, FDMA dense, SOFT, dense at 4 bits and top-k at
    K = 5 ... 50; top-k at 4 bits left out (the latency study has it)."""
    names = ("aircomp", "fdma_dense", "fdma_soft", "fdma_dense_4bit", "fdma_topk")
    return uplinks("n_scheduled", [5, 10, 20, 50], names)


def aircomp_default_full_sweeps() -> dict[str, dict[str, list]]:
    """``aircomp-default-full``'s uplinks: AirComp and FDMA dense at K = 5 ... 50, the two the
    claims compare, over the default task's whole length."""
    cut = aircomp_default_sweeps()
    return {name: cut[name] for name in ("aircomp", "fdma_dense")}


def aircomp_snr_study(
    scenario: str, k: int, stem: str, task: str, target_accuracy: float
) -> Reproduction:
    """An AirComp study against the SNR on a real task: AirComp and FDMA dense at K = ``k``
    and a mean SNR of 0, 10 and 20 dB (10 dB is the scenario's own, so that point is its K
    study's), FDMA paired with AirComp at each SNR, 5 seeds; ``by_snr.csv`` and the figures
    of :func:`~wirelessfl.study.aircomp_figures.draw_by_snr` (``stem``, ``task``)."""
    by_snr = uplinks("channel.mean_snr_db", [0.0, 10.0, 20.0], ("aircomp", "fdma_dense"))
    return Reproduction(
        scenario=scenario,
        sweeps={name: {**grid, "n_scheduled": [k]} for name, grid in by_snr.items()},
        claim=f"Zhu et al.: on {task} at K = {k}, the upload time of over-the-air aggregation "
        "does not depend on the SNR while FDMA's falls as it rises, and at low SNR its "
        "aggregation noise costs accuracy against FDMA's exact aggregate",
        target_accuracy=target_accuracy,
        seeds=5,
        full=[],
        draw=draw_by_snr(stem, task, k),
        reference=AIRCOMP_DENSE_REFERENCE,
        run_columns=aircomp_columns,
        tables=snr_study_tables,
    )


def aircomp_minilm_sweeps() -> dict[str, dict[str, list]]:
    """``aircomp-minilm``'s uplinks: AirComp, FDMA dense, SOFT, top-k and dense at 4 bits at
    K = 5, 10 and 20 (of N = 20: K = 20 is full participation; a run costs about K / 5 times a
    K = 5 one on a CPU); top-k at 4 bits left out, as in ``aircomp-default``."""
    names = ("aircomp", "fdma_dense", "fdma_soft", "fdma_topk", "fdma_dense_4bit")
    return uplinks("n_scheduled", [5, 10, 20], names)


def aircomp_minilm_50_sweeps() -> dict[str, dict[str, list]]:
    """``aircomp-minilm-50``'s uplinks: ``aircomp-minilm``'s five at K = 5 and 50 of N = 50 (the
    MiniLM task split over 50 clients; K = 5 anchors the growth with K)."""
    return uplinks("n_scheduled", [5, 50], tuple(aircomp_minilm_sweeps()))


def dp_ffa_sweeps(sigmas: list[float]) -> dict[str, dict[str, list]]:
    """FedIT and FFA-LoRA without DP and under DP-SGD at each noise multiplier in ``sigmas``."""
    return {
        "no_dp": {"algorithm.name": ["fedit", "ffa_lora"], "privacy.dp_sgd": [False]},
        "dp_sgd": {
            "algorithm.name": ["fedit", "ffa_lora"],
            "privacy.dp_sgd": [True],
            "privacy.sample_noise_multiplier": sigmas,
        },
    }


def dp_sparsifier_sweeps(sigma: float) -> dict[str, dict[str, list]]:
    """SOFT's importance sparsifier and top-k at O = 0.25 with error feedback, and the dense
    upload, all under DP-SGD at noise multiplier ``sigma``."""
    dp_sgd = {"privacy.dp_sgd": [True], "privacy.sample_noise_multiplier": [sigma]}
    return {
        "sparsified": {
            "algorithm.name": ["soft"],
            "compression.sparsifier": ["soft", "topk"],
            "controller.sparsification": [0.25],
            **dp_sgd,
        },
        "dense": {"algorithm.name": ["soft"], "compression.sparsifier": ["none"], **dp_sgd},
    }


REPRODUCTIONS: dict[str, Reproduction] = {
    "dp-ffa": Reproduction(
        scenario="privacy/dp_digits.yaml",
        sweeps=dp_ffa_sweeps(DP_SGD_SIGMAS),
        claim="FFA-LoRA (Sun et al., Table 1): under DP-SGD, FFA-LoRA's accuracy degrades less "
        "than LoRA's (FedIT) as epsilon shrinks",
        target_accuracy=0.8,
        seeds=3,
        full=[],
        draw=draw_dp_ffa,
        reference=NO_DP_REFERENCE,
        run_columns=privacy_columns,
        tables=drop_table,
    ),
    "dp-minilm": Reproduction(
        scenario="privacy/dp_minilm.yaml",
        sweeps=dp_ffa_sweeps(DP_SGD_SIGMAS_MINILM),
        claim="FFA-LoRA (Sun et al., Table 1) on a pretrained model: under DP-SGD, FFA-LoRA's "
        "accuracy degrades less than LoRA's (FedIT) as epsilon shrinks, and stays above it",
        target_accuracy=0.65,
        seeds=5,
        full=[],
        draw=partial(draw_dp_ffa, stem="dp_minilm"),
        reference=NO_DP_REFERENCE,
        run_columns=privacy_columns,
        tables=drop_table,
    ),
    "dp-default": Reproduction(
        scenario="privacy/dp_default.yaml",
        sweeps=dp_ffa_sweeps(DP_SGD_SIGMAS_DEFAULT),
        claim="FFA-LoRA (Sun et al., Table 1) on the default task: under DP-SGD, FFA-LoRA's "
        "accuracy degrades less than LoRA's (FedIT) as epsilon shrinks, and stays above it",
        target_accuracy=0.5,
        seeds=5,
        full=[],
        draw=partial(draw_dp_ffa, stem="dp_default"),
        reference=NO_DP_REFERENCE,
        run_columns=privacy_columns,
        tables=drop_table,
    ),
    "dp-sparsifiers": Reproduction(
        scenario="privacy/dp_digits.yaml",
        sweeps=dp_sparsifier_sweeps(DP_SGD_SIGMAS[0]),
        claim="at a fixed DP-SGD noise (epsilon about 7), SOFT's importance sparsifier reaches "
        "the accuracy of top-k in no more virtual time, and both before the dense upload",
        target_accuracy=0.8,
        seeds=3,
        full=[],
        draw=lambda out, runs: accuracy_both_ways(
            out, runs, "dp_sparsifiers", "SOFT, top-k and dense under DP-SGD"
        ),
        reference=SOFT_REFERENCE,
        run_columns=privacy_columns,
    ),
    "dp-sparsifiers-default": Reproduction(
        scenario="privacy/dp_default.yaml",
        sweeps=dp_sparsifier_sweeps(DP_SGD_SIGMAS_DEFAULT[0]),
        claim="on the default task at a fixed DP-SGD noise (epsilon about 8), SOFT's importance "
        "sparsifier reaches the accuracy of top-k in no more virtual time, and both before the "
        "dense upload",
        target_accuracy=0.35,
        seeds=5,
        full=[],
        draw=lambda out, runs: accuracy_both_ways(
            out, runs, "dp_sparsifiers_default", "SOFT, top-k and dense under DP-SGD (default task)"
        ),
        reference=SOFT_REFERENCE,
        run_columns=privacy_columns,
    ),
    "fig3ab": Reproduction(
        scenario="paper/fig3ab_sparsifiers.yaml",
        sweeps={
            "sparsifiers": {
                "compression.sparsifier": [*SPARSIFIERS, "none"],
                "controller.rank": [4, 8],
            }
        },
        claim="SOFT keeps higher accuracy than TLoRA, SLoRA and RLoRA at O = 0.5; ILoRA bounds it",
        target_accuracy=0.7,
        draw=_sparsifier_panels(),
        reference=SOFT_REFERENCE,
    ),
    "fig3ab_frozen": Reproduction(
        scenario="paper/fig3ab_frozen_head.yaml",
        sweeps=SPARSIFIERS_AT_TWO_RATIOS,
        claim="with only LoRA learning (frozen head), SOFT beats TLoRA, SLoRA and RLoRA; "
        "ILoRA bounds it",
        target_accuracy=0.6,
        draw=_sparsifier_panels("_frozen"),
        reference=SOFT_REFERENCE,
    ),
    "fig3ab_verbalizer": Reproduction(
        scenario="paper/fig3ab_verbalizer.yaml",
        sweeps=SPARSIFIERS_AT_TWO_RATIOS,
        claim="on a verbalizer task (the pretrained LM head classifies, only LoRA trains and "
        "is sent), SOFT beats TLoRA, SLoRA and RLoRA; ILoRA bounds it",
        target_accuracy=0.8,
        seeds=3,
        full=[*FULL_TRAINING, "learner.local_steps=4", "learner.dataset_options.max_test=500"],
        draw=_sparsifier_panels("_verbalizer"),
        reference=SOFT_REFERENCE,
    ),
    "fig3c": Reproduction(
        scenario="paper/fig3c_tsfa_osfa.yaml",
        sweeps={
            "tsfa": {"controller.name": ["tsfa"]},
            "osfa": {"controller.name": ["osfa"], "controller.rank": [1, 2, 4, 16, 32, 64]},
        },
        claim="TSFA's offline rank beats OSFA with too small (1, 2, 4) or too large (16-64) ranks",
        target_accuracy=0.75,
        draw=_draw_fig3c,
        # each OSFA rank is a method of its own, compared with TSFA at the same seed
        reference=Reference({"controller.name": "tsfa"}, keys=("controller.rank",), label="TSFA"),
    ),
    "fig45": Reproduction(
        scenario="paper/fig45_shards.yaml",
        sweeps={"shards": {"learner.partition_options.n_shards": [20, 40, 100, 200]}},
        full_sweeps={"shards": {"learner.partition_options.n_shards": [100, 200, 500, 1000]}},
        claim="more shards (closer to IID) give a smaller Cov norm and a higher accuracy",
        target_accuracy=0.5,
        draw=_draw_fig45,
        # the fewest shards (the least IID partition) of the grid
        reference=Reference(
            {"learner.partition_options.n_shards": 20},
            full_value={"learner.partition_options.n_shards": 100},
            label="fewest shards",
        ),
    ),
    "dpp": Reproduction(
        scenario="paper/drift_plus_penalty.yaml",
        sweeps={
            "V": {"controller.V": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]},
            "V_no_outage": {
                "controller.V": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0],
                "faults.outage_snr_db": [None],
            },
        },
        full=["rounds=20000"],
        claim="larger V lowers the time-average bound (O(1/V)) and lets the backlog grow (O(V)) "
        "while the time-average delay meets D_th; needs bounded D^t (an outage cut-off)",
        draw=_draw_dpp,
    ),
    "fslora-hetero": Reproduction(
        scenario="fslora/minilm_rotten_tomatoes.yaml",
        sweeps={"algorithms": {"algorithm.name": ["fslora", "hetlora", "flexlora", "fedstack"]}},
        claim="(i) at the same heterogeneous ratios FSLoRA is at least as accurate as HetLoRA "
        "and FlexLoRA; (iii) device compute: FSLoRA ~ HetLoRA < FedStack, FlexLoRA",
        target_accuracy=0.7,
        seeds=3,
        full=FSLORA_FULL,
        draw=draw_hetero,
        reference=Reference({"algorithm.name": "fslora"}, label="FSLoRA"),
    ),
    "fslora-ratios": Reproduction(
        scenario="fslora/minilm_rotten_tomatoes.yaml",
        sweeps={
            "fixed": {
                "strategy.ratio_choices": [[]],
                "strategy.sketch_ratio": [0.125, 0.25, 0.5, 1.0],
            },
            "controller": {"strategy.ratio_choices": [[]], "controller.name": ["sketch"]},
        },
        claim="(ii) accuracy degrades gracefully as the sketching ratio shrinks; (iv) with the "
        "wireless sketch controller FSLoRA reaches the target in less virtual time than any "
        "fixed ratio",
        target_accuracy=0.7,
        seeds=3,
        full=FSLORA_FULL,
        draw=draw_ratios,
        # (iv) compares every fixed ratio with the controller, in accuracy and in time
        reference=Reference(
            {"controller.name": "sketch"},
            keys=("strategy.sketch_ratio",),
            metrics=("final_accuracy", "time_to_target_s"),
            label="sketch controller",
        ),
    ),
    "floral-synthetic-linear": Reproduction(
        scenario="floral/synthetic_linear.yaml",
        sweeps=floral_methods(2),
        claim="synthetic linear task (K = 10, C = 2): FLoRAL and the Ensemble fit every "
        "client (test loss near 0, routers recover the clusters); FedAvg and the Local "
        "Adaptor do not",
        seeds=3,
        full=[],
        draw=draw_synthetic,
        reference=FEDAVG_SYNTHETIC,
    ),
    "floral-synthetic-mlp": Reproduction(
        scenario="floral/synthetic_mlp.yaml",
        sweeps=floral_methods(4),
        claim="synthetic MLP task (K = 20, C = 4): FLoRAL and the Ensemble reach a test loss far "
        "below FedAvg's and the Local Adaptor's",
        seeds=3,
        full=[],
        draw=draw_synthetic,
        reference=FEDAVG_SYNTHETIC,
    ),
    "floral-mnist": Reproduction(
        scenario="floral/mnist.yaml",
        sweeps=FLORAL_MNIST,
        claim="Table 1, MNIST full: FedAvg fails on label shift; FLoRAL is close to Ensemble "
        "pi*; FLoRAL is above the Local Adaptor",
        target_accuracy=0.8,
        seeds=3,
        full=[],
        draw=draw_methods,
        reference=FEDAVG_REFERENCE,
    ),
    "floral-mnist-reduced": Reproduction(
        scenario="floral/mnist_reduced.yaml",
        sweeps=FLORAL_MNIST_REDUCED,
        claim="Table 1, MNIST reduced (5 %): FedAvg fails on label shift; the Local Adaptor "
        "collapses; FLoRAL with the oracle router is close to Ensemble pi*",
        target_accuracy=0.6,
        seeds=3,
        full=[],
        draw=draw_methods,
        reference=FEDAVG_REFERENCE,
    ),
    "floral-adaptors": Reproduction(
        scenario="floral/mnist.yaml",
        sweeps={
            "C": {
                "learner.dataset": ["mnist_label_shift"],
                "strategy": [{"n_adaptors": c, "rho": 0.1} for c in (1, 2, 4, 8)],
            }
        },
        claim="the wireless cost of C: more adaptors, more bits per round (at rho = 10 %); "
        "C below the 4 clusters cannot personalise label shift, C above them reaches the "
        "target no sooner in virtual time",
        target_accuracy=0.8,
        seeds=3,
        full=[],
        draw=draw_adaptors,
        reference=Reference(
            {"strategy": {"n_adaptors": 4, "rho": 0.1}},
            metrics=("final_accuracy", "time_to_target_s", "total_bits_up"),
            label="C = 4",
        ),
    ),
    "h2tune-hybrid": Reproduction(
        scenario="h2tune/hybrid.yaml",
        sweeps=H2TUNE_METHODS,
        claim="Table 3 at offline scale: under model and task heterogeneity H2Tune is above "
        "LOCAL and FLLM; latency-accuracy when the large-model clients are slow or fast",
        target_accuracy=0.5,
        seeds=3,
        full=[],
        draw=draw_comparison,
        # paired within the same devices (large-model clients slow or fast)
        reference=Reference(
            {"algorithm.name": "h2tune"},
            metrics=("final_accuracy", "time_to_target_s"),
            label="H2Tune",
        ),
    ),
    "h2tune-ablation": Reproduction(
        scenario="h2tune/hybrid.yaml",
        # r_g at 1, 2 and 3 times the largest client rank (8), as Table 4's 64/128/192 around
        # the clients' 64 (r_g below a client's rank would make beta_k = r_k / r_g exceed 1)
        sweeps={
            "global_rank": {"strategy.global_rank": [8, 16, 24]},
            "density": {"strategy.density": [0.125, 0.5, 1.0]},
        },
        claim="Tables 4 and 7 at offline scale: a larger global rank helps up to a plateau; "
        "a larger density beta helps",
        target_accuracy=0.5,
        seeds=3,
        full=[],
        draw=draw_ablation,
        # r_g = 8 at the default density (beta_k = r_k / r_g); the density runs are at r_g = 8
        reference=Reference(
            {"strategy.global_rank": 8}, keys=("strategy.density",), label="r_g = 8"
        ),
    ),
    "async-default": Reproduction(
        scenario="async/default_hetero.yaml",
        # 120 updates (24 rounds of K = 5), evaluated every 20; C = 2K; semi-sync every 2 s
        sweeps=server_modes(
            k=5,
            updates=120,
            eval_updates=20,
            concurrency=10,
            semi_sync_deadline_s=2.0,
            semi_sync_rounds=36,
            semi_sync_eval_every=6,
        ),
        claim="FedBuff, FedScale: with devices a decade apart, buffered asynchrony reaches "
        "the target accuracy in less virtual time than synchronous rounds, at a cost in "
        "staleness",
        target_accuracy=0.6,
        seeds=5,
        full=[],
        draw=draw_modes("async_default", "EfficientNet-Lite0 / MNIST-5k", 0.6),
        reference=SYNC_REFERENCE,
        run_columns=update_columns,
    ),
    "async-minilm": Reproduction(
        scenario="async/minilm_rt.yaml",
        # 40 updates (10 rounds of K = 4), evaluated every 8; C = 2K; semi-sync every 2.5 s
        sweeps=server_modes(
            k=4,
            updates=40,
            eval_updates=8,
            concurrency=8,
            semi_sync_deadline_s=2.5,
            semi_sync_rounds=25,
            semi_sync_eval_every=5,
        ),
        claim="FedBuff, FedScale on MiniLM / Rotten Tomatoes: with devices a decade apart, "
        "buffered asynchrony reaches the target accuracy in less virtual time than "
        "synchronous rounds, at a cost in staleness",
        target_accuracy=0.6,
        seeds=5,
        full=[],
        draw=draw_modes("async_minilm", "MiniLM / Rotten Tomatoes", 0.6),
        reference=SYNC_REFERENCE,
        run_columns=update_columns,
    ),
    "energy-min-deadline": Reproduction(
        scenario="energy/yang_cell.yaml",
        # from just above the least round time (0.5 s: a slow device cannot meet it in some rounds)
        sweeps={
            "deadline": {
                SCHEME_KEY: ENERGY_SCHEMES,
                "controller.round_time_s": [0.5, 0.6, 0.7, 1.0, 1.5, 2.0],
            }
        },
        claim="Yang et al.: the joint power, clock and bandwidth allocation spends less energy "
        "per round than equal bandwidth, full power or full clock at every completion-time "
        "limit T, and the energy falls as T loosens",
        seeds=5,
        full=[],
        draw=draw_energy(
            "energy_vs_deadline",
            "controller.round_time_s",
            "completion-time limit T [s]",
            "Energy per round against T (K = 5 of 20 devices)",
        ),
        reference=JOINT_REFERENCE,
        run_columns=energy_columns,
        tables=energy_trend("controller.round_time_s"),
    ),
    "energy-min-devices": Reproduction(
        scenario="energy/yang_cell.yaml",
        sweeps={
            "devices": {
                SCHEME_KEY: ENERGY_SCHEMES,
                "n_scheduled": [2, 4, 6, 8, 10],  # of 20, at the scenario's T = 1 s
            }
        },
        claim="Yang et al.: the joint allocation spends less energy per round than each "
        "baseline for every number K of scheduled devices (at T = 1 s), and the energy "
        "grows with K",
        seeds=5,
        full=[],
        draw=draw_energy(
            "energy_vs_devices",
            "n_scheduled",
            "scheduled devices K",
            "Energy per round against K (T = 1 s)",
        ),
        reference=JOINT_REFERENCE,
        run_columns=energy_columns,
        tables=energy_trend("n_scheduled"),
    ),
    "energy-budget-joint": Reproduction(
        scenario="energy/umi_budget_joint.yaml",
        sweeps={
            "joint": {
                "controller.radio": ["joint"],
                "controller.energy_budget_j": ENERGY_BUDGETS_J,
            },
            # the paper's P3 plans with noise over the whole band (refuses noise on the share)
            "fixed": {
                "controller.radio": ["fixed"],
                "channel.noise_bandwidth": ["band"],
                "controller.energy_budget_j": ENERGY_BUDGETS_J,
            },
            # the queues that move only when their device spends, at the budgets inside the band
            "joint-at-participation": {
                "controller.radio": ["joint"],
                "controller.energy_queue": ["at_participation"],
                "controller.energy_budget_j": [0.4, 0.6, 0.9, 1.2],
            },
            # the signed queue of (E1''): inside the band, and 3 J above every band
            "joint-signed": {
                "controller.radio": ["joint"],
                "controller.energy_queue": ["signed"],
                "controller.energy_budget_j": [0.4, 0.6, 0.9, 1.2, 3.0],
            },
        },
        claim="with power and clock as decisions each device's time-average energy meets its "
        "budget, and settles on it where the budget binds against the delay queue; with the "
        "fixed radio it barely moves; queues that move only when their device spends bring it "
        "within 5 % of the budget inside the band; the signed queue makes it follow the budget "
        "inside the band",
        seeds=5,
        full=[],
        draw=draw_budget,
        # the joint radio against the fixed one at the same budget and seed
        reference=Reference(
            {"controller.radio": "fixed"},
            keys=("channel.noise_bandwidth", "controller.energy_queue"),
            metrics=("device_energy_j", "max_device_energy_j", "budget_met_share"),
            label="fixed radio",
        ),
    ),
    "energy-joint-accuracy-umi": Reproduction(
        scenario="energy/umi_joint_accuracy.yaml",
        # and without a budget, for contrast
        sweeps=radio_sweeps([UMI_BUDGET_J, None], UMI_BUDGET_J),
        claim="at the same energy budget, deciding power and clock (joint radio) reaches the "
        "same accuracy as full power and clock (fixed radio) with less energy",
        target_accuracy=0.75,
        seeds=5,
        full=[],
        draw=draw_joint_accuracy("joint_accuracy_umi", "umi cell, MLP / digits"),
        reference=FIXED_RADIO_REFERENCE,
        run_columns=accuracy_energy_columns,
        tables=radio_tables,
    ),
    "energy-joint-accuracy-default": Reproduction(
        scenario="energy/default_joint_accuracy.yaml",
        sweeps=radio_sweeps([DEFAULT_BUDGET_J], DEFAULT_BUDGET_J),
        claim="at the same energy budget, deciding power and clock (joint radio) reaches the "
        "same accuracy as full power and clock (fixed radio) with less energy, on the default "
        "task",
        target_accuracy=0.7,
        seeds=5,
        full=[],
        draw=draw_joint_accuracy("joint_accuracy_default", "EfficientNet-Lite0 / MNIST-5k"),
        reference=FIXED_RADIO_REFERENCE,
        run_columns=accuracy_energy_columns,
        tables=radio_tables,
    ),
    "energy-price-umi": Reproduction(
        scenario="energy/umi_joint_accuracy.yaml",
        sweeps={
            "price": {
                RADIO_KEY: ["joint"],
                PRICE_KEY: ENERGY_PRICES,
                "controller.energy_budget_j": [UMI_BUDGET_J],
            }
        },
        claim="the joint radio's energy at the umi budget falls as the energy price grows, at "
        "the same accuracy",
        target_accuracy=0.75,
        seeds=3,
        full=[],
        draw=draw_joint_accuracy("energy_price_umi", "umi cell, energy price μ"),
        reference=Reference({PRICE_KEY: 0.0}, metrics=FIXED_RADIO_REFERENCE.metrics, label="μ = 0"),
        run_columns=accuracy_energy_columns,
        tables=radio_tables,
    ),
    "aircomp-latency-k": Reproduction(
        scenario="aircomp/latency.yaml",
        sweeps=uplinks("n_scheduled", [5, 10, 20, 50]),
        claim="Zhu et al.: the upload time of over-the-air aggregation does not grow with the "
        "number K of scheduled clients, while that of FDMA digital uploads does",
        seeds=5,
        full=[],
        draw=draw_latency(
            "aircomp_latency_vs_k",
            "n_scheduled",
            "scheduled clients K (of 100)",
            "Upload time per round against K (10 dB mean SNR)",
        ),
        reference=AIRCOMP_REFERENCE,
        run_columns=aircomp_columns,
    ),
    "aircomp-latency-snr": Reproduction(
        scenario="aircomp/latency.yaml",
        sweeps=uplinks("channel.mean_snr_db", [-10.0, 0.0, 10.0, 20.0]),
        claim="Zhu et al.: the analog upload time does not depend on the SNR (its aggregation "
        "MSE does), while FDMA's falls as the SNR rises",
        seeds=5,
        full=[],
        draw=draw_latency(
            "aircomp_latency_vs_snr",
            "channel.mean_snr_db",
            "mean SNR [dB]",
            "Upload time per round against the mean SNR (K = 10)",
        ),
        reference=AIRCOMP_REFERENCE,
        run_columns=aircomp_columns,
    ),
    "aircomp-digits": Reproduction(
        scenario="aircomp/digits.yaml",
        sweeps={
            "aircomp": {"channel.uplink": ["aircomp"], "channel.mean_snr_db": [0.0, 10.0, 20.0]},
            "fdma": {"channel.uplink": ["fdma"], "channel.mean_snr_db": [0.0, 10.0, 20.0]},
        },
        claim="Zhu et al.: at low SNR the aggregation noise of over-the-air aggregation costs "
        "accuracy against digital uploads, which it reaches in far less virtual time",
        target_accuracy=0.3,
        seeds=5,
        full=[],
        draw=lambda out, runs: accuracy_both_ways(
            out, runs, "aircomp_digits", "AirComp and FDMA on digits (K = 4 of 8)"
        ),
        reference=Reference(
            {"channel.uplink": "fdma"},
            metrics=("final_accuracy", "time_to_target_s"),
            label="FDMA",
        ),
        run_columns=aircomp_columns,
    ),
    "aircomp-default": Reproduction(
        scenario="aircomp/default.yaml",
        sweeps=aircomp_default_sweeps(),
        claim="Zhu et al.: on the default task the round latency of over-the-air aggregation "
        "does not grow with K while FDMA's does, it reaches a target accuracy in less virtual "
        "time, and its aggregation noise costs final accuracy",
        target_accuracy=0.4,
        seeds=5,
        full=[],
        draw=draw_default_study,
        reference=AIRCOMP_ACCURACY_REFERENCE,
        run_columns=aircomp_columns,
        tables=default_study_tables,
    ),
    "aircomp-default-snr": aircomp_snr_study(
        "aircomp/default.yaml", 10, "aircomp_default_snr", "EfficientNet-Lite0 / MNIST-5k", 0.4
    ),
    "aircomp-default-full": Reproduction(
        scenario="aircomp/default_full.yaml",
        sweeps=aircomp_default_full_sweeps(),
        claim="Zhu et al.: over the default task's 40 rounds of 5 local steps, the round "
        "latency of over-the-air aggregation does not grow with K while FDMA's does, it "
        "reaches a target accuracy in less virtual time, and its aggregation noise costs "
        "final accuracy",
        target_accuracy=0.6,
        seeds=5,
        full=[],
        draw=draw_by_k("aircomp_default_full", "EfficientNet-Lite0 / MNIST-5k, 40 rounds", 60),
        reference=AIRCOMP_DENSE_REFERENCE,
        run_columns=aircomp_columns,
        tables=default_study_tables,
    ),
    "aircomp-minilm": Reproduction(
        scenario="aircomp/minilm.yaml",
        sweeps=aircomp_minilm_sweeps(),
        claim="Zhu et al.: on MiniLM / Rotten Tomatoes the round latency of over-the-air "
        "aggregation does not grow with K while FDMA's does, it reaches a target accuracy in "
        "less virtual time than FDMA, and its aggregation noise costs final accuracy",
        target_accuracy=0.6,
        seeds=5,
        full=[],
        draw=draw_by_k("aircomp_minilm", "MiniLM / Rotten Tomatoes", 20),
        reference=AIRCOMP_ACCURACY_REFERENCE,
        tables=default_study_tables,
        run_columns=aircomp_columns,
    ),
    "aircomp-minilm-snr": aircomp_snr_study(
        "aircomp/minilm.yaml", 5, "aircomp_minilm_snr", "MiniLM / Rotten Tomatoes", 0.6
    ),
    "aircomp-minilm-50": Reproduction(
        scenario="aircomp/minilm_50_clients.yaml",
        sweeps=aircomp_minilm_50_sweeps(),
        claim="Zhu et al.: on MiniLM / Rotten Tomatoes split over 50 clients, the round latency "
        "of over-the-air aggregation does not grow from K = 5 to K = 50 while FDMA's does, it "
        "reaches a target accuracy in less virtual time, and its aggregation noise costs final "
        "accuracy",
        target_accuracy=0.6,
        seeds=5,
        full=[],
        draw=draw_by_k("aircomp_minilm_50", "MiniLM / Rotten Tomatoes, 50 clients", 50),
        reference=AIRCOMP_ACCURACY_REFERENCE,
        tables=default_study_tables,
        run_columns=aircomp_columns,
    ),
}
