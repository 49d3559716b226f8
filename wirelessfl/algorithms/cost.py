"""An algorithm's cost model: what each client sends and what a round costs convergence, as
functions of the controller's decision. No torch: network-only runs and the controllers use it.

Every algorithm publishes one (``CostModel`` on its spec or class). The controllers (TSFA's
offline search, the Lyapunov online step, the sketch and fixed controllers) plan with it and
with nothing else; the network-only learner sizes its messages with it; the real algorithm
plans its clients with it (:meth:`CostModel.plan`), so the plan a controller costs is the plan
that trains. Its sizes are size-only :class:`~wirelessfl.algorithms.message.Message` objects
counted by :meth:`Message.payload`, like the real messages (tests hold the two equal).

The decision a controller makes is in the algorithm's own knobs (:attr:`CostModel.knobs`):

- ``ratio``: the fraction O^t of the compression stage (when the stage follows the controller,
  :mod:`wirelessfl.algorithms.compression`); the upload is affine in O
  (:meth:`CostModel.affine_upload`) and the penalty is eq. (14)'s form
  ``offset + a (1 - O)^2 / O^4`` (:meth:`CostModel.ratio_penalty_parts`);
- ``rank``: the rank each client trains and sends, capped by the controller (a per-round rank
  r^t <= r, or a per-client k_i); the cost model maps the cap to each client's rank.

An algorithm with neither (FLoRAL, H2Tune: their payload is fixed by their settings) runs
under the ``fixed`` controller only; the others refuse it in one line.

The default model here is a LoRA algorithm that trains and sends its factors (or their update)
at the controller's rank, dense unless the compression stage sparsifies them, plus the values
trained in full (the task head) dense; its download is the dense rank-r_k LoRA and the head.
Its penalty is Theorem 1's gamma (eq. 14) at each client's rank and sent fraction, the bound
SOFT derives for sparsified LoRA updates ("the dense bound at the sent fraction"): an algorithm
with a bound of its own (FSLoRA's Theorem 4.4) overrides :meth:`CostModel.client_penalty`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from optim import BoundConstants, convergence_bound
from optim.bound import scalar_bound_parts
from optim.quantization_bound import quantization_term
from wirelessfl.algorithms.compression import Compression, StageDefaults, resolve_compression
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.algorithms.quantization import SCALE_BITS, Quantizer, resolve_quantizer
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan, ModelGeometry, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario

__all__ = ["RANK", "RATIO", "CostModel", "FixedPayloadCost", "UploadSplit"]

#: Knob names (:attr:`CostModel.knobs`).
RATIO = "ratio"
RANK = "rank"


class UploadSplit(tuple):
    """``(ratio_values, fixed_values, side_bits)`` of one client's upload at ratio 1: the
    values the stage's ratio scales, those always sent, and side bits (index sets). Values are
    of v bits: under the quantiser stage a value of b bits counts b / v (its scales too)."""

    __slots__ = ()

    def __new__(cls, ratio_values: float, fixed_values: float, side_bits: float = 0.0):
        return super().__new__(cls, (float(ratio_values), float(fixed_values), float(side_bits)))

    @property
    def ratio_values(self) -> float:
        return self[0]

    @property
    def fixed_values(self) -> float:
        return self[1]

    @property
    def side_bits(self) -> float:
        return self[2]


class CostModel:
    """Sizes, plans and penalty of an algorithm (see the module docstring).

    Args:
        settings: the algorithm's settings (its ``strategy`` table).
        scenario: the whole scenario (N, K, seed, payload, compression, devices).
        geometry: the model's sizes (adapted layers, values trained in full, base size).

    Class attributes a subclass sets:
        OWN_STAGE: the algorithm's own compression stage (``compression.* = null``).
        COMPRESSES: what the stage acts on, ``"updates"`` (error feedback applies),
            ``"factors"`` (trained factors: no error feedback) or ``None`` (the message
            cannot take a stage; refused in one line).
        TAKES_RANK: whether clients train at the controller's rank (the ``rank`` knob).
    """

    OWN_STAGE: ClassVar[StageDefaults] = StageDefaults()
    COMPRESSES: ClassVar[str | None] = "updates"
    TAKES_RANK: ClassVar[bool] = True
    #: Why the message takes no stage (the refusal's reason, when ``COMPRESSES`` is None).
    NO_STAGE_REASON: ClassVar[str] = "its message has no LoRA factors to sparsify"
    #: Whether each adapted layer's message holds both factors (a B-only message cannot take
    #: SOFT's importance sparsifier, which weighs the rank components of pairs).
    SENDS_PAIRS: ClassVar[bool] = True
    #: Whether the message carries the client's local factors (``compression.importance:
    #: factors`` computes eq. (3)'s weights from them).
    CARRIES_FACTORS: ClassVar[bool] = False
    #: Whether the penalty depends on the model rank r (TSFA's offline search trades r by it;
    #: without, it takes the largest feasible rank).
    PENALTY_DEPENDS_ON_RANK: ClassVar[bool] = True
    #: Whether the algorithm's aggregation is a weighted sum of single updates that each may
    #: carry any weight (the base class's ``aggregate``): it then runs in the event-driven
    #: modes (``server.mode``: FedAsync, FedBuff, semi-sync), which add updates one at a time
    #: or a few at a time with staleness weights. False refuses those modes in one line.
    SINGLE_UPDATES: ClassVar[bool] = False
    #: Whether the clients train in the runtime's trainers (sequential or batched): then they
    #: take the runtime's sample-level DP-SGD (``privacy.dp_sgd``). False (an algorithm with
    #: trainers of its own) refuses DP-SGD in one line.
    RUNTIME_TRAINER: ClassVar[bool] = True
    #: Whether the algorithm trains and sends a layer with a fixed rank of its own
    #: (``learner.rank_pattern``) at that rank, whatever rank the controller gives the others
    #: (the sizes below count r_l (d_l + l_l) per layer). False refuses fixed ranks in one line
    #: giving :attr:`FIXED_RANKS_REASON`.
    FIXED_RANKS: ClassVar[bool] = True
    FIXED_RANKS_REASON: ClassVar[str] = "gives every adapted layer one rank per client"
    #: Whether :meth:`client_penalty` adds the quantiser's term (:meth:`quantization_penalty`):
    #: False refuses ``controller.bits_choices`` (nothing would weigh b against its bits).
    QUANTIZER_PENALTY: ClassVar[bool] = True

    def __init__(self, settings: Any, *, scenario: Scenario, geometry: ModelGeometry) -> None:
        self.settings = settings
        self.scenario = scenario
        self.geometry = geometry
        self.name = scenario.algorithm.name
        self.model_rank: int | None = None
        self.compression = resolve_compression(
            getattr(scenario, "compression", None), self.OWN_STAGE
        )
        self.quantizer = resolve_quantizer(getattr(scenario, "quantize", None))
        problem = self.stage_refusal(self.name, scenario)
        if problem is not None:
            raise ConfigError(problem)
        self._check_fixed_ranks()

    @classmethod
    def stage_refusal(cls, algorithm: str, scenario: Any) -> str | None:
        """The one line refusing ``scenario``'s compression or quantiser stage to
        ``algorithm`` (None: its message takes both). The scenario asks it at load, before
        any model is built; the cost model asks again."""
        stage = resolve_compression(getattr(scenario, "compression", None), cls.OWN_STAGE)
        quantizer = resolve_quantizer(getattr(scenario, "quantize", None))
        chooses = bool(getattr(getattr(scenario, "controller", None), "bits_choices", None))
        return cls._compression_refusal(algorithm, stage) or cls._quantizer_refusal(
            algorithm, quantizer, chooses
        )

    @classmethod
    def fixed_ranks_refusal(cls, algorithm: str, key: str) -> str:
        """The one line refusing layers of a fixed rank (``key``) to ``algorithm``."""
        return (
            f"{key}: algorithm {algorithm!r} {cls.FIXED_RANKS_REASON}, so it cannot keep a "
            "layer at a fixed rank; leave it at its default (null)"
        )

    def _check_fixed_ranks(self) -> None:
        """One line when the model has layers of fixed rank and this algorithm cannot train
        them at it (the scenario refuses it at load too)."""
        if self.FIXED_RANKS or not self.geometry.has_fixed_ranks:
            return
        lora = getattr(self.scenario.learner, "kind", "lora") == "lora"
        key = "learner.rank_pattern" if lora else "learner.shape.layer_ranks"
        raise ConfigError(self.fixed_ranks_refusal(self.name, key))

    # ---- the stage --------------------------------------------------------------------------
    @classmethod
    def _compression_refusal(cls, algorithm: str, stage: Compression) -> str | None:
        """One line for a stage this algorithm's message cannot take (None: it takes it)."""
        if not stage.active:
            return None
        if cls.COMPRESSES is None:
            return (
                f"compression.sparsifier: algorithm {algorithm!r} cannot take a compression "
                f"stage ({cls.NO_STAGE_REASON}); use sparsifier: none"
            )
        if stage.sparsifier == "soft" and not cls.SENDS_PAIRS:
            return (
                f"compression.sparsifier: soft weighs each rank component by ||B_i||^2 ||A_i||^2 "
                f"of the pair it sends, and algorithm {algorithm!r} sends B alone; use topk, "
                "random or structured"
            )
        if stage.importance == "factors" and stage.sparsifier == "soft" and not cls.CARRIES_FACTORS:
            return (
                f"compression.importance: factors takes eq. (3)'s weights from the client's local "
                f"factors, which algorithm {algorithm!r}'s message does not carry; use update"
            )
        if cls.COMPRESSES == "factors" and stage.error_feedback:
            return (
                f"compression.error_feedback: algorithm {algorithm!r} sends its trained factors, "
                "not an update, so a memory of unsent values has nothing to add to; set "
                "compression.error_feedback: false"
            )
        return None

    @classmethod
    def _quantizer_refusal(cls, algorithm: str, quantizer: Quantizer, chooses: bool) -> str | None:
        """One line for a quantiser this algorithm's message cannot take, or a choice of b
        (``chooses``: ``controller.bits_choices``) its penalty cannot weigh; None: neither."""
        if not (quantizer.active or chooses):
            return None
        key = "quantize.bits" if quantizer.active else "controller.bits_choices"
        if cls.COMPRESSES is None:
            return (
                f"{key}: algorithm {algorithm!r} cannot take a quantiser stage "
                f"({cls.NO_STAGE_REASON.replace('sparsify', 'quantise')}); leave it null"
            )
        if cls.COMPRESSES == "factors" and quantizer.error_feedback:
            return (
                f"quantize.error_feedback: algorithm {algorithm!r} sends its trained factors, "
                "not an update, so a memory of quantisation residuals has nothing to add to; set "
                "quantize.error_feedback: false"
            )
        if chooses and not cls.QUANTIZER_PENALTY:
            return (
                f"controller.bits_choices: algorithm {algorithm!r}'s penalty has no quantiser "
                "term to weigh b against its bits; set quantize.bits for a fixed b"
            )
        return None

    @property
    def quantizes(self) -> bool:
        """Whether the run quantises: a ``quantize`` stage or a controller choosing b
        (``controller.bits_choices``)."""
        chooses = getattr(getattr(self.scenario, "controller", None), "bits_choices", None)
        return self.quantizer.active or bool(chooses)

    def quantizer_for(self, plan: ClientPlan) -> Quantizer:
        """The quantiser of ``plan``: at the controller's b (``plan.bits``; b = v sends the
        values unquantised), else the scenario's."""
        if plan.bits is None:
            return self.quantizer
        full = int(plan.bits) >= self.scenario.payload.bits_per_value
        return self.quantizer.at_bits(None if full else int(plan.bits))

    # ---- knobs ------------------------------------------------------------------------------
    @property
    def knobs(self) -> frozenset[str]:
        """What a controller may decide for this algorithm: ``ratio``, ``rank``, both, none."""
        knobs = set()
        if self.compression.follows_controller:
            knobs.add(RATIO)
        if self.TAKES_RANK:
            knobs.add(RANK)
        return frozenset(knobs)

    # ---- 1. plan ----------------------------------------------------------------------------
    def start(self, *, rank: int) -> None:
        """The run's model rank r (the largest rank any client gets), before round 0."""
        self.model_rank = int(rank)

    def rank_of(self, round_plan: RoundPlan, model_rank: int | None) -> int:
        """The model rank to plan with: ``model_rank``, the run's, or the round's largest."""
        if model_rank is not None:
            return int(model_rank)
        if self.model_rank is not None:
            return int(self.model_rank)
        return int(round_plan.ranks.max()) if len(round_plan.ranks) else 1

    def plan(self, round_plan: RoundPlan, *, model_rank: int | None = None) -> list[ClientPlan]:
        """One plan per client that trains: the controller's rank, the stage's ratio.

        ``model_rank`` is the rank r of the model the clients' ranks are cut from (the
        controller's candidate; default: the run's, :meth:`start`)."""
        t, rp, stage = round_plan.round_index, round_plan, self.compression
        sent = {o: stage.ratio_for(o) for o in set(rp.ratios.tolist())}
        columns = (rp.clients.tolist(), rp.ranks.tolist(), rp.ratios.tolist())
        return [ClientPlan(c, t, r, sent[o], rp.bits) for c, r, o in zip(*columns, strict=True)]

    def client_profile(self, client: int) -> Any:
        """What makes ``client``'s plans differ from another's under the same decision (clients
        with equal profiles cost the same); default: nothing, every client alike."""
        return 0

    def size_key(self, plan: ClientPlan) -> Any:
        """A hashable key such that plans of equal keys have equal sizes (for caching)."""
        return (type(plan), plan.rank, plan.ratio, plan.bits, self.client_profile(plan.client))

    def download_key(self, plan: ClientPlan) -> Any:
        """A hashable key such that plans of equal keys download equal sizes (default: the
        upload's :meth:`size_key`)."""
        return self.size_key(plan)

    def knob_text(self) -> str:
        """The algorithm's knobs in words (for one-line refusals)."""
        knobs = self.knobs
        if not knobs:
            return "its payload is fixed by its settings"
        words = {RATIO: "the compression ratio O^t", RANK: "the clients' rank"}
        return "it has " + " and ".join(words[k] for k in sorted(knobs))

    # ---- sizes ------------------------------------------------------------------------------
    def check_network_only(self) -> None:  # noqa: B027 - optional hook
        """One line when network-only runs cannot size this algorithm's messages (from
        ``learner.shape``); they can by default."""

    @property
    def lora_shapes(self) -> Sequence[tuple[int, int]]:
        """(d, l) per adapted layer: values per rank component d + l."""
        return self.geometry.layer_shapes

    @property
    def dp_side_bits(self) -> float:
        """Bits the DP stage adds to every upload: the clipped-count bit of adaptive clipping
        (``privacy.adaptive_clipping``; docs/privacy.md), else 0."""
        return self.scenario.privacy.upload_side_bits

    @property
    def dense_values(self) -> int:
        """Values trained in full and sent dense both ways (the task head)."""
        return int(self.geometry.fixed_values)

    def lora_ranks(self, plan: ClientPlan) -> tuple[int, ...]:
        """r_l per adapted layer of ``plan``'s message: the layer's fixed rank
        (``learner.rank_pattern``) where it has one, else the client's rank r_k."""
        return self.geometry.ranks_at(plan.rank)

    def lora_groups(self, plan: ClientPlan) -> Counter[int]:
        """Sizes of the tensor groups the stage sparsifies one by one, with their counts:
        one group of r_l (d + l) values per adapted layer (:meth:`lora_ranks`)."""
        groups = self.__dict__.setdefault("_groups_at", {})
        if plan.rank not in groups:
            pairs = zip(self.lora_shapes, self.lora_ranks(plan), strict=True)
            groups[plan.rank] = Counter(r * (d + ell) for (d, ell), r in pairs)
        return groups[plan.rank]

    def upload(self, plan: ClientPlan) -> Message:
        """The upload of ``plan`` as sizes only: each LoRA group sparsified by the stage (one
        index space per group; quantised: b per kept value and its scales), the dense values
        as one dense space."""
        stage, quantizer = self.compression, self.quantizer_for(plan)
        spaces = []
        for n, copies in self.lora_groups(plan).items():
            kept = stage.kept(plan.ratio, n)
            space = IndexSpace((), kept, n, copies)
            if quantizer.active:
                space = replace(space, value_bits=quantizer.bits, scales=quantizer.n_scales(kept))
            spaces.append(space)
        if self.dense_values:
            spaces.append(IndexSpace.dense(self.dense_values))
        return Message(sparse=spaces, side_bits=self.dp_side_bits)

    def download(self, plan: ClientPlan) -> Message:
        """The download of ``plan`` as sizes only: the dense LoRA at the ranks r_l of
        :meth:`lora_ranks` and the head."""
        pairs = zip(self.lora_shapes, self.lora_ranks(plan), strict=True)
        n = sum(r * (d + ell) for (d, ell), r in pairs) + self.dense_values
        return Message(sparse=[IndexSpace.dense(n)])

    def affine_upload(self, plan: ClientPlan) -> UploadSplit:
        """``plan``'s upload as values the stage's ratio scales plus values always sent (the
        linear delay model the ratio knob is optimised with; exact counts: :meth:`upload`)."""
        lora = sum(n * copies for n, copies in self.lora_groups(plan).items())
        quantizer = self.quantizer_for(plan)
        if self.compression.follows_controller and quantizer.active:
            return self._quantized_split(quantizer, plan, lora)
        if self.compression.follows_controller:
            return UploadSplit(lora, self.dense_values, self.dp_side_bits)
        sent = self.upload(replace(plan, ratio=self.compression.ratio_for(plan.ratio)))
        if quantizer.active:  # the upload's bits, counted in values of v bits
            v = self.scenario.payload.bits_per_value
            payload = sent.payload(bits_per_value=v, count_index=False)
            return UploadSplit(0, (payload.bits - payload.side_bits) / v, payload.side_bits)
        payload = sent.payload(bits_per_value=1, count_index=False)
        return UploadSplit(0, payload.n_values, payload.side_bits)

    def _quantized_split(self, quantizer: Quantizer, plan: ClientPlan, lora: int) -> UploadSplit:
        """The affine upload of a quantised stage following O, in values of v bits: b / v per
        LoRA value, plus 32 / (block v) per value for block scales or 32 per layer as side
        bits (one scale per layer)."""
        v = float(self.scenario.payload.bits_per_value)
        per_value = quantizer.bits / v
        if quantizer.block_size is not None:
            return UploadSplit(
                lora * (per_value + SCALE_BITS / (quantizer.block_size * v)),
                self.dense_values,
                self.dp_side_bits,
            )
        layers = sum(self.lora_groups(plan).values())
        side = SCALE_BITS * layers + self.dp_side_bits
        return UploadSplit(lora * per_value, self.dense_values, side)

    def upload_bits(self, plan: ClientPlan) -> float:
        """Uplink bits of ``plan`` [bit], counted as the simulator counts a real message."""
        payload = self.scenario.payload
        return self.upload(plan).bits(
            bits_per_value=payload.bits_per_value, count_index=payload.index_overhead
        )

    # ---- penalty ----------------------------------------------------------------------------
    def client_penalty(
        self, plan: ClientPlan, *, n_scheduled: int, constants: BoundConstants
    ) -> float:
        """The convergence penalty of ``plan`` in a round of ``n_scheduled`` clients: gamma of
        eq. (14) at the client's rank and ratio, plus the quantiser's term
        (:meth:`quantization_penalty`)."""
        gamma = convergence_bound(
            rank=plan.rank,
            sparsification=plan.ratio,
            n_scheduled=n_scheduled,
            n_clients=self.scenario.n_clients,
            constants=constants,
        )
        return float(gamma) + self.quantization_penalty(
            plan, n_scheduled=n_scheduled, constants=constants
        )

    def quantization_penalty(
        self, plan: ClientPlan, *, n_scheduled: int, constants: BoundConstants
    ) -> float:
        """gamma_Q of ``plan``'s quantiser (:mod:`optim.quantization_bound`), q at the largest
        block it quantises (``block_size``, or the largest dense LoRA group at the plan's
        rank); 0 without a quantiser."""
        quantizer = self.quantizer_for(plan)
        if not quantizer.active:
            return 0.0
        block = quantizer.block_size or max(self.lora_groups(plan), default=0)
        return quantization_term(
            variance_factor=quantizer.variance_factor(block),
            n_scheduled=n_scheduled,
            constants=constants,
        )

    def penalty(
        self, plans: Sequence[ClientPlan], *, n_scheduled: int, constants: BoundConstants
    ) -> float:
        """The round's penalty: the mean of its clients' (the clients' common value when all
        plans are alike)."""
        if not plans:
            return float("nan")
        keys = {(p.rank, p.ratio, p.bits, self.client_profile(p.client)) for p in plans}
        if len(keys) == 1:
            return self.client_penalty(plans[0], n_scheduled=n_scheduled, constants=constants)
        values = [
            self.client_penalty(p, n_scheduled=n_scheduled, constants=constants) for p in plans
        ]
        return float(sum(values) / len(values))

    def ratio_penalty_parts(
        self, plans: Sequence[ClientPlan], *, n_scheduled: int, constants: BoundConstants
    ) -> tuple[float, float]:
        """``(offset, a)`` with the round's penalty = offset + a (1 - O)^2 / O^4 in the
        stage's ratio O: eq. (14) at the clients' mean rank (both parts are linear in r), the
        quantiser's mean term in the offset."""
        ranks = [p.rank for p in plans]
        rank = ranks[0] if len(set(ranks)) == 1 else sum(ranks) / len(ranks)
        offset, a = scalar_bound_parts(
            rank=rank,
            n_scheduled=n_scheduled,
            n_clients=self.scenario.n_clients,
            constants=constants,
        )
        quantized = [
            self.quantization_penalty(p, n_scheduled=n_scheduled, constants=constants)
            for p in plans
        ]
        return offset + (sum(quantized) / len(quantized) if quantized else 0.0), a

    # ---- bookkeeping ------------------------------------------------------------------------
    def downloaded(self, plan: ClientPlan) -> None:  # noqa: B027 - optional hook
        """``plan.client`` received its download (what the next one holds may depend on it)."""

    def aggregated(self, round_index: int, plans: dict[int, ClientPlan]) -> None:  # noqa: B027
        """The server aggregated the arrived clients' messages (their ``plans``)."""

    def state_dict(self) -> dict[str, Any]:
        """Bookkeeping to checkpoint (nothing by default)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Restore :meth:`state_dict`."""


class FixedPayloadCost(CostModel, ABC):
    """A payload fixed by the algorithm's settings, dense both ways (FLoRAL's and H2Tune's
    families): no knob for a controller, no LoRA factors for a compression stage, no known
    bound (the penalty is NaN)."""

    COMPRESSES = None
    TAKES_RANK = False
    PENALTY_DEPENDS_ON_RANK = False
    FIXED_RANKS = False

    @classmethod
    def fixed_ranks_refusal(cls, algorithm: str, key: str) -> str:
        """The line every peft setting gets from these families
        (``FederatedAlgorithm.refuse_peft_settings``)."""
        return (
            f"{key}: algorithm {algorithm!r} trains adapters of its own, not peft's, and "
            "ignores it; leave it at its default (None)"
        )

    @abstractmethod
    def up_values(self, plan: ClientPlan) -> int:
        """Values ``plan.client`` sends this round."""

    def down_values(self, plan: ClientPlan) -> int:
        """Values ``plan.client`` receives this round (default: as many as it sends)."""
        return self.up_values(plan)

    def upload(self, plan: ClientPlan) -> Message:
        n = self.up_values(plan)
        return Message(sparse=[IndexSpace.dense(n)] if n else [])

    def download(self, plan: ClientPlan) -> Message:
        n = self.down_values(plan)
        return Message(sparse=[IndexSpace.dense(n)] if n else [])

    def client_penalty(
        self, plan: ClientPlan, *, n_scheduled: int, constants: BoundConstants
    ) -> float:
        return math.nan

    def ratio_penalty_parts(
        self, plans: Sequence[ClientPlan], *, n_scheduled: int, constants: BoundConstants
    ) -> tuple[float, float]:
        return math.nan, 0.0
