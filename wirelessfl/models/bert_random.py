"""``bert_random``: a BERT-style encoder from a ``BertConfig`` with **random weights**.

A stand-in for a text model of another depth and width in heterogeneous-model runs (clients
with different base models in one run). It uses MiniLM's vocabulary (30,522 WordPiece
tokens), so the ``"minilm"`` tokenizer of ``rotten_tomatoes`` and ``chatterbot_topic`` feeds
it, and the same mean-pooling ``classifier`` head as ``minilm``. **The weights are random,
not pretrained: never report runs of this model as results of a pretrained model.**
"""

from __future__ import annotations

from wirelessfl.data.assets import offline_env
from wirelessfl.errors import UserError
from wirelessfl.models.bundle import ModelBundle
from wirelessfl.models.losses import text_loss_and_logits
from wirelessfl.models.minilm import MeanPoolClassifier, mean_pool_standalone
from wirelessfl.models.rng import seeded

__all__ = ["MINILM_VOCAB_SIZE", "build_bert_random"]

#: Vocabulary of the ``"minilm"`` tokenizer (bert-base-uncased WordPiece).
MINILM_VOCAB_SIZE = 30522


def _positive_int(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UserError(f"{name}={value!r} is out of range; accepted: an integer >= 1")
    return value


def build_bert_random(
    *,
    n_classes: int,
    seed: int = 0,
    n_layers: int = 4,
    hidden: int = 256,
    heads: int = 4,
    intermediate: int | None = None,
    dropout: float = 0.1,
    max_positions: int = 512,
) -> ModelBundle:
    """BERT encoder with random init from ``seed`` (NOT pretrained) + mean pooling + head.

    The weights are random: the model stands in for a base model of another depth and width
    and must never be reported as a pretrained model. ``n_layers`` transformer layers of
    width ``hidden`` with ``heads`` attention heads (``hidden`` a multiple of ``heads``),
    feed-forward width ``intermediate`` (default ``4 * hidden``), ``dropout`` for the
    hidden states, the attention probabilities and before the head, ``max_positions``
    position embeddings. Vocabulary: MiniLM's 30,522 tokens (``info["tokenizer"] =
    "minilm"``). LoRA targets ``query``, ``value`` (``n_layers`` x 2, each ``hidden`` x
    ``hidden``); head ``classifier``. The global torch RNG is left as it was.
    """
    _positive_int("n_layers", n_layers)
    _positive_int("hidden", hidden)
    _positive_int("heads", heads)
    _positive_int("max_positions", max_positions)
    if hidden % heads:
        raise UserError(f"hidden={hidden} must be a multiple of heads={heads}")
    if intermediate is None:
        intermediate = 4 * hidden
    _positive_int("intermediate", intermediate)
    if not 0.0 <= dropout < 1.0:
        raise UserError(f"dropout={dropout} is out of range; accepted: [0, 1)")
    offline_env()
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=MINILM_VOCAB_SIZE,
        hidden_size=hidden,
        num_hidden_layers=n_layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        max_position_embeddings=max_positions,
        type_vocab_size=2,
        pad_token_id=0,
    )
    with seeded(seed):
        encoder = BertModel(config, add_pooling_layer=False)
        model = MeanPoolClassifier(encoder, n_classes, dropout)
    model.train()
    return ModelBundle(
        model=model,
        target_modules=["query", "value"],
        head_modules=["classifier"],
        kind="text",
        loss_and_logits=text_loss_and_logits,
        info={
            "pretrained": False,
            "warning": "random init: a stand-in for another depth and width, never report "
            "as a pretrained model",
            "pooling": "mean",
            "tokenizer": "minilm",
            "n_layers": n_layers,
            "hidden": hidden,
            "heads": heads,
            "intermediate": intermediate,
            "max_positions": max_positions,
        },
        standalone=mean_pool_standalone(model),
    )
