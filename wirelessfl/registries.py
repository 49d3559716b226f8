"""Every registry of ``wirelessfl``, with one line per built-in entry.

Entries are lazy ``"module:attribute"`` targets: listing or validating names (the scenario
schema takes its choices from here) imports nothing, so a network-only run never imports torch.
Adding a plug-in is one file plus one line here; code outside the package calls
``REGISTRY.register(name, obj)`` instead (a module or file the command line imports with
``--plugin``, :mod:`wirelessfl.plugins`), and an installed package can declare an entry point
in the group shown (``[project.entry-points."wirelessfl.algorithms"]`` in its
``pyproject.toml``: ``my_algo = "my_package.my_algo:MyAlgorithm"``).

The fading models (``channels.FADING_MODELS``) and client-selection rules
(``optim.SELECTION_METHODS``) are registries of the same shape in their own packages.
"""

from __future__ import annotations

from typing import Any

from channels.registry import Registry

__all__ = [
    "AGGREGATIONS",
    "ALGORITHMS",
    "CONTROLLERS",
    "DATASETS",
    "LEARNERS",
    "MODELS",
    "PARTITIONERS",
    "SERVER_MODES",
    "SPARSIFIERS",
    "STALENESS",
    "UPLINKS",
]

#: ``learner.kind``: a ``wirelessfl.learners.kinds.LearnerSpec`` (the torch-free settings
#: class and the ``"module:attribute"`` of the ``(scenario) -> Learner`` factory), or, from a
#: plug-in, the factory itself (``wirelessfl.learners.kinds.learner_factory`` gives it).
LEARNERS: Registry[Any] = Registry(
    "learner",
    {
        "surrogate": "wirelessfl.learners.kinds:SURROGATE",
        "lora": "wirelessfl.learners.kinds:LORA",
        "flower": "wirelessfl.bridges.flower_settings:FLOWER",
    },
    entry_point_group="wirelessfl.learners",
)

#: ``algorithm.name``: a ``wirelessfl.algorithms.spec.AlgorithmSpec`` (the torch-free settings
#: class and the ``"module:Class"`` of the implementation), or, from a plug-in, the
#: ``wirelessfl.algorithms.base.FederatedAlgorithm`` subclass itself
#: (``wirelessfl.algorithms.algorithm_class`` gives the class either way).
ALGORITHMS: Registry[Any] = Registry(
    "algorithm",
    {
        "soft": "wirelessfl.algorithms.soft:SOFT",
        "fedit": "wirelessfl.algorithms.fedit:FEDIT",
        "fedit_topk": "wirelessfl.algorithms.fedit:FEDIT_TOPK",
        "fslora": "wirelessfl.algorithms.fslora:FSLORA",
        "hetlora": "wirelessfl.algorithms.hetero_rank:HETLORA",
        "flexlora": "wirelessfl.algorithms.hetero_rank:FLEXLORA",
        "fedstack": "wirelessfl.algorithms.hetero_rank:FEDSTACK",
        "floral": "wirelessfl.algorithms.floral:FLORAL",
        "floral_local": "wirelessfl.algorithms.floral:FLORAL_LOCAL",
        "ensemble": "wirelessfl.algorithms.floral:ENSEMBLE",
        "fedavg_full": "wirelessfl.algorithms.floral:FEDAVG_FULL",
        "h2tune": "wirelessfl.algorithms.h2tune:H2TUNE",
        "h2tune_local": "wirelessfl.algorithms.h2tune:H2TUNE_LOCAL",
        "fllm": "wirelessfl.algorithms.h2tune:FLLM",
        "h2tune_hetlora": "wirelessfl.algorithms.h2tune:H2TUNE_HETLORA",
        "ffa_lora": "wirelessfl.algorithms.ffa_lora:FFA_LORA",
    },
    entry_point_group="wirelessfl.algorithms",
)

#: ``controller.name``: a ``wirelessfl.controllers.base.Controller`` subclass.
CONTROLLERS: Registry[Any] = Registry(
    "controller",
    {
        "tsfa": "wirelessfl.controllers.tsfa:TwoStage",
        "osfa": "wirelessfl.controllers.lyapunov:OnlineLyapunov",
        "fixed": "wirelessfl.controllers.fixed:Fixed",
        "sketch": "wirelessfl.controllers.sketch:SketchRatio",
        "energy_min": "wirelessfl.controllers.energy_min:EnergyMin",
    },
    entry_point_group="wirelessfl.controllers",
)

#: ``channel.uplink``: a ``wirelessfl.uplinks.base.Uplink`` subclass.
UPLINKS: Registry[Any] = Registry(
    "uplink",
    {
        "fdma": "wirelessfl.uplinks.fdma:FdmaUplink",
        "aircomp": "wirelessfl.uplinks.aircomp:AirCompUplink",
        "noma": "wirelessfl.uplinks.noma:NomaUplink",
        "nr": "wirelessfl.uplinks.nr:NrUplink",
        "ns3_lte": "wirelessfl.uplinks.ns3:Ns3LteUplink",
        "ns3_wifi": "wirelessfl.uplinks.ns3:Ns3WifiUplink",
    },
    entry_point_group="wirelessfl.uplinks",
)

#: ``server.mode``: a ``wirelessfl.servers.base.ServerMode`` subclass.
SERVER_MODES: Registry[Any] = Registry(
    "server mode",
    {
        "sync": "wirelessfl.servers.sync:Sync",
        "async": "wirelessfl.servers.fedasync:FedAsync",
        "buffered": "wirelessfl.servers.fedbuff:FedBuff",
        "semi_sync": "wirelessfl.servers.semi_sync:SemiSync",
    },
    entry_point_group="wirelessfl.server_modes",
)

#: ``server.staleness``: a function ``(tau, a, b) -> s(tau)`` (``wirelessfl.servers.staleness``).
STALENESS: Registry[Any] = Registry(
    "staleness function",
    {
        "constant": "wirelessfl.servers.staleness:constant",
        "polynomial": "wirelessfl.servers.staleness:polynomial",
        "hinge": "wirelessfl.servers.staleness:hinge",
    },
    entry_point_group="wirelessfl.staleness",
)

#: ``strategy.sparsifier``: a ``wirelessfl.compress.base.Sparsifier`` subclass.
SPARSIFIERS: Registry[Any] = Registry(
    "sparsifier",
    {
        "soft": "wirelessfl.compress.soft:SoftSparsifier",
        "topk": "wirelessfl.compress.topk:TopKSparsifier",
        "random": "wirelessfl.compress.random_k:RandomKSparsifier",
        "structured": "wirelessfl.compress.structured:StructuredSparsifier",
        "none": "wirelessfl.compress.dense:DenseSparsifier",
    },
    entry_point_group="wirelessfl.sparsifiers",
)

#: ``strategy.aggregation``: weights ``(p_k of the arrived, N, K) -> list of weights``.
AGGREGATIONS: Registry[Any] = Registry(
    "aggregation rule",
    {
        "weighted_mean": "wirelessfl.algorithms.aggregation:weighted_mean_weights",
        "unbiased": "wirelessfl.algorithms.aggregation:unbiased_weights",
    },
    entry_point_group="wirelessfl.aggregations",
)

#: ``learner.dataset``: ``(*, seed, **options) -> TaskData`` (plus ``n_clients`` for data built
#: per client); ``hub:<name-or-path>`` as well.
DATASETS: Registry[Any] = Registry(
    "dataset",
    {
        "digits": "wirelessfl.data.digits:load_digits",
        "mnist5k": "wirelessfl.data.mnist5k:load_mnist5k",
        "rotten_tomatoes": "wirelessfl.data.rotten_tomatoes:load_rotten_tomatoes",
        "chatterbot_topic": "wirelessfl.data.chatterbot:load_chatterbot_topic",
        "synthetic_linear": "wirelessfl.data.mixture_tasks:load_synthetic_linear",
        "synthetic_mlp": "wirelessfl.data.mixture_tasks:load_synthetic_mlp",
        "mnist_rotate": "wirelessfl.data.concept_shift:load_mnist_rotate",
        "mnist_label_shift": "wirelessfl.data.concept_shift:load_mnist_label_shift",
    },
    entry_point_group="wirelessfl.datasets",
)

#: ``learner.model``: ``(*, n_classes, seed, **options) -> ModelBundle``; ``hub:<name-or-path>``.
MODELS: Registry[Any] = Registry(
    "model",
    {
        "tiny_mlp": "wirelessfl.models.tiny:build_tiny_mlp",
        "efficientnet_lite0": "wirelessfl.models.efficientnet:build_efficientnet_lite0",
        "minilm": "wirelessfl.models.minilm:build_minilm",
        "smollm2": "wirelessfl.models.smollm2:build_smollm2",
        "smollm2_instruct": "wirelessfl.models.smollm2:build_smollm2_instruct",
        "vit_random": "wirelessfl.models.vit:build_vit_random",
        "bert_random": "wirelessfl.models.bert_random:build_bert_random",
        "mnist_mlp": "wirelessfl.models.small_nets:build_mnist_mlp",
        "synthetic_linear": "wirelessfl.models.small_nets:build_synthetic_linear",
        "synthetic_mlp": "wirelessfl.models.small_nets:build_synthetic_mlp",
        "small_cnn": "wirelessfl.models.small_nets:build_small_cnn",
    },
    entry_point_group="wirelessfl.models",
)

#: ``learner.partition``: ``(labels, n_clients, rng, *, groups, **options) -> index arrays``.
PARTITIONERS: Registry[Any] = Registry(
    "partitioner",
    {
        "iid": "wirelessfl.data.partition:iid_split",
        "shards": "wirelessfl.data.partition:shard_split",
        "dirichlet": "wirelessfl.data.partition:dirichlet_split",
        "by_key": "wirelessfl.data.partition:key_split",
        "by_client": "wirelessfl.data.partition:client_split",
    },
    entry_point_group="wirelessfl.partitioners",
)

#: Names that mean "load from a hub or a local folder" (``learner.model``/``learner.dataset``).
HUB_PREFIX = "hub:"
