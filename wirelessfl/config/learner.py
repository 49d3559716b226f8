"""``learner``: the side that produces the updates (network-only surrogate, real federated
LoRA training, Flower clients) and the surrogate's model geometry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from wirelessfl.config.limits import (
    MAX_LAYER_SIDE,
    MAX_LAYERS,
    MAX_RANK,
    MAX_RAY_WORKERS,
    check_option_names,
)
from wirelessfl.config.schema import key_text, option, show
from wirelessfl.errors import ConfigError
from wirelessfl.registries import DATASETS, HUB_PREFIX, LEARNERS, MODELS, PARTITIONERS

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


def _check_flower_values(values: dict, key: str) -> None:
    """Flower's config records hold text keys and numbers, text or bools (``UserConfigValue``)."""
    for name, value in values.items():
        if not isinstance(name, str) or not isinstance(value, (bool, int, float, str)):
            raise ConfigError(
                f"{key}: Flower config values are numbers, text or true/false, got "
                f"{show(name)}: {show(value)}"
            )


def _check_rank_pattern(pattern: Mapping[str, object], kind: str, key: str) -> None:
    """peft's ``rank_pattern``: module keys (names or regexes) to ranks in 1..MAX_RANK, for a
    real peft model (the network-only shape takes ``learner.shape.layer_ranks``)."""
    if kind != "lora":
        raise ConfigError(
            f"{key}: names modules of the peft model that learner.kind: lora trains, and "
            f"learner.kind is {kind!r}; network-only runs fix layer ranks with "
            "learner.shape.layer_ranks"
        )
    if not pattern:
        raise ConfigError(f"{key}: expected at least one module key, got {{}}; use null for none")
    for name, rank in pattern.items():
        try:
            re.compile(name)
        except re.error as err:
            raise ConfigError(
                f"{key}: {name!r} is not a module name or regular expression ({err})"
            ) from None
        if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= MAX_RANK:
            raise ConfigError(
                f"{key}.{key_text(name)}: a rank is an integer in [1, {MAX_RANK:,}], got "
                f"{show(rank)}"
            )


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
class LearnerConfig:
    """The learning side: a surrogate (network-only) or real federated LoRA training."""

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
    # surrogate
    initial_loss: float = option(2.3, gt=0.0, doc="surrogate: loss at round 0")
    progress_rate: float = option(0.02, gt=0.0, le=1.0, doc="surrogate: progress per round")
    bound_half: float = option(
        1.0e4, gt=0.0, doc="surrogate: bound gamma at which the loss floor is half the start"
    )
    n_classes: int = option(10, ge=2, doc="surrogate: classes (chance accuracy)")
    shape: ModelShapeConfig = field(default_factory=ModelShapeConfig)
    # real training (kind = lora)
    model: str = option(
        "tiny_mlp", choices=MODELS, prefixes=(HUB_PREFIX,), doc="model registry name (kind=lora)"
    )
    dataset: str = option(
        "digits", choices=DATASETS, prefixes=(HUB_PREFIX,), doc="dataset name (kind=lora)"
    )
    dataset_options: dict[str, object] = option(default_factory=dict, doc="loader options")
    partition: str = option("iid", choices=PARTITIONERS, doc="partitioner registry name")
    partition_options: dict[str, object] = option(default_factory=dict, doc="partitioner options")
    target_modules: list[str] | None = option(None, doc="LoRA targets (null: model default)")
    model_options: dict[str, object] = option(
        default_factory=dict,
        doc="options of the model's builder (hub: dtype float32|bfloat16|float16, revision, "
        "trust_remote_code, attn_implementation, cache_dir, answers, ...; docs/models.md)",
    )
    lora_alpha: float = option(16.0, gt=0.0, doc="LoRA alpha (scaling alpha/r)")
    lora_dropout: float = option(0.0, ge=0.0, lt=1.0, doc="dropout on the LoRA input (peft)")
    use_rslora: bool = option(False, doc="rank-stabilised LoRA: scaling alpha/sqrt(r) (peft)")
    use_dora: bool = option(
        False,
        doc="DoRA (peft use_dora): a trained magnitude per output feature of each adapted "
        "layer, sent dense with the head; sequential trainer only",
    )
    layers_to_transform: list[int] | None = option(
        None,
        doc="adapt only the target modules in these blocks (peft layers_to_transform: the "
        "block index is the number in the module's path); null: every block",
    )
    rank_pattern: dict[str, object] | None = option(
        None,
        doc="a fixed LoRA rank per matched target module, e.g. {fc1: 8} (peft rank_pattern: a "
        "key matches a module named by it or ending in '.key', or a regex); the other adapted "
        "layers train at the controller's rank; null: none",
    )
    lora_bias: str = option(
        "none",
        choices=("none", "all", "lora_only"),
        doc="biases that train and are sent dense: none | all (every bias) | lora_only (those "
        "of the LoRA targets) (peft's bias)",
    )
    modules_to_save: list[str] | None = option(
        None, doc="more modules trained in full and sent dense, besides the task head (peft)"
    )
    init_lora_weights: bool | str = option(
        True,
        doc="LoRA init (peft): true (kaiming A, B = 0) | gaussian (gaussian A, B = 0) | false "
        "(random A and B: the run starts away from the base model)",
    )
    local_steps: int = option(5, ge=1, doc="E local iterations")
    local_unit: str = option("steps", choices=("steps", "epochs"), doc="E counts steps or epochs")
    batch_size: int = option(16, ge=1, doc="local batch size")
    optimizer: str = option("sgd", choices=("sgd", "adam"), doc="local optimizer")
    lr: float = option(0.05, gt=0.0, doc="local learning rate")
    keep_optimizer_state: bool = option(False, doc="keep Adam moments between a client's rounds")
    eval_batch_size: int = option(256, ge=1, doc="evaluation batch size")
    head: str = option(
        "train",
        choices=("train", "frozen"),
        doc="train: the task head trains and is sent dense; frozen: it keeps its seeded random "
        "init, only LoRA trains and is sent",
    )
    trainer: str = option(
        "auto",
        choices=("auto", "sequential", "batched"),
        doc="auto: batched on CUDA, sequential (the peft reference) on the CPU",
    )
    device: str = option("auto", choices=("auto", "cpu", "cuda"), doc="torch device")
    executor: str = option(
        "local",
        choices=("local", "ray"),
        doc="where a round's clients train: local (this process) | ray (Ray actors, same "
        "results; docs/scale-out.md)",
    )
    ray_address: str | None = option(
        None,
        doc="executor=ray: the cluster, host:port or ray://host:port (null: RAY_ADDRESS, else a "
        "local Ray instance started by the run)",
    )
    ray_workers: int | None = option(
        None,
        ge=1,
        le=MAX_RAY_WORKERS,
        doc="executor=ray: training actors (null: one per GPU of the cluster; without GPUs its "
        "CPUs / torch threads per process; at most n_scheduled)",
    )

    # Flower clients (kind = flower)
    client_fn: str | None = option(
        None,
        doc="flower: 'module:attribute' naming a flwr ClientApp, a client_fn(context) -> Client "
        "or a client_fn(client_id) -> NumPyClient (docs/flower.md)",
    )
    initial_parameters: str | None = option(
        None,
        doc="flower: the initial global parameters, 'module:attribute' (a list of numpy arrays "
        "or an ArrayRecord) or a .npz file (null: client 0's get_parameters)",
    )
    run_config: dict[str, object] = option(
        default_factory=dict, doc="flower: the clients' context.run_config (numbers, text, bools)"
    )
    train_config: dict[str, object] = option(
        default_factory=dict,
        doc="flower: the train message's config record (fit's config) besides server-round",
    )
    evaluate_config: dict[str, object] = option(
        default_factory=dict,
        doc="flower: the evaluate message's config record (evaluate's config) besides server-round",
    )
    client_flops: float = option(
        0.0, ge=0.0, doc="flower: FLOPs of a client's fit, unless its metrics report 'flops'"
    )

    def validate(self, prefix: str) -> None:
        check_option_names(self.dataset_options, f"{prefix}.dataset_options")
        check_option_names(self.partition_options, f"{prefix}.partition_options")
        check_option_names(self.model_options, f"{prefix}.model_options")
        if self.init_lora_weights not in LORA_INITS:
            raise ConfigError(
                f"{prefix}.init_lora_weights: must be true, false or 'gaussian', got "
                f"{show(self.init_lora_weights)} (peft's pissa, olora, orthogonal, eva, corda, "
                "loftq and mica change the base weights or need data; the rank truncation of "
                "lower-rank clients and export's base_model.json assume an unchanged base)"
            )
        for key in ("run_config", "train_config", "evaluate_config"):
            _check_flower_values(getattr(self, key), f"{prefix}.{key}")
        if self.rank_pattern is not None:
            _check_rank_pattern(self.rank_pattern, self.kind, f"{prefix}.rank_pattern")
        if self.executor != "local" and self.kind != "lora":
            raise ConfigError(
                f"{prefix}.executor: {self.executor!r} farms out real training, and "
                f"{prefix}.kind {self.kind!r} has none; use executor: local"
            )
        for key in ("ray_address", "ray_workers"):
            if getattr(self, key) is not None and self.executor != "ray":
                raise ConfigError(
                    f"{prefix}.{key}: used only with {prefix}.executor: ray (it is "
                    f"{self.executor!r}); remove it or set executor: ray"
                )
