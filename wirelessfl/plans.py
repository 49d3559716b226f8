"""What the server decided for a round: the whole round (:class:`RoundPlan`, from the
simulator) and each training client's part of it (:class:`ClientPlan`, from the algorithm);
and the model sizes that decisions are costed with (:class:`ModelGeometry`)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from channels import lora_training_flops

__all__ = [
    "AirRound",
    "ClientPlan",
    "ModelGeometry",
    "RoundPlan",
    "WeightedUpdate",
    "client_plan_from_state",
    "client_plan_state",
    "round_plan_from_state",
    "round_plan_state",
]


@dataclass(frozen=True)
class RoundPlan:
    """The controller's decision for the clients that train in round ``round_index``.

    Attributes:
        round_index: t.
        clients: (n,) ids of the clients that train, ascending.
        ranks: (n,) LoRA rank per client; a scalar is broadcast.
        ratios: (n,) sparsification O_k per client; a scalar is broadcast.
        bound: gamma^t, the convergence-bound term the controller expects.
        n_scheduled: K^t, clients scheduled (including those that dropped or are in outage).
        bits: b, the quantiser's bits per sent LoRA value the controller chose
            (``controller.bits_choices``); ``None``: the scenario's quantiser.
    """

    round_index: int
    clients: np.ndarray
    ranks: np.ndarray
    ratios: np.ndarray
    bound: float
    n_scheduled: int
    bits: int | None = None

    def __post_init__(self) -> None:
        clients = np.asarray(self.clients, dtype=int).reshape(-1)
        n = clients.size
        object.__setattr__(self, "clients", clients)
        for name, dtype in (("ranks", int), ("ratios", float)):
            value = np.asarray(getattr(self, name), dtype=dtype)
            if value.ndim == 0:  # a scalar: np.full is several times cheaper than broadcasting
                value = np.full(n, value, dtype=dtype)
            elif value.shape != (n,):
                value = np.broadcast_to(value, (n,))
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class ClientPlan:
    """What the server decided for one client's round.

    An algorithm with more knobs per client (a sketch size, a router temperature) returns a
    frozen dataclass subclass with extra fields from its ``plan`` step.

    Attributes:
        client: client id.
        round_index: t.
        rank: LoRA rank r_k the client trains and sends.
        ratio: sparsification O_k: the fraction of its update's values the client sends.
        bits: b, the quantiser's bits per sent LoRA value (``None``: the scenario's quantiser).
    """

    client: int
    round_index: int
    rank: int
    ratio: float
    bits: int | None = None


@dataclass(frozen=True)
class WeightedUpdate:
    """One update the server adds in an event-driven mode (``wirelessfl.servers``):
    ``x <- x + weight (Delta + mix (x_start - x))``, x_start the global state the client
    downloaded.

    Attributes:
        client: the client whose pending update it is.
        weight: w (FedAsync's alpha_t, FedBuff's eta_g s(tau) / M).
        mix: 1.0 for FedAsync's mixing of the client's model (x_start + Delta), 0.0 for an
            update added as it is (FedBuff).
        staleness: tau, aggregations the update missed.
    """

    client: int
    weight: float
    mix: float
    staleness: int


@dataclass(frozen=True)
class ModelGeometry:
    """Sizes the network side needs: adapted layer shapes and compute per local round."""

    layer_shapes: tuple[tuple[int, int], ...]  # (d, l) per adapted layer
    base_params: int  # frozen parameters
    batch_size: int
    seq_len: int  # tokens per sample (1 for non-sequence models)
    fixed_values: int = 0  # values sent dense every round whatever O and r (e.g. a task head)
    # a fixed rank per adapted layer (learner.rank_pattern), None: the controller's rank;
    # empty: every layer at the controller's rank
    layer_ranks: tuple[int | None, ...] = ()

    @property
    def params_per_rank(self) -> int:
        """Sum of (d + l) over the adapted layers at the controller's rank (all of them without
        fixed ranks): payload values per unit of rank."""
        return int(sum(d + ell for d, ell in self.free_shapes))

    @property
    def has_fixed_ranks(self) -> bool:
        """Whether some adapted layer has a rank of its own (``learner.rank_pattern``)."""
        return any(r is not None for r in self.layer_ranks)

    def ranks_at(self, rank: int) -> tuple[int, ...]:
        """r_l per adapted layer when the controller's rank is ``rank``: the layer's fixed rank
        where it has one, else ``rank``."""
        if not self.layer_ranks:
            return (int(rank),) * len(self.layer_shapes)
        return tuple(int(rank) if r is None else int(r) for r in self.layer_ranks)

    @property
    def free_shapes(self) -> tuple[tuple[int, int], ...]:
        """(d, l) of the adapted layers that train at the controller's rank."""
        if not self.layer_ranks:
            return self.layer_shapes
        pairs = zip(self.layer_shapes, self.layer_ranks, strict=True)
        return tuple(shape for shape, r in pairs if r is None)

    def training_flops(self, rank: int, *, steps: int, with_base: bool = True) -> float:
        """Estimated FLOPs of ``steps`` local steps with the controller's rank ``rank``
        (``channels.lora_training_flops``, linear in the LoRA values, summed over the layers
        at ``rank`` and those of a fixed rank); ``with_base=False`` leaves the frozen base's
        share out."""
        args = {"batch_size": self.batch_size, "steps": steps, "seq_len": self.seq_len}
        base = self.base_params if with_base else 0
        flops = lora_training_flops(list(self.free_shapes), rank, base_params=base, **args)
        pairs = zip(self.layer_shapes, self.layer_ranks, strict=False)
        for shape, fixed in pairs:
            if fixed is not None:
                flops += lora_training_flops([shape], fixed, **args)
        return float(flops)

    @property
    def fixed_lora_values(self) -> int:
        """Sum of r_l (d_l + l_l) over the layers with a fixed rank r_l: LoRA values that do
        not follow the controller's rank."""
        pairs = zip(self.layer_shapes, self.layer_ranks, strict=False)
        return int(sum(r * (d + ell) for (d, ell), r in pairs if r is not None))


# ---- checkpoints: plans of updates still in flight (the event-driven modes) ------------------
def round_plan_state(plan: RoundPlan) -> dict[str, Any]:
    """``plan`` as plain values (JSON or ``torch.save``; floats exact; ``bits`` only when the
    controller chose it)."""
    state = {
        "round_index": int(plan.round_index),
        "clients": plan.clients.tolist(),
        "ranks": plan.ranks.tolist(),
        "ratios": plan.ratios.tolist(),
        "bound": float(plan.bound),
        "n_scheduled": int(plan.n_scheduled),
    }
    return state if plan.bits is None else {**state, "bits": int(plan.bits)}


def round_plan_from_state(state: dict[str, Any]) -> RoundPlan:
    """The plan :func:`round_plan_state` describes."""
    return RoundPlan(**state)


def client_plan_state(plan: ClientPlan) -> dict[str, Any]:
    """``plan``'s fields as plain values, with ``class`` (``module:QualName``) when it is an
    algorithm's subclass (whose extra fields must be numbers, strings or tuples of them)."""
    state: dict[str, Any] = {f.name: getattr(plan, f.name) for f in fields(plan)}
    kind = type(plan)
    if kind is not ClientPlan:
        state["class"] = f"{kind.__module__}:{kind.__qualname__}"
    return state


def client_plan_from_state(state: dict[str, Any]) -> ClientPlan:
    """The plan :func:`client_plan_state` describes, sequences as tuples (a plan is frozen;
    JSON reads them back as lists); ``ValueError`` if ``class`` names no :class:`ClientPlan`."""
    values = {name: _tuples(value) for name, value in state.items()}
    kind: Any = ClientPlan
    name = values.pop("class", None)
    if name is not None:
        module, _, qualname = name.partition(":")
        kind = importlib.import_module(module)
        for part in qualname.split("."):
            kind = getattr(kind, part)
        if not (isinstance(kind, type) and issubclass(kind, ClientPlan)):
            raise ValueError(f"{name} is not a ClientPlan")
    return kind(**values)


def _tuples(value: Any) -> Any:
    """``value`` with every list, at any depth, made a tuple."""
    if isinstance(value, list | tuple):
        return tuple(_tuples(v) for v in value)
    return value


@dataclass(frozen=True)
class AirRound:
    """An over-the-air aggregation (``channel.uplink: aircomp``, :mod:`channels.aircomp`): the
    server receives sum_k c_k x_k + z / sqrt(eta) for unit-power symbols x_k.

    Attributes:
        gain: client id -> received coefficient c_k (1: aligned).
        denoising: eta, the received SNR of a unit coefficient (linear, > 0).
    """

    gain: dict[int, float]
    denoising: float
