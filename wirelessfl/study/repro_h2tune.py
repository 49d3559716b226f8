"""H2Tune's Tables 3, 4 and 7 at offline scale as reproductions (``h2tune-*``, scenarios under
``h2tune/``).
"""

from __future__ import annotations

from wirelessfl.study.h2tune_figures import draw_ablation, draw_comparison
from wirelessfl.study.paired import Reference
from wirelessfl.study.repro_spec import Reproduction

__all__ = ["H2TUNE_METHODS", "H2TUNE_REPRODUCTIONS", "h2tune_devices"]


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


#: H2Tune's claims, by name
H2TUNE_REPRODUCTIONS: dict[str, Reproduction] = {
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
}
