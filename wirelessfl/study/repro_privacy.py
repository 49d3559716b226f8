"""The privacy reproductions (``dp-*``, scenarios under ``privacy/``): FFA-LoRA against LoRA
under DP-SGD, and the sparsifiers under DP-SGD; the noise multipliers and the no-DP reference.
"""

from __future__ import annotations

from functools import partial

from wirelessfl.study.figures import accuracy_both_ways
from wirelessfl.study.paired import Reference
from wirelessfl.study.privacy_figures import draw_dp_ffa, drop_table, privacy_columns
from wirelessfl.study.repro_paper import SOFT_REFERENCE
from wirelessfl.study.repro_spec import Reproduction

__all__ = [
    "DP_SGD_SIGMAS",
    "DP_SGD_SIGMAS_DEFAULT",
    "DP_SGD_SIGMAS_MINILM",
    "NO_DP_REFERENCE",
    "PRIVACY_REPRODUCTIONS",
    "dp_ffa_sweeps",
    "dp_sparsifier_sweeps",
]

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


#: the privacy claims, by name
PRIVACY_REPRODUCTIONS: dict[str, Reproduction] = {
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
}
