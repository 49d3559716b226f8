"""The FSLoRA paper's claims at offline scale as reproductions (``fslora-*``, scenarios under
``fslora/``).
"""

from __future__ import annotations

from wirelessfl.study.figures import draw_hetero, draw_ratios
from wirelessfl.study.paired import Reference
from wirelessfl.study.repro_spec import Reproduction

__all__ = ["FSLORA_FULL", "FSLORA_REPRODUCTIONS"]

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

#: FSLoRA's claims, by name
FSLORA_REPRODUCTIONS: dict[str, Reproduction] = {
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
}
