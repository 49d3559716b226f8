"""The clients of a run whose clients differ in base model and task (H2Tune and its baselines).

The scenario lists client groups (``strategy.groups``): each names a base model, a task (data
set) and the clients' resource rank. What is built:

- **one model object per distinct base model** (registry name + options), shared by every
  client that uses it, its base weights frozen; a client's adapter values are loaded into it
  before it trains or is evaluated, so per-client state stays adapter-sized;
- one data set per distinct (data set, options) pair; text data sets get the tokenizer of
  the group's model unless the group names one;
- the group's clients split that data set's training rows with the group's partitioner (a
  pure function of the run seed), and every one of them is tested on the group's test split;
- a private task head per client (``nn.Linear(hidden, n_classes)``, seeded per client): the
  model's head module is swapped for one of the right width when a client's task has another
  number of classes than the model was built with.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.errors import ConfigError, UserError
from wirelessfl.models.bundle import ModelBundle

__all__ = [
    "ClientGroupRuntime",
    "HeadSwitch",
    "HeteroClients",
    "head_initial_values",
    "model_key",
]


def model_key(name: str, options: dict[str, Any]) -> str:
    """The key of a shared model (or data set): its name and options."""
    return name + json.dumps(options, sort_keys=True)


def _takes_tokenizer(dataset: str) -> bool:
    """Whether the registry loader ``dataset`` has a ``tokenizer`` option."""
    import inspect

    from wirelessfl.registries import DATASETS

    if dataset not in DATASETS:
        return False
    return "tokenizer" in inspect.signature(DATASETS.load(dataset)).parameters


class HeadSwitch:
    """The task head of a shared model, swapped for the width of a client's task.

    Args:
        model: The model; its head module ``head_name`` must be an ``nn.Linear``.
        head_name: The module name of the head (a bundle's ``head_modules[0]``).
    """

    def __init__(self, model: nn.Module, head_name: str) -> None:
        parent_name, _, attr = head_name.rpartition(".")
        self.parent = model.get_submodule(parent_name) if parent_name else model
        self.attr = attr
        original = getattr(self.parent, attr)
        if not isinstance(original, nn.Linear):
            raise ConfigError(
                f"strategy.groups: the head {head_name!r} of this model is a "
                f"{type(original).__name__}, not a linear layer; per-client heads need nn.Linear"
            )
        original.requires_grad_(False)
        self.in_features = original.in_features
        self.bias = original.bias is not None
        self.heads: dict[int, nn.Linear] = {original.out_features: original}

    def use(self, n_classes: int) -> nn.Linear:
        """Put the head of width ``n_classes`` in place and return it."""
        head = self.heads.get(n_classes)
        if head is None:
            old = next(iter(self.heads.values()))
            head = nn.Linear(self.in_features, n_classes, bias=self.bias)
            head = head.to(device=old.weight.device, dtype=old.weight.dtype).requires_grad_(False)
            self.heads[n_classes] = head
        setattr(self.parent, self.attr, head)
        return head


def head_initial_values(
    in_features: int, n_classes: int, bias: bool, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """A fresh head's values, drawn like ``nn.Linear``'s default init from ``generator``:
    ``head.weight`` (n_classes, in_features) and ``head.bias`` (n_classes,), U(-1/sqrt(in),
    1/sqrt(in))."""
    bound = 1.0 / math.sqrt(in_features)
    weight = (torch.rand(n_classes, in_features, generator=generator) * 2 - 1) * bound
    out = {"head.weight": weight}
    if bias:
        out["head.bias"] = (torch.rand(n_classes, generator=generator) * 2 - 1) * bound
    return out


@dataclass
class ClientGroupRuntime:
    """One group of clients: shared model, its task data, the clients' rows.

    Attributes:
        index: The group's position in ``strategy.groups``.
        clients: Client ids (consecutive).
        model_key: Which shared model it uses (name + options).
        bundle: The shared model bundle (not one per client).
        heads: The head switch of that model.
        data: The group's task.
        train: Training rows on the device.
        test: Test rows on the device.
        indices: Client id -> its training row indices into ``train``.
        rank: r_k, the clients' resource rank.
    """

    index: int
    clients: list[int]
    model_key: str
    bundle: ModelBundle
    heads: HeadSwitch
    data: TaskData
    train: ArrayDataset
    test: ArrayDataset
    indices: dict[int, np.ndarray]
    rank: int

    @property
    def n_classes(self) -> int:
        return int(self.data.n_classes)

    def client_data(self, client: int) -> ArrayDataset:
        """``client``'s training rows."""
        return self.train.subset(self.indices[client])


class HeteroClients:
    """Builds the groups of ``strategy.groups`` (module docstring).

    Args:
        groups: The groups' settings (``model``, ``model_options``, ``dataset``,
            ``dataset_options``, ``partition``, ``clients``, ``rank``), in client order.
        n_clients: The scenario's N; the groups' clients must add up to it.
        seed: The run seed (data splits, partitions, random-init models, heads).
        device: Where models and data live.
        reuse: Bundles already built, keyed like the shared models (the runtime's own
            model, so it is not built twice).
    """

    def __init__(
        self,
        groups: Sequence[Any],
        *,
        n_clients: int,
        seed: int,
        device: torch.device,
        reuse: dict[str, ModelBundle] | None = None,
    ) -> None:
        from wirelessfl.data import load_dataset, partition
        from wirelessfl.models import build_model

        total = sum(g.clients for g in groups)
        if total != n_clients:
            raise ConfigError(
                f"strategy.groups: the groups hold {total} clients but n_clients is "
                f"{n_clients}; make their 'clients' add up to n_clients"
            )
        self.models: dict[str, ModelBundle] = dict(reuse or {})
        self.switches: dict[str, HeadSwitch] = {}
        datasets: dict[str, TaskData] = {}
        self.groups: list[ClientGroupRuntime] = []
        self.group_of: dict[int, ClientGroupRuntime] = {}
        first = 0
        for i, g in enumerate(groups):
            where = f"strategy.groups[{i}]"
            mkey = model_key(g.model, dict(g.model_options))
            try:
                if mkey not in self.models:
                    self.models[mkey] = build_model(
                        g.model, n_classes=2, seed=seed, **dict(g.model_options)
                    )
                bundle = self.models[mkey]
                options = dict(g.dataset_options)
                tokenizer = bundle.info.get("tokenizer")
                if tokenizer and "tokenizer" not in options and _takes_tokenizer(g.dataset):
                    options["tokenizer"] = tokenizer
                dkey = model_key(g.dataset, options)
                if dkey not in datasets:
                    datasets[dkey] = load_dataset(g.dataset, seed=seed, **options)
                data = datasets[dkey]
            except (UserError, ValueError) as err:
                raise ConfigError(f"{where}: {err}") from None
            if bundle.kind != data.kind:
                raise ConfigError(
                    f"{where}.model: {g.model!r} takes {bundle.kind} data but {g.dataset!r} is "
                    f"{data.kind} data"
                )
            if mkey not in self.switches:
                bundle.model.requires_grad_(False)
                self.switches[mkey] = HeadSwitch(bundle.model, bundle.head_modules[0])
            ids = list(range(first, first + g.clients))
            first += g.clients
            try:
                split = partition(
                    g.partition,
                    data.train.labels,
                    g.clients,
                    seed=seed + 7919 * i,  # a different split for each group of one data set
                    groups=data.train_groups,
                )
            except (UserError, ValueError) as err:
                raise ConfigError(f"{where}.partition: {err}") from None
            group = ClientGroupRuntime(
                index=i,
                clients=ids,
                model_key=mkey,
                bundle=bundle,
                heads=self.switches[mkey],
                data=data,
                train=data.train.to(device),
                test=data.test.to(device),
                indices={c: np.asarray(split.indices[j]) for j, c in enumerate(ids)},
                rank=int(g.rank),
            )
            self.groups.append(group)
            self.group_of.update(dict.fromkeys(ids, group))
        used = {g.model_key for g in self.groups}
        self.models = {k: b for k, b in self.models.items() if k in used}
        for bundle in self.models.values():
            bundle.model.to(device)
        self.sizes = np.array([len(self.group_of[c].indices[c]) for c in range(n_clients)], float)
