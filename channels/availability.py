"""Client availability: which clients can take part in round t.

Every model answers ``available(round_index, time_s)`` with an (N,) bool array, where
``round_index`` is the simulator round t >= 0 and ``time_s`` the broadcast virtual time τ_t [s].
The answer depends only on the model's parameters and on (seed, client, round), never on which
rounds were asked before: a resumed run may ask for round 500 first, and going back to an
earlier round gives the same answer as the first time.

- :class:`AlwaysAvailable`: every client, every round.
- :class:`MarkovAvailability`: a two-state (off/on) Markov chain per client, stepped once per
  round, with transition probabilities per device class (Gilbert-Elliott-style on/off model).
- :class:`TraceAvailability`: client k is available at round t iff τ_t lies in one of its
  half-open intervals [start_s, end_s) (see :func:`channels.traces.read_availability_trace`).

A new model is one :class:`AvailabilityModel` subclass plus one line in
:data:`AVAILABILITY_MODELS`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from channels._validation import as_float, as_int
from channels.registry import Registry
from channels.streams import round_generator
from channels.traces import read_availability_trace

__all__ = [
    "AVAILABILITY_MODELS",
    "AlwaysAvailable",
    "AvailabilityModel",
    "MarkovAvailability",
    "TraceAvailability",
    "make_availability",
]

_ROUND_LIMIT = 2**32
#: MarkovAvailability keeps the chain state at every multiple of this many rounds, so that
#: going back to an earlier round replays at most this many rounds.
CHECKPOINT_EVERY = 256


def _check_round(round_index: Any, time_s: Any) -> tuple[int, float]:
    t = as_int("round_index", round_index, lower=0, upper=_ROUND_LIMIT)
    tau = as_float("time_s", time_s)
    return t, tau


class AvailabilityModel(ABC):
    """Which of ``n_clients`` clients are available in a round.

    Subclasses set ``n_clients`` and implement :meth:`available`.
    """

    n_clients: int

    @abstractmethod
    def available(self, round_index: int, time_s: float) -> np.ndarray:
        """Availability of every client in round ``round_index``.

        Input: ``round_index`` in ``[0, 2**32)``; ``time_s`` the round's broadcast virtual
        time τ_t [s] (finite).
        Output: bool ``(n_clients,)``, a new array (the caller may modify it); a function of
        (model parameters, seed, client, round) only.
        """


class AlwaysAvailable(AvailabilityModel):
    """Every client is available in every round."""

    def __init__(self, n_clients: int) -> None:
        self.n_clients = as_int("n_clients", n_clients, lower=1)

    def available(self, round_index: int, time_s: float) -> np.ndarray:
        _check_round(round_index, time_s)
        return np.ones(self.n_clients, dtype=bool)

    def __repr__(self) -> str:
        return f"AlwaysAvailable(n_clients={self.n_clients})"


def _per_client_probability(
    name: str,
    value: Any,
    n_clients: int,
    client_class: list[str] | None,
) -> np.ndarray:
    """A scalar or {class: probability} turned into a float64 (n_clients,) array."""
    if isinstance(value, Mapping):
        if client_class is None:
            raise ValueError(
                f"{name} is a dict of per-class probabilities, so client_class (one device "
                "class name per client, e.g. DeviceProfile.draw_classes) must be given"
            )
        probs = {}
        for key, p in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{name} keys must be device class names (str), got {key!r}")
            probs[key] = as_float(f"{name}[{key!r}]", p, lower=0.0, upper=1.0)
        missing = sorted(set(client_class) - set(probs))
        if missing:
            raise ValueError(
                f"{name} must give a probability for every class in client_class; missing "
                f"{', '.join(repr(m) for m in missing)} (given: {', '.join(map(repr, probs))})"
            )
        return np.array([probs[c] for c in client_class], dtype=np.float64)
    if isinstance(value, bool | str | bytes) or value is None:
        raise ValueError(
            f"{name} must be a probability in [0, 1] or a dict {{class name: probability}}, "
            f"got {value!r}"
        )
    try:
        p = as_float(name, value, lower=0.0, upper=1.0)
    except ValueError as exc:
        raise ValueError(f"{exc} (accepted: a probability in [0, 1] or a dict by class)") from None
    return np.full(n_clients, p)


class MarkovAvailability(AvailabilityModel):
    """Two-state (off/on) Markov availability, one chain per client, stepped once per round.

    P(on at t+1 | off at t) = ``p_off_to_on`` (a), P(off at t+1 | on at t) = ``p_on_to_off``
    (b). Round 0 starts stationary: P(on at 0) = π_on = a / (a + b). The on-fraction of every
    round is then π_on, on-runs are Geometric(b) with mean 1/b rounds, off-runs mean 1/a
    rounds, and the lag-k correlation of a client's state is (1 - a - b)^k.

    Args:
        seed: run seed (>= 0).
        n_clients: N >= 1.
        p_off_to_on, p_on_to_off: probabilities in [0, 1], each a scalar (every client) or a
            dict device class name -> probability (then ``client_class`` is required and
            every class in it needs an entry); for each client a + b > 0.
        client_class: (N,) device class names, e.g. ``DeviceProfile.draw_classes(seed, N)``.
        stream: random stream name (default ``"availability"``).

    Randomness: round t draws ``round_generator(seed, stream=stream, round_index=t)
    .random(N)``; client k uses the k-th value u. Round 0: on iff u < π_on. Round t >= 1: an
    on client turns off iff u < b, an off client turns on iff u < a. The k-th value of
    ``random(N)`` does not depend on N, so adding clients keeps every existing client's
    states. The state is a function of (seed, stream, client, rounds 0..t); the model keeps
    the last state and the state at every multiple of :data:`CHECKPOINT_EVERY` rounds, steps
    forward from the nearest one at or before the asked round, and so costs one N-sized
    uniform draw per round stepped.
    """

    def __init__(
        self,
        seed: int,
        n_clients: int,
        p_off_to_on: float | Mapping[str, float],
        p_on_to_off: float | Mapping[str, float],
        client_class: Sequence[str] | None = None,
        *,
        stream: str = "availability",
    ) -> None:
        self.seed = as_int("seed", seed, lower=0)
        self.n_clients = as_int("n_clients", n_clients, lower=1)
        if not isinstance(stream, str) or not stream:
            raise ValueError(f"stream must be a non-empty string, got {stream!r}")
        self.stream = stream
        classes: list[str] | None = None
        if client_class is not None:
            if isinstance(client_class, str | bytes) or not isinstance(
                client_class, Sequence | np.ndarray
            ):
                raise ValueError(
                    "client_class must be a list of device class names, one per client, "
                    f"got {type(client_class).__name__}"
                )
            classes = [str(c) if isinstance(c, np.str_) else c for c in client_class]
            if len(classes) != self.n_clients:
                raise ValueError(
                    f"client_class must hold n_clients={self.n_clients} class names, "
                    f"got {len(classes)}"
                )
            bad = next((c for c in classes if not isinstance(c, str)), None)
            if bad is not None:
                raise ValueError(f"client_class must hold class names (str), got {bad!r}")
        self.client_class = classes
        self._spec = (p_off_to_on, p_on_to_off)
        a = _per_client_probability("p_off_to_on", p_off_to_on, self.n_clients, classes)
        b = _per_client_probability("p_on_to_off", p_on_to_off, self.n_clients, classes)
        frozen = (a + b) == 0.0
        if frozen.any():
            k = int(np.flatnonzero(frozen)[0])
            where = f" (class {classes[k]!r})" if classes is not None else ""
            raise ValueError(
                f"p_off_to_on and p_on_to_off must not both be 0{where}: the chain would never "
                "move and has no stationary distribution; accepted: a + b > 0"
            )
        self.p_off_to_on = a
        self.p_on_to_off = b
        #: Stationary on-probability per client, π_on = a / (a + b).
        self.pi_on = a / (a + b)
        self._round = -1
        self._state = np.zeros(self.n_clients, dtype=bool)
        self._checkpoints: dict[int, np.ndarray] = {}

    def _uniforms(self, t: int) -> np.ndarray:
        return round_generator(self.seed, stream=self.stream, round_index=t).random(self.n_clients)

    def _step_to(self, t: int) -> None:
        # Resume from the latest known state at or before t: the current one, or the
        # checkpoint of t's block (always there once that block's first round was stepped).
        base = (t // CHECKPOINT_EVERY) * CHECKPOINT_EVERY
        if not (base <= self._round <= t) and base in self._checkpoints:
            self._round, self._state = base, self._checkpoints[base].copy()
        elif self._round > t:
            self._round = -1
        state = self._state
        while self._round < t:
            r = self._round + 1
            u = self._uniforms(r)
            if r == 0:
                state = u < self.pi_on
            else:
                # on: stay on unless u < b; off: turn on iff u < a.
                state = np.where(state, u >= self.p_on_to_off, u < self.p_off_to_on)
            self._round = r
            if r % CHECKPOINT_EVERY == 0:
                self._checkpoints[r] = state.copy()
        self._state = state

    def available(self, round_index: int, time_s: float) -> np.ndarray:
        t, _ = _check_round(round_index, time_s)
        self._step_to(t)
        return self._state.copy()

    def __repr__(self) -> str:
        a, b = self._spec
        cls = "" if self.client_class is None else ", client_class=[...]"
        return (
            f"MarkovAvailability(seed={self.seed}, n_clients={self.n_clients}, "
            f"p_off_to_on={a!r}, p_on_to_off={b!r}{cls})"
        )


class TraceAvailability(AvailabilityModel):
    """Availability from a trace: client k is available at round t iff τ_t ∈ [start, end).

    Args:
        intervals: one entry per client (N >= 1 entries), each an array-like of shape (m, 2)
            of [start_s, end_s) virtual-time intervals (m >= 0; start finite, end > start,
            end may be +inf); overlapping or touching intervals are merged (availability is
            their union). Exactly one of ``intervals`` and ``path`` is given.
        path, n_clients: read the intervals with
            :func:`channels.traces.read_availability_trace` (``path``, ``n_clients``).

    ``round_index`` is ignored; only ``time_s`` matters. A query costs one binary search per
    client, O(N log M) for M interval ends in all, without a Python loop over clients.
    """

    def __init__(
        self,
        intervals: Sequence[Any] | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        n_clients: int | None = None,
    ) -> None:
        if (intervals is None) == (path is None):
            raise ValueError(
                "give either intervals (one (m, 2) array of [start_s, end_s) per client) or "
                "path and n_clients (a trace file), not both"
            )
        if path is not None:
            if n_clients is None:
                raise ValueError("n_clients must be given with path (ids must be 0..N-1)")
            intervals = read_availability_trace(path, n_clients)
        elif n_clients is not None:
            raise ValueError("n_clients is only used with path; with intervals N = len(intervals)")
        assert intervals is not None
        if isinstance(intervals, str | bytes | np.ndarray) or not isinstance(intervals, Sequence):
            raise ValueError(
                "intervals must be a list with one (m, 2) array of [start_s, end_s) per client, "
                f"got {type(intervals).__name__}"
            )
        if len(intervals) == 0:
            raise ValueError("intervals must hold one entry per client (N >= 1), got []")
        self.n_clients = len(intervals)
        merged = [_merge(k, iv) for k, iv in enumerate(intervals)]
        #: Merged, sorted intervals per client: float64 (m_k, 2).
        self.intervals = merged
        bounds = [m.reshape(-1) for m in merged]  # s0, e0, s1, e1, ... strictly increasing
        counts = np.array([b.size for b in bounds], dtype=np.int64)
        flat = np.concatenate(bounds) if counts.sum() else np.zeros(0)
        # Exact lexicographic (client, time) keys: client·(R + 1) + rank of the time among the
        # R distinct boundary times (1-based), so one searchsorted over all clients counts, for
        # each client, its boundaries <= τ. An odd count means τ lies in [s_i, e_i).
        self._times = np.unique(flat)
        ranks = np.searchsorted(self._times, flat, side="left") + 1
        owner = np.repeat(np.arange(self.n_clients, dtype=np.int64), counts)
        self._stride = np.int64(self._times.size + 1)
        self._keys = owner * self._stride + ranks
        self._offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self._client_base = np.arange(self.n_clients, dtype=np.int64) * self._stride

    def available(self, round_index: int, time_s: float) -> np.ndarray:
        _, tau = _check_round(round_index, time_s)
        rank = np.int64(np.searchsorted(self._times, tau, side="right"))
        n_le = np.searchsorted(self._keys, self._client_base + rank, side="right") - self._offsets
        return (n_le % 2) == 1

    def __repr__(self) -> str:
        m = sum(len(iv) for iv in self.intervals)
        return f"TraceAvailability(n_clients={self.n_clients}, intervals=<{m} intervals>)"


def _merge(client: int, value: Any) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"intervals[{client}] must be an (m, 2) array of [start_s, end_s) floats, got {value!r}"
        ) from None
    if arr.size == 0:
        return np.zeros((0, 2))
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"intervals[{client}] must have shape (m, 2) ([start_s, end_s) rows), got {arr.shape}"
        )
    start, end = arr[:, 0], arr[:, 1]
    if not np.isfinite(start).all():
        raise ValueError(f"intervals[{client}] start_s must be finite, got {start.tolist()}")
    if np.isnan(end).any() or (end <= start).any():
        i = int(np.flatnonzero(~(end > start))[0])
        raise ValueError(
            f"intervals[{client}] row {i}: end_s must be > start_s (+inf allowed), "
            f"got [{start[i]!r}, {end[i]!r})"
        )
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    # Overlapping or touching intervals merge ([a, b) ∪ [b, c) = [a, c)): a new run starts
    # where the start lies beyond every earlier end.
    reach = np.maximum.accumulate(end)
    first = np.flatnonzero(np.concatenate([[True], start[1:] > reach[:-1]]))
    return np.column_stack([start[first], np.maximum.reduceat(end, first)])


#: Availability models by name; a new model is one class plus one line here (or a
#: ``register`` call, or an entry point of the group ``channels.availability_models``).
AVAILABILITY_MODELS: Registry[type] = Registry(
    "availability model",
    {
        "always": AlwaysAvailable,
        "markov": MarkovAvailability,
        "trace": TraceAvailability,
    },
    entry_point_group="channels.availability_models",
)


def make_availability(name: str, **params: Any) -> AvailabilityModel:
    """Build an availability model by registry name.

    Input: ``name`` in :data:`AVAILABILITY_MODELS`; ``params`` its constructor's keywords.
    Output: the model instance. Unknown names and keywords raise a one-line ``ValueError``
    listing what is accepted.
    """
    return AVAILABILITY_MODELS.build(name, **params)
