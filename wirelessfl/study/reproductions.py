"""Named reproductions: the registry ``REPRODUCTIONS`` (name -> :class:`Reproduction`), the
entry point of ``wirelessfl reproduce``.

Each family lives in a module of its own, re-exported here: the SOFT/TSFA paper's section V
figures (:mod:`~wirelessfl.study.repro_paper`), FSLoRA's (:mod:`~wirelessfl.study.repro_fslora`),
FLoRAL's (:mod:`~wirelessfl.study.repro_floral`) and H2Tune's claims
(:mod:`~wirelessfl.study.repro_h2tune`), the server modes (:mod:`~wirelessfl.study.repro_async`),
the energy claims (:mod:`~wirelessfl.study.repro_energy`), over-the-air aggregation
(:mod:`~wirelessfl.study.repro_aircomp`), privacy (:mod:`~wirelessfl.study.repro_privacy`) and
the gap to a 5G NR uplink (:mod:`~wirelessfl.study.repro_nr`) and to packets in ns-3
(:mod:`~wirelessfl.study.repro_ns3`);
:mod:`~wirelessfl.study.repro_spec` defines :class:`Reproduction`. docs/results.md has a
section per claim.
"""

from __future__ import annotations

from wirelessfl.study.repro_aircomp import (
    AIRCOMP_ACCURACY_REFERENCE,
    AIRCOMP_BITS,
    AIRCOMP_DENSE_REFERENCE,
    AIRCOMP_RATIO,
    AIRCOMP_REFERENCE,
    AIRCOMP_REPRODUCTIONS,
    aircomp_default_full_sweeps,
    aircomp_default_sweeps,
    aircomp_minilm_50_sweeps,
    aircomp_minilm_sweeps,
    aircomp_snr_study,
    uplinks,
)
from wirelessfl.study.repro_async import ASYNC_REPRODUCTIONS, SYNC_REFERENCE, server_modes
from wirelessfl.study.repro_cells import CELLS_REPRODUCTIONS
from wirelessfl.study.repro_energy import (
    DEFAULT_BUDGET_J,
    ENERGY_BUDGETS_J,
    ENERGY_PRICES,
    ENERGY_REPRODUCTIONS,
    ENERGY_SCHEMES,
    FIXED_RADIO_REFERENCE,
    JOINT_REFERENCE,
    PRICED_ENERGY_PRICE,
    UMI_BUDGET_J,
    energy_trend,
    radio_sweeps,
)
from wirelessfl.study.repro_floral import (
    FEDAVG_REFERENCE,
    FEDAVG_SYNTHETIC,
    FLORAL_MNIST,
    FLORAL_MNIST_REDUCED,
    FLORAL_REPRODUCTIONS,
    floral_methods,
)
from wirelessfl.study.repro_fslora import FSLORA_FULL, FSLORA_REPRODUCTIONS
from wirelessfl.study.repro_h2tune import H2TUNE_METHODS, H2TUNE_REPRODUCTIONS, h2tune_devices
from wirelessfl.study.repro_nr import NR_REPRODUCTIONS
from wirelessfl.study.repro_ns3 import NS3_REPRODUCTIONS
from wirelessfl.study.repro_paper import (
    PAPER_REPRODUCTIONS,
    SOFT_REFERENCE,
    SPARSIFIERS,
    SPARSIFIERS_AT_TWO_RATIOS,
)
from wirelessfl.study.repro_privacy import (
    DP_SGD_SIGMAS,
    DP_SGD_SIGMAS_DEFAULT,
    DP_SGD_SIGMAS_MINILM,
    NO_DP_REFERENCE,
    PRIVACY_REPRODUCTIONS,
    dp_ffa_sweeps,
    dp_sparsifier_sweeps,
)
from wirelessfl.study.repro_spec import FULL_TRAINING, Reproduction

__all__ = [
    "AIRCOMP_ACCURACY_REFERENCE",
    "AIRCOMP_BITS",
    "AIRCOMP_DENSE_REFERENCE",
    "AIRCOMP_RATIO",
    "AIRCOMP_REFERENCE",
    "DEFAULT_BUDGET_J",
    "DP_SGD_SIGMAS",
    "DP_SGD_SIGMAS_DEFAULT",
    "DP_SGD_SIGMAS_MINILM",
    "ENERGY_BUDGETS_J",
    "ENERGY_PRICES",
    "ENERGY_SCHEMES",
    "FEDAVG_REFERENCE",
    "FEDAVG_SYNTHETIC",
    "FIXED_RADIO_REFERENCE",
    "FLORAL_MNIST",
    "FLORAL_MNIST_REDUCED",
    "FSLORA_FULL",
    "FULL_TRAINING",
    "H2TUNE_METHODS",
    "JOINT_REFERENCE",
    "NO_DP_REFERENCE",
    "PRICED_ENERGY_PRICE",
    "REPRODUCTIONS",
    "SOFT_REFERENCE",
    "SPARSIFIERS",
    "SPARSIFIERS_AT_TWO_RATIOS",
    "SYNC_REFERENCE",
    "UMI_BUDGET_J",
    "Reproduction",
    "aircomp_default_full_sweeps",
    "aircomp_default_sweeps",
    "aircomp_minilm_50_sweeps",
    "aircomp_minilm_sweeps",
    "aircomp_snr_study",
    "dp_ffa_sweeps",
    "dp_sparsifier_sweeps",
    "energy_trend",
    "floral_methods",
    "h2tune_devices",
    "radio_sweeps",
    "server_modes",
    "uplinks",
]

#: every reproduction by name, in the order ``wirelessfl reproduce`` lists them
REPRODUCTIONS: dict[str, Reproduction] = {
    **PRIVACY_REPRODUCTIONS,
    **PAPER_REPRODUCTIONS,
    **FSLORA_REPRODUCTIONS,
    **FLORAL_REPRODUCTIONS,
    **H2TUNE_REPRODUCTIONS,
    **ASYNC_REPRODUCTIONS,
    **ENERGY_REPRODUCTIONS,
    **AIRCOMP_REPRODUCTIONS,
    **NR_REPRODUCTIONS,
    **NS3_REPRODUCTIONS,
    **CELLS_REPRODUCTIONS,
}
