"""The SOFT/TSFA paper's section V figures as reproductions (``fig3ab*``, ``fig3c``,
``fig45``, ``dpp``; shipped scenarios under ``paper/``); their drawings live in
:mod:`wirelessfl.study.paper_figures`.
"""

from __future__ import annotations

from wirelessfl.study.paired import Reference
from wirelessfl.study.paper_figures import (
    draw_dpp,
    draw_fig3c,
    draw_fig45,
    sparsifier_panels,
)
from wirelessfl.study.repro_spec import FULL_TRAINING, Reproduction

__all__ = ["PAPER_REPRODUCTIONS", "SOFT_REFERENCE", "SPARSIFIERS", "SPARSIFIERS_AT_TWO_RATIOS"]

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
#: the sparsifier figures: every sparsifier (and dense ILoRA) against SOFT at the same rank
#: and sparsification (ILoRA, which has none, against SOFT at each)
SOFT_REFERENCE = Reference({"compression.sparsifier": "soft"}, label="SOFT")

#: the paper's figures, by name
PAPER_REPRODUCTIONS: dict[str, Reproduction] = {
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
        draw=sparsifier_panels(),
        reference=SOFT_REFERENCE,
    ),
    "fig3ab_frozen": Reproduction(
        scenario="paper/fig3ab_frozen_head.yaml",
        sweeps=SPARSIFIERS_AT_TWO_RATIOS,
        claim="with only LoRA learning (frozen head), SOFT beats TLoRA, SLoRA and RLoRA; "
        "ILoRA bounds it",
        target_accuracy=0.6,
        draw=sparsifier_panels("_frozen"),
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
        draw=sparsifier_panels("_verbalizer"),
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
        draw=draw_fig3c,
        # each OSFA rank is a method of its own, compared with TSFA at the same seed
        reference=Reference({"controller.name": "tsfa"}, keys=("controller.rank",), label="TSFA"),
    ),
    "fig45": Reproduction(
        scenario="paper/fig45_shards.yaml",
        sweeps={"shards": {"learner.partition_options.n_shards": [20, 40, 100, 200]}},
        full_sweeps={"shards": {"learner.partition_options.n_shards": [100, 200, 500, 1000]}},
        claim="more shards (closer to IID) give a smaller Cov norm and a higher accuracy",
        target_accuracy=0.5,
        draw=draw_fig45,
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
        draw=draw_dpp,
    ),
}
