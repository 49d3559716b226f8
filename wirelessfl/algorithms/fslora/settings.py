"""FSLoRA's settings (``strategy.fslora``); no torch.

The clients' sketching ratios come from :class:`~wirelessfl.algorithms.client_ranks.
HeteroRankSettings` (shared with the heterogeneous-rank baselines), the aggregation from
:class:`~wirelessfl.algorithms.fedit.settings.FedITSettings` (whose moved ``topk_ratio`` is
refused here too: App. C.2's top-k is the compression stage).
"""

from __future__ import annotations

from dataclasses import dataclass

from wirelessfl.algorithms.client_ranks import HeteroRankSettings
from wirelessfl.algorithms.fedit.settings import FedITSettings
from wirelessfl.config.schema import option

__all__ = ["FSLoRASettings"]


@dataclass
class FSLoRASettings(HeteroRankSettings, FedITSettings):
    """FSLoRA: the clients' sketching ratios, the download, the index sets (``strategy.fslora``)."""

    download: str = option(
        "full",
        choices=("full", "sketch"),
        doc="full: the whole global LoRA, r(d+l) per layer (Algorithm 1, line 3) | sketch: "
        "only the client's k_i(d+l) slice per layer",
    )
    index_sets: str = option(
        "shared",
        choices=("shared", "per_layer"),
        doc="shared: one index set per client per round for every layer (one S_i^t) | "
        "per_layer: an independent set per adapted layer",
    )
