"""``learner.kind: lora``: real federated LoRA training's settings (model, data, peft's LoRA
options, local training, device and executor). Torch-free: the scenario schema reads it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from wirelessfl.config.learner import LORA_INITS, LearnerSettings
from wirelessfl.config.limits import MAX_RANK, MAX_RAY_WORKERS, check_option_names
from wirelessfl.config.schema import key_text, option, show
from wirelessfl.errors import ConfigError
from wirelessfl.registries import DATASETS, HUB_PREFIX, MODELS, PARTITIONERS


def _check_lora_init(value: object, key: str) -> None:
    if value not in LORA_INITS:
        raise ConfigError(
            f"{key}: must be true, false or 'gaussian', got {show(value)} (peft's pissa, olora, "
            "orthogonal, eva, corda, loftq and mica change the base weights or need data; the "
            "rank truncation of lower-rank clients and export's base_model.json assume an "
            "unchanged base)"
        )


def _check_rank_pattern(pattern: Mapping[str, object], key: str) -> None:
    """peft's ``rank_pattern``: module keys (names or regexes) to ranks in 1..MAX_RANK."""
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


@dataclass
class LoraSettings(LearnerSettings):
    """Real training: peft LoRA on a packaged model and data set, federated by the algorithm."""

    model: str = option(
        "tiny_mlp", choices=MODELS, prefixes=(HUB_PREFIX,), doc="model registry name (kind=lora)"
    )
    dataset: str = option(
        "digits", choices=DATASETS, prefixes=(HUB_PREFIX,), doc="dataset name (kind=lora)"
    )
    dataset_options: dict[str, object] = option(
        default_factory=dict, check=check_option_names, doc="loader options"
    )
    partition: str = option("iid", choices=PARTITIONERS, doc="partitioner registry name")
    partition_options: dict[str, object] = option(
        default_factory=dict, check=check_option_names, doc="partitioner options"
    )
    target_modules: list[str] | None = option(None, doc="LoRA targets (null: model default)")
    model_options: dict[str, object] = option(
        default_factory=dict,
        check=check_option_names,
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
        check=_check_rank_pattern,
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
        check=_check_lora_init,
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

    def validate(self, prefix: str) -> None:
        for key in ("ray_address", "ray_workers"):
            if getattr(self, key) is not None and self.executor != "ray":
                raise ConfigError(
                    f"{prefix}.{key}: used only with {prefix}.executor: ray (it is "
                    f"{self.executor!r}); remove it or set executor: ray"
                )
