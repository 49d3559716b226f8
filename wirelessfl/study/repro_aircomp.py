"""Zhu et al.'s over-the-air aggregation claims as reproductions (``aircomp-*``, scenarios
under ``aircomp/``): the uplinks as sweeps, their references and the SNR studies.
"""

from __future__ import annotations

from wirelessfl.study.aircomp_figures import (
    aircomp_columns,
    default_study_tables,
    draw_by_k,
    draw_by_snr,
    draw_default_study,
    draw_latency,
    snr_study_tables,
)
from wirelessfl.study.figures import accuracy_both_ways
from wirelessfl.study.paired import Reference
from wirelessfl.study.repro_spec import Reproduction

__all__ = [
    "AIRCOMP_ACCURACY_REFERENCE",
    "AIRCOMP_BITS",
    "AIRCOMP_DENSE_REFERENCE",
    "AIRCOMP_RATIO",
    "AIRCOMP_REFERENCE",
    "AIRCOMP_REPRODUCTIONS",
    "aircomp_default_full_sweeps",
    "aircomp_default_sweeps",
    "aircomp_minilm_50_sweeps",
    "aircomp_minilm_sweeps",
    "aircomp_snr_study",
    "uplinks",
]

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


#: the AirComp claims, by name
AIRCOMP_REPRODUCTIONS: dict[str, Reproduction] = {
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
