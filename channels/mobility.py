"""Client mobility over virtual time (pure numpy).

The cell is the annulus ``d_min_m <= r <= d_max_m`` around the base station at the origin. A
mobility model gives every client's position at a virtual time ``time_s`` [s], so the
large-scale gain of round t can be taken at the positions of the round's broadcast time.

- :class:`MobilityModel`: the abstract base. ``positions_m(time_s)`` (N, 2) [m] is a pure
  function of (seed, client ids, time_s): whatever times were queried before, the answer is
  the same bit for bit (a resumed run queries a later time first). Models keep the state of
  the last query and advance it when time moves forward; an earlier time restarts from time 0.
- :class:`Static`: clients never move (today's behaviour).
- :class:`RandomWaypoint`: Johnson & Maltz (1996); straight legs to waypoints uniform in area
  over the annulus, speed uniform in ``[speed_min_mps, speed_max_mps]``, pause ``pause_s``.
- :class:`GaussMarkovMobility`: Liang & Haas (1999), as described by Camp, Boleng & Davies
  (2002); speed and direction are first-order Gauss-Markov processes updated every ``step_s``.
- :data:`MOBILITY_MODELS` / :func:`make_mobility`: the registry and a builder by name.
- :func:`doppler_hz`: maximum Doppler shift v·f_c/c.

Initial positions (time 0), shared by every model: client k's distance is exactly
``annulus_distances(seed, N, d_min_m=, d_max_m=)[k]`` (a static and a mobile run start from the
same geometry) and its angle is ``2π·U`` with U the first draw of
``client_generators(seed, [k], stream="mobility_angle")[0]``. Client ids are ``0 .. N-1``; each
client draws only from its own streams, so adding clients keeps existing trajectories.

Distances: :meth:`MobilityModel.distances_m` is the norm of the position clipped below at
``d_min_m``: a straight path may cross the inner disc, but path-loss models are not valid at
the base station. At time 0 it returns the annulus distances exactly.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array, as_int, scalar_or_array
from channels.registry import Registry
from channels.streams import client_generators
from channels.topology import annulus_distances

__all__ = [
    "MOBILITY_MODELS",
    "GaussMarkovMobility",
    "MobilityModel",
    "RandomWaypoint",
    "Static",
    "doppler_hz",
    "make_mobility",
]

SPEED_OF_LIGHT_MPS = 299_792_458.0
_TWO_PI = 2.0 * math.pi
_COMMON = ("seed", "n_clients", "d_min_m", "d_max_m")


def doppler_hz(speed_mps: ArrayLike, carrier_hz: ArrayLike) -> float | np.ndarray:
    """Maximum Doppler shift f_D = v·f_c/c [Hz], c = 299,792,458 m/s.

    Input: ``speed_mps`` >= 0 [m/s]; ``carrier_hz`` > 0 [Hz] (broadcast together).
    Output: float for scalar inputs, else a float64 array.
    """
    v = as_float_array("speed_mps", speed_mps, lower=0.0)
    fc = as_float_array("carrier_hz", carrier_hz, lower=0.0, lower_op=">")
    return scalar_or_array(v * fc / SPEED_OF_LIGHT_MPS)


def _annulus_points(u_r: np.ndarray, u_theta: np.ndarray, d_min: float, d_max: float):
    """Points uniform in area over the annulus from two U[0, 1) draws, as (n, 2)."""
    r = np.sqrt(d_min * d_min + u_r * (d_max * d_max - d_min * d_min))
    theta = _TWO_PI * u_theta
    return np.stack([r * np.cos(theta), r * np.sin(theta)], axis=-1)


def _wrap(angle: np.ndarray) -> np.ndarray:
    """Angles folded into [-π, π)."""
    return angle - _TWO_PI * np.floor((angle + math.pi) / _TWO_PI)


class MobilityModel(ABC):
    """Positions of ``n_clients`` clients in the annulus at any virtual time.

    Args:
        seed: run seed (>= 0).
        n_clients: number of clients N (>= 1); client ids are ``0 .. N-1``.
        d_min_m: inner radius [m] (>= 0).
        d_max_m: outer radius [m] (> ``d_min_m``).

    Subclasses implement :meth:`positions_m` and :attr:`mean_speed_mps`; ``positions_m`` must
    be deterministic in (seed, client ids, time_s) only.
    """

    def __init__(self, seed: int, n_clients: int, d_min_m: float, d_max_m: float) -> None:
        self._seed = as_int("seed", seed, lower=0)
        self._n = as_int("n_clients", n_clients, lower=1)
        self._d_min = as_float("d_min_m", d_min_m, lower=0.0)
        self._d_max = as_float("d_max_m", d_max_m, lower=0.0, lower_op=">")
        if self._d_min >= self._d_max:
            raise ValueError(
                f"d_min_m must be < d_max_m, got d_min_m={self._d_min!r}, d_max_m={self._d_max!r}"
            )
        self._r0 = annulus_distances(self._seed, self._n, d_min_m=self._d_min, d_max_m=self._d_max)
        gens = client_generators(self._seed, range(self._n), stream="mobility_angle")
        # Two draws per client: the position angle, and a heading (used by Gauss-Markov).
        self._angle_draws = np.array([g.random(2) for g in gens]).reshape(self._n, 2)
        theta = _TWO_PI * self._angle_draws[:, 0]
        self._p_init = np.stack([self._r0 * np.cos(theta), self._r0 * np.sin(theta)], axis=-1)

    @property
    def n_clients(self) -> int:
        """Number of clients N."""
        return self._n

    @property
    def seed(self) -> int:
        """The run seed."""
        return self._seed

    @property
    def d_min_m(self) -> float:
        """Inner radius of the cell [m]."""
        return self._d_min

    @property
    def d_max_m(self) -> float:
        """Outer radius of the cell [m]."""
        return self._d_max

    @property
    @abstractmethod
    def mean_speed_mps(self) -> float:
        """A representative speed [m/s] for the Doppler of time-correlated fading."""

    @abstractmethod
    def positions_m(self, time_s: float) -> np.ndarray:
        """Client positions at ``time_s`` [s]: float64 (N, 2) [m], base station at the origin."""

    def distances_m(self, time_s: float) -> np.ndarray:
        """Client-to-base-station distances at ``time_s``: float64 (N,) [m], >= ``d_min_m``.

        The norm of :meth:`positions_m` clipped below at ``d_min_m`` (path-loss models are not
        valid at the base station); at time 0 exactly ``annulus_distances``.
        """
        t = self._check_time(time_s)
        if t == 0.0:
            return self._r0.copy()
        p = self.positions_m(t)
        return np.maximum(np.hypot(p[:, 0], p[:, 1]), self._d_min)

    @staticmethod
    def _check_time(time_s: float) -> float:
        return as_float("time_s", time_s, lower=0.0)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(seed={self._seed}, n_clients={self._n}, "
            f"d_min_m={self._d_min:g}, d_max_m={self._d_max:g})"
        )


class Static(MobilityModel):
    """Clients stay at their initial positions (``annulus_distances`` and a uniform angle)."""

    @property
    def mean_speed_mps(self) -> float:
        return 0.0

    def positions_m(self, time_s: float) -> np.ndarray:
        self._check_time(time_s)
        return self._p_init.copy()

    def distances_m(self, time_s: float) -> np.ndarray:
        self._check_time(time_s)
        return self._r0.copy()


class RandomWaypoint(MobilityModel):
    """Random waypoint mobility (Johnson & Maltz 1996) in the annulus.

    Each client repeats legs: draw a waypoint uniform in area over the annulus and a speed
    v ~ U[speed_min_mps, speed_max_mps], move there in a straight line at v, pause ``pause_s``.
    Leg j of client k starts where leg j-1 ended (leg 0 at the initial position at time 0) and
    takes ``U = D[j % L]`` with L = :attr:`LEGS_PER_BLOCK` = 64 and ``D = g.random((L, 3))``,
    ``g = client_generators(seed, [k], stream="mobility", block=j // L)[0]`` (one generator
    per block of L legs): waypoint radius sqrt(d_min² + U0·(d_max² - d_min²)), angle 2π·U1,
    speed speed_min + U2·(speed_max - speed_min). A leg may cross the inner disc.

    Args:
        speed_min_mps: lowest leg speed [m/s], > 0 (speed_min = 0 makes the mean speed decay
            to 0 over time: Yoon, Liu & Noble 2003).
        speed_max_mps: highest leg speed [m/s], >= ``speed_min_mps``.
        pause_s: pause at each waypoint [s], >= 0.

    Cost: a query only advances the clients whose leg ended since the last query; each client's
    current block of draws is cached (N·L·3 float64: 15.4 MB at N = 10,000), so a generator is
    made only when a client enters a new block (once per L legs), for all such clients of a
    query together. An earlier time than the last query replays from time 0 (the cache is a
    pure function of (client, block), so it needs no reset).
    """

    LEGS_PER_BLOCK = 64

    def __init__(
        self,
        seed: int,
        n_clients: int,
        d_min_m: float,
        d_max_m: float,
        speed_min_mps: float,
        speed_max_mps: float,
        pause_s: float = 0.0,
    ) -> None:
        super().__init__(seed, n_clients, d_min_m, d_max_m)
        self._v_min = as_float("speed_min_mps", speed_min_mps, lower=0.0, lower_op=">")
        self._v_max = as_float("speed_max_mps", speed_max_mps, lower=0.0, lower_op=">")
        if self._v_max < self._v_min:
            raise ValueError(
                f"speed_max_mps must be >= speed_min_mps, got speed_min_mps={self._v_min!r}, "
                f"speed_max_mps={self._v_max!r}"
            )
        self._pause = as_float("pause_s", pause_s, lower=0.0)
        n = self._n
        self._leg = np.full(n, -1, dtype=np.int64)
        self._p1 = self._p_init.copy()  # "end of leg -1" = the initial position
        self._p0 = self._p_init.copy()
        self._t0 = np.zeros(n)
        self._t_end = np.zeros(n)
        self._t_arr = np.zeros(n)
        self._v = np.zeros(n)
        self._dist = np.zeros(n)
        # Cache of each client's current block of leg draws: block index, then (N, L, 3).
        self._draw_block = np.full(n, -1, dtype=np.int64)
        self._draws = np.empty((n, self.LEGS_PER_BLOCK, 3))
        self._new_legs(np.arange(n))
        self._initial = self._state()
        self._time = 0.0

    @property
    def speed_min_mps(self) -> float:
        return self._v_min

    @property
    def speed_max_mps(self) -> float:
        return self._v_max

    @property
    def pause_s(self) -> float:
        return self._pause

    @property
    def mean_speed_mps(self) -> float:
        """Time-average speed while moving: 1/E[1/v] = (b - a)/ln(b/a) for v ~ U[a, b].

        With ``pause_s`` = 0 this is the long-run time-average speed (leg length and speed are
        independent, so Σ length / Σ (length/v) → 1/E[1/v]); pauses are not counted.
        """
        a, b = self._v_min, self._v_max
        if b - a <= 1e-12 * b:
            return 0.5 * (a + b)
        return (b - a) / math.log(b / a)

    def _state(self) -> dict[str, np.ndarray]:
        names = ("_leg", "_p0", "_p1", "_t0", "_t_arr", "_t_end", "_v", "_dist")
        return {k: getattr(self, k).copy() for k in names}

    def _restore(self, state: dict[str, np.ndarray]) -> None:
        for k, v in state.items():
            setattr(self, k, v.copy())

    def _leg_draws(self, idx: np.ndarray, legs: np.ndarray) -> np.ndarray:
        """The draws (U0, U1, U2) of leg ``legs[i]`` of client ``idx[i]``: (n, 3).

        Refills the cache for the clients whose leg lies in another block than the cached one,
        one ``client_generators`` call per distinct block.
        """
        block, row = np.divmod(legs, self.LEGS_PER_BLOCK)
        stale = np.flatnonzero(self._draw_block[idx] != block)
        if stale.size:
            ids, blocks = idx[stale], block[stale]
            for b in np.unique(blocks):
                sel = ids[blocks == b]
                gens = client_generators(self._seed, sel, stream="mobility", block=int(b))
                for k, g in zip(sel.tolist(), gens, strict=True):
                    g.random(out=self._draws[k])
                self._draw_block[sel] = b
        return self._draws[idx, row]

    def _new_legs(self, idx: np.ndarray) -> None:
        """Start the next leg of the clients ``idx`` at the end of their current leg."""
        legs = self._leg[idx] + 1
        u = self._leg_draws(idx, legs)
        self._leg[idx] = legs
        self._p0[idx] = self._p1[idx]
        self._t0[idx] = self._t_end[idx]
        self._p1[idx] = _annulus_points(u[:, 0], u[:, 1], self._d_min, self._d_max)
        v = self._v_min + u[:, 2] * (self._v_max - self._v_min)
        d = self._p1[idx] - self._p0[idx]
        dist = np.hypot(d[:, 0], d[:, 1])
        self._v[idx] = v
        self._dist[idx] = dist
        self._t_arr[idx] = self._t0[idx] + dist / v
        self._t_end[idx] = self._t_arr[idx] + self._pause

    def positions_m(self, time_s: float) -> np.ndarray:
        t = self._check_time(time_s)
        if t < self._time:
            self._restore(self._initial)
        self._time = t
        while True:
            idx = np.flatnonzero(self._t_end <= t)
            if idx.size == 0:
                break
            self._new_legs(idx)
        moved = self._v * (t - self._t0)
        frac = np.divide(moved, self._dist, out=np.ones(self._n), where=self._dist > 0.0)
        p = self._p0 + frac[:, None] * (self._p1 - self._p0)
        arrived = t >= self._t_arr
        p[arrived] = self._p1[arrived]
        return p

    def __repr__(self) -> str:
        return (
            f"{super().__repr__()[:-1]}, speed_min_mps={self._v_min:g}, "
            f"speed_max_mps={self._v_max:g}, pause_s={self._pause:g})"
        )


class GaussMarkovMobility(MobilityModel):
    """Gauss-Markov mobility (Liang & Haas 1999; Camp, Boleng & Davies 2002) in the annulus.

    Every ``step_s`` seconds (step n at time n·step_s, n >= 1), per client:

    1. x_n = x_{n-1} + s_{n-1}·step_s·(cos d_{n-1}, sin d_{n-1}); if the segment leaves the
       outer circle it is reflected specularly at the crossing point (the heading d_{n-1}
       becomes the reflected one), so |x_n| <= d_max_m. The inner disc may be crossed.
    2. the mean direction of this update is the client's own d̄_k, or, when
       |x_n| > d_max_m - edge_margin_m, the direction from x_n toward the cell centre.
    3. s_n = α·s_{n-1} + (1-α)·s̄ + sqrt(1-α²)·σ_s·w_n, floored at 0;
       d_n = d_{n-1} + (1-α)·wrap(d̄ - d_{n-1}) + sqrt(1-α²)·σ_d·w'_n (wrap into [-π, π):
       the mean is pulled along the shorter arc; equal to α·d_{n-1} + (1-α)·d̄ on that arc).

    s_0 = s̄; d_0 = d̄_k = 2π·U with U the second draw of the client's ``"mobility_angle"``
    stream. (w_n, w'_n) is row (n-1) mod 256 of ``g.standard_normal((256, 2))`` with
    ``g = client_generators(seed, [k], stream="mobility", block=(n-1)//256)[0]``. Between
    steps the position is interpolated linearly between x_n and x_{n+1}.

    Args:
        mean_speed_mps: s̄ [m/s], >= 0.
        alpha: memory α in [0, 1] (1: straight line at constant speed; 0: i.i.d. updates).
        step_s: update interval [s], > 0.
        speed_sigma_mps: σ_s [m/s], >= 0; default s̄/2.
        direction_sigma_rad: σ_d [rad], >= 0; default π/4.
        edge_margin_m: width of the border band where the mean direction points to the centre
            [m], in [0, d_max_m]; default 10% of d_max_m - d_min_m.

    Cost: one step is O(N) vector work; every 256 steps all N clients draw a new noise block
    (N generators, N·256·2 float64 held). A query at time t replays from 0 if t is earlier
    than the previous query's step.
    """

    BLOCK_STEPS = 256

    def __init__(
        self,
        seed: int,
        n_clients: int,
        d_min_m: float,
        d_max_m: float,
        mean_speed_mps: float,
        alpha: float,
        step_s: float,
        speed_sigma_mps: float | None = None,
        direction_sigma_rad: float | None = None,
        edge_margin_m: float | None = None,
    ) -> None:
        super().__init__(seed, n_clients, d_min_m, d_max_m)
        self._s_bar = as_float("mean_speed_mps", mean_speed_mps, lower=0.0)
        self._alpha = as_float("alpha", alpha, lower=0.0, upper=1.0)
        self._step = as_float("step_s", step_s, lower=0.0, lower_op=">")
        self._sigma_s = (
            0.5 * self._s_bar
            if speed_sigma_mps is None
            else as_float("speed_sigma_mps", speed_sigma_mps, lower=0.0)
        )
        self._sigma_d = (
            math.pi / 4.0
            if direction_sigma_rad is None
            else as_float("direction_sigma_rad", direction_sigma_rad, lower=0.0)
        )
        self._margin = (
            0.1 * (self._d_max - self._d_min)
            if edge_margin_m is None
            else as_float("edge_margin_m", edge_margin_m, lower=0.0, upper=self._d_max)
        )
        self._d_bar = _TWO_PI * self._angle_draws[:, 1]
        self._noise_block = -1
        self._noise = np.empty((self._n, 0, 2))
        self._reset()

    @property
    def mean_speed_mps(self) -> float:
        """s̄ (the floor at 0 raises the true mean by σ_s·[φ(z) - z·Q(z)], z = s̄/σ_s)."""
        return self._s_bar

    @property
    def alpha(self) -> float:
        return self._alpha

    @property
    def step_s(self) -> float:
        return self._step

    @property
    def speed_sigma_mps(self) -> float:
        return self._sigma_s

    @property
    def direction_sigma_rad(self) -> float:
        return self._sigma_d

    @property
    def edge_margin_m(self) -> float:
        return self._margin

    def _reset(self) -> None:
        self._m = 0
        self._x = self._p_init[:, 0].copy()
        self._y = self._p_init[:, 1].copy()
        self._x_prev = self._x.copy()
        self._y_prev = self._y.copy()
        self._s = np.full(self._n, self._s_bar)
        self._d = self._d_bar.copy()

    def _noise_row(self, n: int) -> np.ndarray:
        """(w_n, w'_n) of every client: (N, 2)."""
        block, row = divmod(n - 1, self.BLOCK_STEPS)
        if block != self._noise_block:
            gens = client_generators(self._seed, range(self._n), stream="mobility", block=block)
            self._noise = np.array([g.standard_normal((self.BLOCK_STEPS, 2)) for g in gens])
            self._noise_block = block
        return self._noise[:, row]

    def _move(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """x_n, y_n and the heading after reflection, from the state at step n-1."""
        r_max = self._d_max
        length = self._s * self._step
        ux, uy = np.cos(self._d), np.sin(self._d)
        x = self._x + length * ux
        y = self._y + length * uy
        heading = self._d
        out = np.flatnonzero(x * x + y * y > r_max * r_max)
        if out.size == 0:
            return x, y, heading
        # Specular reflection off the outer circle, repeated while the rest of the step
        # still leaves it (only for steps longer than a chord).
        sx, sy, vx, vy = self._x[out], self._y[out], ux[out], uy[out]
        left = length[out]
        ex, ey = x[out], y[out]
        for _ in range(16):
            outside = ex * ex + ey * ey > r_max * r_max
            if not outside.any():
                break
            pu = sx * vx + sy * vy
            c = sx * sx + sy * sy - r_max * r_max
            tau = np.clip(-pu + np.sqrt(np.maximum(pu * pu - c, 0.0)), 0.0, left)
            hx, hy = sx + tau * vx, sy + tau * vy
            nx, ny = hx / r_max, hy / r_max
            dot = vx * nx + vy * ny
            vx = np.where(outside, vx - 2.0 * dot * nx, vx)
            vy = np.where(outside, vy - 2.0 * dot * ny, vy)
            sx, sy = np.where(outside, hx, sx), np.where(outside, hy, sy)
            left = np.where(outside, left - tau, left)
            ex, ey = sx + left * vx, sy + left * vy
        r = np.sqrt(ex * ex + ey * ey)
        scale = np.where(r > r_max, r_max / np.maximum(r, r_max), 1.0)
        x[out], y[out] = ex * scale, ey * scale
        heading = heading.copy()
        heading[out] = np.arctan2(vy, vx)
        return x, y, heading

    def _advance(self) -> None:
        n = self._m + 1
        a = self._alpha
        x, y, heading = self._move()
        near = np.flatnonzero(x * x + y * y > (self._d_max - self._margin) ** 2)
        d_mean = self._d_bar.copy()
        d_mean[near] = np.arctan2(-y[near], -x[near])
        w = self._noise_row(n)
        k = math.sqrt(max(0.0, 1.0 - a * a))
        s = a * self._s + (1.0 - a) * self._s_bar + k * self._sigma_s * w[:, 0]
        d = heading + (1.0 - a) * _wrap(d_mean - heading) + k * self._sigma_d * w[:, 1]
        big = np.flatnonzero(np.abs(d) > math.pi)
        d[big] = _wrap(d[big])
        self._x_prev, self._y_prev, self._x, self._y = self._x, self._y, x, y
        self._s = np.maximum(s, 0.0)
        self._d = d
        self._m = n

    def positions_m(self, time_s: float) -> np.ndarray:
        t = self._check_time(time_s)
        q = t / self._step
        n = math.floor(q)
        frac = q - n
        if self._m > n + 1:
            self._reset()
        while self._m < n + 1:
            self._advance()
        p = np.empty((self._n, 2))
        p[:, 0] = self._x_prev + frac * (self._x - self._x_prev)
        p[:, 1] = self._y_prev + frac * (self._y - self._y_prev)
        return p

    def __repr__(self) -> str:
        return (
            f"{super().__repr__()[:-1]}, mean_speed_mps={self._s_bar:g}, alpha={self._alpha:g}, "
            f"step_s={self._step:g}, speed_sigma_mps={self._sigma_s:g}, "
            f"direction_sigma_rad={self._sigma_d:g}, edge_margin_m={self._margin:g})"
        )


MOBILITY_MODELS: Registry[type] = Registry(
    "mobility model",
    {
        "static": "channels.mobility:Static",
        "random_waypoint": "channels.mobility:RandomWaypoint",
        "gauss_markov": "channels.mobility:GaussMarkovMobility",
    },
    entry_point_group="channels.mobility_models",
)


def make_mobility(
    name: str, *, seed: int, n_clients: int, d_min_m: float, d_max_m: float, **params: Any
) -> MobilityModel:
    """Build a mobility model by registry name.

    Input: ``name`` in :data:`MOBILITY_MODELS`; the cell (``seed``, ``n_clients``,
    ``d_min_m``, ``d_max_m``); ``params``: the model's own keywords (e.g. ``speed_min_mps``).
    Output: the model. Unknown names, unknown or missing keywords raise a one-line
    ``ValueError`` listing the accepted ones.
    """
    cell = {"seed": seed, "n_clients": n_clients, "d_min_m": d_min_m, "d_max_m": d_max_m}
    return MOBILITY_MODELS.build(name, supplied=_COMMON, **cell, **params)
