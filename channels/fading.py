"""Small-scale fading models s_k^t (paper: h_k^t = s_k^t q_k^{-γ}).

All models draw complex coefficients with unit mean power, E|s|² = 1, shape
``(n_rounds, n_clients)``, from per-client streams: column ``k`` uses only client ``k``'s
generator, and every model is built on the same primitive (one CN(0, 1) variate per round and
client, in round order), so models driven by the same generators share their random numbers.

- :class:`RayleighFading`: block fading, s ~ CN(0, 1) i.i.d. across rounds (paper default;
  |s|² ~ Exp(1)).
- :class:`GaussMarkovRayleigh`: first-order Gauss–Markov (AR(1)) Rayleigh fading,
  s^{t+1} = ρ s^t + sqrt(1 - ρ²) w^t, w ~ CN(0, 1); marginal CN(0, 1), lag-1 correlation ρ.
- :class:`RicianFading`: s = sqrt(K/(K+1)) + sqrt(1/(K+1)) w, w ~ CN(0, 1) (LOS phase 0;
  the phase does not affect |s|).

A new model is one class with ``mean_power`` and ``sample(...)`` (optionally ``k_factor``),
plus one line in :data:`FADING_MODELS`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from channels._validation import as_float, as_int
from channels.registry import Registry
from channels.streams import as_client_generators

__all__ = [
    "FADING_MODELS",
    "FadingModel",
    "GaussMarkovRayleigh",
    "NoFading",
    "RayleighFading",
    "RicianFading",
    "complex_normal",
    "jakes_rho",
    "make_fading",
]

RngLike = np.random.Generator | Sequence[np.random.Generator]

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_TILE_CLIENTS = 256


@runtime_checkable
class FadingModel(Protocol):
    """What the cell and the simulator need from a fading model.

    Optional: a ``k_factor`` attribute (Rician K of the marginal; 0 for Rayleigh marginals),
    which :func:`channels.report.channel_report` uses for the ergodic rate, and a
    ``time_correlated`` attribute (default False): True when a block must continue from the
    previous block's last row (``initial``), so drawing block b needs blocks 0..b-1 first.
    """

    mean_power: float

    def sample(
        self,
        rng: RngLike,
        n_rounds: int,
        n_clients: int,
        *,
        initial: np.ndarray | None = None,
    ) -> np.ndarray: ...


def complex_normal(rng: RngLike, n_rounds: int, n_clients: int) -> np.ndarray:
    """i.i.d. CN(0, 1) variates from per-client streams.

    Input: ``rng``, one Generator or ``n_clients`` of them (see
    :func:`channels.streams.as_client_generators`); ``n_rounds`` >= 1; ``n_clients`` >= 1.
    Output: complex128 ``(n_rounds, n_clients)``, C-contiguous; column ``k`` is the first
    ``2·n_rounds`` standard normals of generator ``k`` (real, imaginary interleaved) / sqrt(2).
    """
    n_rounds = as_int("n_rounds", n_rounds, lower=1)
    gens = as_client_generators(rng, n_clients)
    n = len(gens)
    out = np.empty((n_rounds, n), dtype=np.complex128)
    # Fill a few hundred clients at a time (rows = clients, contiguous per stream), then
    # transpose that tile into the (rounds, clients) output: tiles keep the copy in cache.
    tile = min(n, _TILE_CLIENTS)
    buf = np.empty((tile, 2 * n_rounds), dtype=np.float64)
    for k0 in range(0, n, tile):
        k1 = min(n, k0 + tile)
        for j, g in enumerate(gens[k0:k1]):
            g.standard_normal(out=buf[j])
        np.multiply(buf[: k1 - k0].view(np.complex128).T, _INV_SQRT2, out=out[:, k0:k1])
    return out


def _check_initial(initial: np.ndarray | None, n_clients: int) -> np.ndarray | None:
    if initial is None:
        return None
    arr = np.asarray(initial)
    try:
        arr = arr.astype(np.complex128)
    except (TypeError, ValueError):
        raise ValueError("initial must be a complex array of shape (n_clients,)") from None
    if arr.shape != (n_clients,):
        raise ValueError(f"initial must have shape ({n_clients},) (n_clients,), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("initial must be finite (no nan/inf fading coefficients)")
    return arr


class RayleighFading:
    """Rayleigh block fading: s ~ CN(0, 1), constant within a round, i.i.d. across rounds.

    |s|² ~ Exp(1), ``mean_power`` = 1. ``initial`` is accepted and ignored.
    """

    mean_power: float = 1.0
    time_correlated: bool = False
    k_factor: float = 0.0

    def sample(
        self,
        rng: RngLike,
        n_rounds: int,
        n_clients: int,
        *,
        initial: np.ndarray | None = None,
    ) -> np.ndarray:
        """Draw fading coefficients.

        Input: ``rng`` (one Generator or ``n_clients`` of them); ``n_rounds`` >= 1;
        ``n_clients`` >= 1; ``initial`` (ignored, validated).
        Output: complex128 ``(n_rounds, n_clients)``.
        """
        _check_initial(initial, as_int("n_clients", n_clients, lower=1))
        return complex_normal(rng, n_rounds, n_clients)

    def __repr__(self) -> str:
        return "RayleighFading()"


class NoFading:
    """No small-scale fading: s = 1 in every round (the large-scale channel alone; the
    geometry SINR of system-level calibration). ``initial`` is accepted and ignored."""

    mean_power: float = 1.0
    time_correlated: bool = False

    def sample(
        self,
        rng: RngLike,
        n_rounds: int,
        n_clients: int,
        *,
        initial: np.ndarray | None = None,
    ) -> np.ndarray:
        """complex128 ones ``(n_rounds, n_clients)`` (``rng`` is not drawn from)."""
        n_clients = as_int("n_clients", n_clients, lower=1)
        _check_initial(initial, n_clients)
        return np.ones((as_int("n_rounds", n_rounds, lower=1), n_clients), dtype=complex)

    def __repr__(self) -> str:
        return "NoFading()"


class GaussMarkovRayleigh:
    """Time-correlated Rayleigh fading (first-order Gauss–Markov / AR(1)).

    s^{t+1} = ρ s^t + sqrt(1 - ρ²) w^t with w ~ CN(0, 1) i.i.d., so the marginal stays CN(0, 1)
    and E[s^{t+1} conj(s^t)] = ρ. Give either ``rho`` in [0, 1] or ``doppler_hz`` >= 0 and
    ``slot_s`` > 0, in which case ρ = J0(2π f_d T) (Jakes/Clarke autocorrelation at lag T).
    An AR(1) process cannot follow the oscillating tail of J0: past its first zero
    (f_d·T > 0.3827) ρ is set to 0, i.e. rounds are then independent.

    Without ``initial`` the block starts stationary (row 0 ~ CN(0, 1)); with ``initial`` (the
    last row of the previous block) row 0 = ρ·initial + sqrt(1 - ρ²) w.
    """

    mean_power: float = 1.0
    time_correlated: bool = True
    k_factor: float = 0.0

    def __init__(
        self,
        rho: float | None = None,
        *,
        doppler_hz: float | None = None,
        slot_s: float | None = None,
    ) -> None:
        if rho is not None:
            if doppler_hz is not None or slot_s is not None:
                raise ValueError("give either rho or (doppler_hz, slot_s), not both")
            self.rho = as_float("rho", rho, lower=0.0, upper=1.0)
            self.doppler_hz: float | None = None
            self.slot_s: float | None = None
        else:
            if doppler_hz is None or slot_s is None:
                raise ValueError("give rho in [0, 1], or both doppler_hz >= 0 and slot_s > 0")
            self.doppler_hz = as_float("doppler_hz", doppler_hz, lower=0.0)
            self.slot_s = as_float("slot_s", slot_s, lower=0.0, lower_op=">")
            self.rho = jakes_rho(self.doppler_hz, self.slot_s)

    def sample(
        self,
        rng: RngLike,
        n_rounds: int,
        n_clients: int,
        *,
        initial: np.ndarray | None = None,
    ) -> np.ndarray:
        """Draw a block of correlated fading coefficients.

        Input: ``rng`` (one Generator or ``n_clients`` of them); ``n_rounds`` >= 1;
        ``n_clients`` >= 1; ``initial`` (n_clients,) complex, the previous block's last row,
        or None for a stationary start.
        Output: complex128 ``(n_rounds, n_clients)``.
        """
        n_clients = as_int("n_clients", n_clients, lower=1)
        init = _check_initial(initial, n_clients)
        w = complex_normal(rng, n_rounds, n_clients)
        rho = self.rho
        if rho == 0.0:
            return w
        innov = math.sqrt(max(0.0, 1.0 - rho * rho))
        x = w * innov
        x[0] = w[0] if init is None else rho * init + innov * w[0]
        # s^t = ρ s^{t-1} + x^t, one row (all clients) at a time on the real view: the same
        # IEEE operations for every column, so a client's path never depends on n_clients.
        v = x.view(np.float64)
        tmp = np.empty(v.shape[1], dtype=np.float64)
        for t in range(1, v.shape[0]):
            np.multiply(v[t - 1], rho, out=tmp)
            np.add(v[t], tmp, out=v[t])
        return x

    def __repr__(self) -> str:
        if self.doppler_hz is not None:
            return (
                f"GaussMarkovRayleigh(doppler_hz={self.doppler_hz!r}, slot_s={self.slot_s!r})"
                f"  # rho={self.rho:.6g}"
            )
        return f"GaussMarkovRayleigh(rho={self.rho!r})"


def jakes_rho(doppler_hz: float, slot_s: float) -> float:
    """Lag-1 correlation of Jakes fading, ρ = J0(2π f_d T), floored at 0.

    Input: ``doppler_hz`` >= 0 [Hz]; ``slot_s`` > 0 [s] (duration of one round/slot).
    Output: ρ in [0, 1].
    """
    f_d = as_float("doppler_hz", doppler_hz, lower=0.0)
    t = as_float("slot_s", slot_s, lower=0.0, lower_op=">")
    import scipy.special  # noqa: PLC0415 - 0.15 s at start-up, needed only by Jakes' model

    return max(0.0, float(scipy.special.j0(2.0 * math.pi * f_d * t)))


class RicianFading:
    """Rician block fading with unit mean power, i.i.d. across rounds.

    s = sqrt(K/(K+1)) + sqrt(1/(K+1)) w, w ~ CN(0, 1): LOS power K/(K+1), scattered power
    1/(K+1), E|s|² = 1. K = 0 is Rayleigh. ``initial`` is accepted and ignored.
    """

    mean_power: float = 1.0
    time_correlated: bool = False

    def __init__(self, k_factor: float) -> None:
        self.k_factor = as_float("k_factor", k_factor, lower=0.0)

    def sample(
        self,
        rng: RngLike,
        n_rounds: int,
        n_clients: int,
        *,
        initial: np.ndarray | None = None,
    ) -> np.ndarray:
        """Draw fading coefficients.

        Input: ``rng`` (one Generator or ``n_clients`` of them); ``n_rounds`` >= 1;
        ``n_clients`` >= 1; ``initial`` (ignored, validated).
        Output: complex128 ``(n_rounds, n_clients)``.
        """
        _check_initial(initial, as_int("n_clients", n_clients, lower=1))
        w = complex_normal(rng, n_rounds, n_clients)
        k = self.k_factor
        w *= math.sqrt(1.0 / (k + 1.0))
        w += math.sqrt(k / (k + 1.0))
        return w

    def __repr__(self) -> str:
        return f"RicianFading(k_factor={self.k_factor!r})"


#: Fading models by name; a new model is one class plus one line here (or a ``register`` call,
#: or an entry point of the group ``channels.fading_models``).
FADING_MODELS: Registry[type] = Registry(
    "fading model",
    {
        "rayleigh": RayleighFading,
        "gauss_markov": GaussMarkovRayleigh,
        "rician": RicianFading,
        "none": NoFading,
    },
    entry_point_group="channels.fading_models",
)


def make_fading(name: str, **params: Any) -> FadingModel:
    """Build a fading model by registry name.

    Input: ``name`` in :data:`FADING_MODELS`; ``params`` passed to its constructor.
    Output: the model instance (one-line ``ValueError`` for an unknown name or keyword).
    """
    return FADING_MODELS.build(name, **params)
