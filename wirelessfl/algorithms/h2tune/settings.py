"""The settings of H2Tune and its baselines (the ``strategy.<name>`` tables of ``h2tune``,
``h2tune_local``, ``fllm``, ``h2tune_hetlora``): the client groups (base model, task,
resource rank) and H2Tune's own; no torch."""

from __future__ import annotations

from dataclasses import dataclass

from wirelessfl.config.schema import option
from wirelessfl.registries import DATASETS, HUB_PREFIX, MODELS, PARTITIONERS

__all__ = [
    "ClientGroup",
    "FLLMSettings",
    "H2TuneSettings",
    "HeteroHetLoRASettings",
    "HeteroLocalSettings",
    "HeteroSettings",
]


@dataclass
class ClientGroup:
    """Clients sharing a base model, a task and a resource rank."""

    clients: int = option(1, ge=1, doc="number of clients in the group (consecutive ids)")
    model: str = option(
        "minilm", choices=MODELS, prefixes=(HUB_PREFIX,), doc="the group's base model"
    )
    model_options: dict[str, object] = option(default_factory=dict, doc="model builder options")
    dataset: str = option(
        "rotten_tomatoes", choices=DATASETS, prefixes=(HUB_PREFIX,), doc="the group's task"
    )
    dataset_options: dict[str, object] = option(
        default_factory=dict,
        doc="loader options (max_train, max_test, max_length, ...; text data get the model's "
        "tokenizer unless one is named)",
    )
    partition: str = option(
        "iid", choices=PARTITIONERS, doc="how the group's clients split the training rows"
    )
    rank: int = option(
        8,
        ge=1,
        doc="r_k: the clients' resource rank (the baselines' LoRA rank; H2Tune's "
        "beta_k = r_k / global_rank)",
    )


@dataclass
class HeteroSettings:
    """The client groups (``strategy.groups``)."""

    groups: list[ClientGroup] = option(
        default_factory=list,
        doc="client groups in client order; empty: every client has the learner's model and "
        "data set at the controller's rank",
    )


@dataclass
class H2TuneSettings(HeteroSettings):
    """H2Tune (``strategy.h2tune``): global rank and layers, the two losses, the local start."""

    global_rank: int = option(8, ge=1, doc="r_g: width of A, B and R on every client")
    global_layers: int | None = option(
        None, ge=1, doc="L_g: global layer slots (null: the deepest model's block count)"
    )
    shared_lr: float = option(1.0e-3, gt=0.0, doc="eta': learning rate of R and Omega")
    shared_kl: float = option(
        1.0, ge=0.0, doc="lambda: weight of KL(R_k || R_g Omega_k^T), eq. (6)"
    )
    specific_kl: float = option(0.1, ge=0.0, doc="mu: weight of the -KL(y'' || y') term, eq. (7)")
    kl_cap: float = option(1.0, gt=0.0, doc="the -KL term of eq. (7) is capped at this (nats)")
    l2: float = option(1.0e-4, ge=0.0, doc="V: (V/2)(||A||^2 + ||B||^2) in eq. (7)")
    density: float | None = option(
        None,
        gt=0.0,
        le=1.0,
        doc="beta_k of every client, the kept fraction of R (null: r_k / global_rank)",
    )
    local_start: str = option(
        "carry",
        choices=("carry", "global"),
        doc="carry: R_k kept between rounds (Algorithm 2); global: R_k <- Phi_k o R_g Omega_k^T",
    )


@dataclass
class HeteroLocalSettings(HeteroSettings):
    """LOCAL (``strategy.h2tune_local``): the client groups only."""


@dataclass
class FLLMSettings(HeteroSettings):
    """FLLM (``strategy.fllm``): the client groups only."""


@dataclass
class HeteroHetLoRASettings(HeteroSettings):
    """HetLoRA on heterogeneous clients (``strategy.h2tune_hetlora``): the client groups only."""
