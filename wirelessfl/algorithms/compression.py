"""The compression stage as the network sees it: which sparsifier, at what ratio, and what it
keeps of a tensor group. No torch (the cost models and the scenario check use it).

A stage sparsifies the shared LoRA tensors of any algorithm's message on the client
(:mod:`wirelessfl.algorithms.compression_stage` applies it to real tensors). The scenario's
``compression`` section chooses it; a key left null takes the algorithm's own default
(:class:`StageDefaults`: SOFT's is its importance sparsifier, ``fedit_topk``'s top-k at 0.5
without error feedback, every other algorithm's none):

- ``sparsifier``: a ``wirelessfl.registries.SPARSIFIERS`` name; ``none`` sends everything;
- ``ratio``: the fraction O of each tensor group's values sent. Null: the controller's O^t
  (the stage is then a *ratio knob* of the controllers); a number: that fraction every round;
- ``error_feedback``: keep what was not sent in the client's memory and add it to the next
  update (eqs. 4-7);
- ``importance``: the soft sparsifier's eq. (3) weights from the update or the local factors.

A group of ``n`` values keeps ``round(O n)`` of them (``channels.payload.kept_values``), the
count the real sparsifiers keep exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from channels.payload import kept_values

__all__ = ["NO_COMPRESSION", "Compression", "StageDefaults", "resolve_compression"]

#: The sparsifier name that sends every value (no stage).
NO_COMPRESSION = "none"


@dataclass(frozen=True)
class StageDefaults:
    """An algorithm's own compression stage (what ``compression.* = null`` gives).

    Attributes:
        sparsifier: a sparsifier name (``"none"``: no stage).
        ratio: a fixed fraction sent, or ``None``: the controller's O^t.
        error_feedback: whether unsent values carry over to the next round.
    """

    sparsifier: str = NO_COMPRESSION
    ratio: float | None = None
    error_feedback: bool = True


@dataclass(frozen=True)
class Compression:
    """The resolved stage of a run (see the module docstring).

    Attributes:
        sparsifier: the sparsifier's registry name; ``"none"`` compresses nothing.
        ratio: a fixed fraction sent every round, or ``None``: the controller's O^t.
        error_feedback: unsent values kept in the client's memory (eqs. 4-7).
        importance: ``"update"`` or ``"factors"`` (the soft sparsifier's eq. 3 weights).
    """

    sparsifier: str = NO_COMPRESSION
    ratio: float | None = None
    error_feedback: bool = True
    importance: str = "update"

    @property
    def active(self) -> bool:
        """Whether the stage sparsifies anything."""
        return self.sparsifier != NO_COMPRESSION

    @property
    def follows_controller(self) -> bool:
        """Whether the controller decides the ratio (O^t): a sparsifier and no fixed ratio."""
        return self.active and self.ratio is None

    def ratio_for(self, decided: float) -> float:
        """The fraction a client sends when the controller decided ``decided``: 1 without a
        stage, the fixed ratio, or ``decided`` when the stage follows the controller."""
        if not self.active:
            return 1.0
        return float(decided) if self.ratio is None else float(self.ratio)

    def kept(self, ratio: float, n_values: int) -> int:
        """Values kept of a group of ``n_values`` at ``ratio``: round(O n), all without a
        stage."""
        return int(n_values) if not self.active else kept_values(ratio, int(n_values))


def resolve_compression(section: Any, own: StageDefaults) -> Compression:
    """The stage of a run: the scenario's ``compression`` section (``None``: absent) over the
    algorithm's own defaults ``own``, key by key (a null key takes the default)."""

    def given(key: str, default: Any) -> Any:
        value = getattr(section, key, None) if section is not None else None
        return default if value is None else value

    sparsifier = given("sparsifier", own.sparsifier)
    own_ratio = own.ratio if sparsifier == own.sparsifier else None
    return Compression(
        sparsifier=sparsifier,
        ratio=given("ratio", own_ratio),
        error_feedback=bool(given("error_feedback", own.error_feedback)),
        importance=given("importance", "update"),
    )
