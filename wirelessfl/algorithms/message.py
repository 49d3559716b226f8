"""What one side sends the other in a round: named tensors, tagged shared or private.

A :class:`Message` holds

- ``shared``: name -> tensor, what goes over the air (uploaded by a client, or broadcast by the
  server) and what the server aggregates;
- ``private``: name -> value, what the client keeps for its next round (error memory, optimizer
  moments, a router, a personal head): never uploaded, never averaged, checkpointed;
- ``sparse``: the index spaces of the sparse shared tensors, each with the number of values
  actually sent out of the entries it spans (:class:`IndexSpace`); a shared tensor in no index
  space is sent dense;
- ``diagnostics``: what the simulation measures but nobody sends (e.g. a client's local
  factors, for the covariance term of eq. 12);
- ``side_bits``: bits of side information sent besides the values (an index set the receiver
  cannot infer, such as FSLoRA's sketch; a seed), always counted;
- ``lora``: which shared tensors are LoRA factors, per adapted layer (:class:`LoraTensors`):
  what the compression stage sparsifies (:mod:`wirelessfl.algorithms.compression_stage`).

:meth:`Message.payload` (and its shorthand :meth:`Message.bits`) is the one place where payload
bits are counted: ``v`` bits per value sent (``b`` per value and 32 per scale in a space the
quantiser stage quantised), plus the side information, plus, when asked, the
index bits of every sparse space (the smaller of a bitmask and a coordinate list,
``channels.index_overhead_bits``). A message may also be *size-only* (no tensors, only
:class:`IndexSpace` counts): the network-only learner sends those.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from channels.payload import index_overhead_bits, payload_bits
from wirelessfl.algorithms.quantization import SCALE_BITS

__all__ = ["IndexSpace", "LoraTensors", "Message", "Payload"]


@dataclass(frozen=True)
class IndexSpace:
    """Values sent out of one index space (or out of each of ``copies`` equal ones).

    Attributes:
        names: the shared tensors the space spans (empty for a size-only message).
        n_sent: values transmitted (kept positions, zeros included).
        n_total: entries of the space; ``n_sent == n_total`` is a dense space (no index).
        copies: how many identical spaces this stands for (a size-only message of layers of
            equal shapes); 1 for a space of real tensors.
        value_bits: b [bit] per value sent when the quantiser stage quantised the space
            (:mod:`wirelessfl.algorithms.quantization`); ``None``: the message's v.
        scales: 32-bit scales the quantiser sent with the space (per copy).
    """

    names: tuple[str, ...]
    n_sent: int
    n_total: int
    copies: int = 1
    value_bits: int | None = None
    scales: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.n_sent <= self.n_total or self.copies < 1:
            raise ValueError(
                f"need 0 <= n_sent <= n_total and copies >= 1, got {self.n_sent}, "
                f"{self.n_total}, {self.copies}"
            )

    @classmethod
    def dense(cls, n_values: int) -> IndexSpace:
        """A size-only space of ``n_values`` values all sent (no index)."""
        return cls((), n_values, n_values)

    def value_and_scale_bits(self, bits_per_value: float) -> float:
        """Bits of the values sent (at b, or at v when unquantised) and of the scales."""
        v = bits_per_value if self.value_bits is None else self.value_bits
        per_copy = float(payload_bits(self.n_sent, v)) + SCALE_BITS * self.scales
        return self.copies * per_copy

    @property
    def index_bits(self) -> int:
        """min(bitmask, coordinate list) [bit] per copy, times ``copies``; 0 when dense."""
        if self.n_total == 0:
            return 0
        return self.copies * int(index_overhead_bits(self.n_sent, self.n_total))


@dataclass(frozen=True)
class LoraTensors:
    """The LoRA factors of one adapted layer in a message.

    Attributes:
        layer: the adapted module's name (the key of the client's error memory).
        b: the shared entry of ``lora_B`` (d_out, r_k[, 1, 1]).
        a: the shared entry of ``lora_A`` (r_k, d_in[, k, k]); ``None`` when only B is sent.
        components: which rank components of the model the r_k columns are, ascending
            (``None``: the first r_k).
    """

    layer: str
    b: str
    a: str | None = None
    components: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Payload:
    """What a message costs on the air.

    Attributes:
        n_values: values sent (the sparse spaces' kept counts plus every dense shared tensor).
        n_total: values of the dense equivalent of what is shared.
        index_bits: index overhead of the sparse spaces [bit].
        side_bits: side information sent besides the values [bit].
        bits: v per value sent, plus ``side_bits``, plus ``index_bits`` when counted [bit].
    """

    n_values: int
    n_total: int
    index_bits: int
    bits: float
    side_bits: float = 0.0


@dataclass
class Message:
    """Named tensors of one transmission (see the module docstring)."""

    shared: dict[str, Any] = field(default_factory=dict)
    private: dict[str, Any] = field(default_factory=dict)
    sparse: list[IndexSpace] = field(default_factory=list)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    side_bits: float = 0.0
    lora: list[LoraTensors] = field(default_factory=list)

    def add_sparse(self, tensors: dict[str, Any], *, n_sent: int, n_total: int) -> None:
        """Share ``tensors`` as one index space with ``n_sent`` of ``n_total`` values sent."""
        self.shared.update(tensors)
        self.sparse.append(IndexSpace(tuple(tensors), int(n_sent), int(n_total)))

    def quantized_space(
        self, index: int, tensors: dict[str, Any], *, bits: int, scales: int
    ) -> None:
        """Replace the tensors of index space ``index`` by their quantised values, sent at
        ``bits`` per value with ``scales`` 32-bit scales (the quantiser stage)."""
        self.shared.update(tensors)
        self.sparse[index] = replace(self.sparse[index], value_bits=int(bits), scales=int(scales))

    def payload(self, *, bits_per_value: float, count_index: bool) -> Payload:
        """Values, index bits and payload bits of what is shared (see :class:`Payload`).

        Args:
            bits_per_value: v [bit].
            count_index: add the index bits to the payload (``payload.index_overhead``).
        """
        covered = {name for space in self.sparse for name in space.names}
        dense = sum(int(t.numel()) for name, t in self.shared.items() if name not in covered)
        n_values = dense + sum(space.n_sent * space.copies for space in self.sparse)
        n_total = dense + sum(space.n_total * space.copies for space in self.sparse)
        index = sum(space.index_bits for space in self.sparse)
        quantized = [space for space in self.sparse if space.value_bits is not None]
        if quantized:  # b per quantised value and 32 per scale, v per other value
            plain = n_values - sum(space.n_sent * space.copies for space in quantized)
            values_bits = float(payload_bits(plain, bits_per_value)) + sum(
                space.value_and_scale_bits(bits_per_value) for space in quantized
            )
        else:
            values_bits = float(payload_bits(n_values, bits_per_value))
        bits = values_bits + (index if count_index else 0)
        return Payload(n_values, n_total, index, bits + self.side_bits, self.side_bits)

    def bits(self, *, bits_per_value: float, count_index: bool) -> float:
        """Payload [bit]: v per value sent, the side bits, and the index bits if ``count_index``."""
        return self.payload(bits_per_value=bits_per_value, count_index=count_index).bits

    # ---- checkpoints (an upload still in flight in an event-driven mode) ----------------------
    def state_dict(self) -> dict[str, Any]:
        """The message as dicts, lists and tensors (what ``torch.load(weights_only=True)``
        reads back); the tensors are the message's own (move them to the CPU to save)."""
        return {
            "shared": dict(self.shared),
            "private": dict(self.private),
            "sparse": [_space_row(s) for s in self.sparse],
            "diagnostics": dict(self.diagnostics),
            "side_bits": self.side_bits,
            "lora": [
                [t.layer, t.b, t.a, None if t.components is None else list(t.components)]
                for t in self.lora
            ],
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> Message:
        """The message :meth:`state_dict` describes."""
        return cls(
            shared=dict(state["shared"]),
            private=dict(state["private"]),
            sparse=[IndexSpace(tuple(row[0]), *row[1:]) for row in state["sparse"]],
            diagnostics=dict(state["diagnostics"]),
            side_bits=state["side_bits"],
            lora=[
                LoraTensors(layer, b, a, None if comps is None else tuple(comps))
                for layer, b, a, comps in state["lora"]
            ],
        )


def _space_row(space: IndexSpace) -> list[Any]:
    """An index space as a checkpoint row (the quantiser's two entries only when it ran)."""
    row = [list(space.names), space.n_sent, space.n_total, space.copies]
    return row if space.value_bits is None else [*row, space.value_bits, space.scales]
