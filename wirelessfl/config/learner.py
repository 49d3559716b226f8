"""``learner``: the side that produces the updates (network-only surrogate, real federated
LoRA training, Flower clients): the keys every kind has, and the surrogate's model geometry."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from wirelessfl.config.limits import (
    MAX_LAYER_SIDE,
    MAX_LAYERS,
    MAX_RANK,
)
from wirelessfl.config.schema import hidden_option, missing_setting, option, show
from wirelessfl.errors import ConfigError
from wirelessfl.registries import LEARNERS

#: ``learner.init_lora_weights`` values: peft's inits that leave the base weights as they are.
LORA_INITS = (True, False, "gaussian")
#: peft's LoRA settings of the learner section and their defaults (the shipped results').
PEFT_SETTINGS: dict[str, object] = {
    "lora_dropout": 0.0,
    "use_rslora": False,
    "lora_bias": "none",
    "modules_to_save": None,
    "init_lora_weights": True,
    "use_dora": False,
    "layers_to_transform": None,
    "rank_pattern": None,
}


def _check_layer_ranks(ranks: list[int | None], n_layers: int, key: str) -> None:
    """One rank in 1..MAX_RANK or null per adapted layer, at least one null (a layer that
    trains at the controller's rank)."""
    if len(ranks) != n_layers:
        raise ConfigError(
            f"{key}: one entry per layer of learner.shape.layer_shapes ({n_layers}), got "
            f"{len(ranks)}"
        )
    for i, rank in enumerate(ranks):
        if rank is not None and not 1 <= rank <= MAX_RANK:
            raise ConfigError(
                f"{key}[{i}]: a rank is an integer in [1, {MAX_RANK:,}] or null, got {show(rank)}"
            )
    if None not in ranks:
        raise ConfigError(
            f"{key}: every layer has a fixed rank, so the controller's rank would adapt none; "
            "leave at least one entry null"
        )


@dataclass
class ModelShapeConfig:
    """Model geometry used by the surrogate learner for payload and compute sizes."""

    layer_shapes: list[list[int]] = option(
        default_factory=lambda: [[768, 768]] * 24,
        doc="(d, l) per adapted layer; default: ViT-Base query+value, 12 blocks",
    )
    layer_ranks: list[int | None] | None = option(
        None,
        doc="a fixed LoRA rank per adapted layer, aligned with layer_shapes (null entries: the "
        "controller's rank), as learner.rank_pattern fixes them in real training; null: none",
    )
    base_params: int = option(86_000_000, ge=0, doc="frozen parameters (for FLOPs)")
    batch_size: int = option(16, ge=1, doc="local batch size (for FLOPs)")
    seq_len: int = option(197, ge=1, doc="tokens per sample (for FLOPs)")

    def validate(self, prefix: str) -> None:
        key = f"{prefix}.layer_shapes"
        shapes = self.layer_shapes
        if not shapes:
            raise ConfigError(f"{key}: expected at least one [d, l] pair, got []")
        if len(shapes) > MAX_LAYERS:
            raise ConfigError(f"{key}: at most {MAX_LAYERS:,} adapted layers, got {len(shapes):,}")
        for i, pair in enumerate(shapes):
            if len(pair) != 2:
                raise ConfigError(
                    f"{key}[{i}]: expected a pair [d, l] of layer sizes, got {show(pair)}"
                )
            for side in pair:
                if not 1 <= side <= MAX_LAYER_SIDE:
                    raise ConfigError(
                        f"{key}[{i}]: layer sizes must be integers in [1, {MAX_LAYER_SIDE:,}], "
                        f"got {show(pair)}"
                    )
        if self.layer_ranks is not None:
            _check_layer_ranks(self.layer_ranks, len(shapes), f"{prefix}.layer_ranks")


@dataclass
class LearnerSettings:
    """The learning side: ``learner.kind`` names the learner (the network-only surrogate, real
    federated LoRA training, Flower clients), and each kind's ``Settings`` (a subclass,
    declared with the kind: ``wirelessfl/learners/surrogate_settings.py``,
    ``lora_settings.py``, ``wirelessfl/bridges/flower_settings.py``) add its own keys. A key of
    another kind is accepted and kept (one file can switch kind) but read by none."""

    #: Keys that used to be here: one line saying where they went (read by ``schema.build``).
    MOVED_KEYS: ClassVar[dict[str, str]] = {
        "zeta": "moved to strategy.zeta: eq. (2)'s orthogonality regularizer is a setting of "
        "the algorithm (null, the default: SOFT trains with it, the baselines without)",
    }

    kind: str = option(
        "surrogate",
        choices=LEARNERS,
        doc="surrogate (network-only) | lora (real training) | flower (Flower clients; "
        "docs/flower.md)",
    )
    others: dict[str, Any] = hidden_option(
        doc="keys of the learner kinds that do not run (validated, kept, written back)", flat=True
    )

    def given(self, key: str, default: Any = None) -> Any:
        """The value of ``learner.<key>``: the running kind's setting, else the value written
        for another kind (kept in :attr:`others`), else ``default``."""
        if key in {f.name for f in fields(self)} and key != "others":
            return getattr(self, key)
        return self.others.get(key, default)

    def __getattr__(self, name: str) -> Any:
        """Reading a setting the running learner kind does not declare: one line."""
        raise missing_setting("learner", self, name)


def check_other_kinds(learner: LearnerSettings, prefix: str = "learner") -> None:
    """Keys of real training written for a run whose learner does not train: refused in one
    line where they would farm out or shape training that does not happen."""
    if learner.kind == "lora":
        return
    executor = learner.given("executor", "local")
    if executor != "local":
        raise ConfigError(
            f"{prefix}.executor: {executor!r} farms out real training, and {prefix}.kind "
            f"{learner.kind!r} has none; use executor: local"
        )
    for key in ("ray_address", "ray_workers"):
        if learner.given(key) is not None:
            raise ConfigError(
                f"{prefix}.{key}: used only with {prefix}.executor: ray (it is 'local'); remove "
                "it or set executor: ray"
            )
    if learner.given("rank_pattern") is not None:
        raise ConfigError(
            f"{prefix}.rank_pattern: names modules of the peft model that learner.kind: lora "
            f"trains, and learner.kind is {learner.kind!r}; network-only runs fix layer ranks "
            "with learner.shape.layer_ranks"
        )
