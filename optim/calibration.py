"""Estimate the Theorem 1 constants (S, H, W, phi, G) from a short pilot training run.

The paper gives no numbers for them; these estimators turn what a pilot run records (a
:class:`PilotRecord`) into a :class:`~optim.bound.BoundConstants`. Each one mirrors the
assumption that defines its constant:

===========  =====================================================================================
constant     estimator (assumption)
===========  =====================================================================================
G            max of the recorded stochastic-gradient norms ||grad F_k^{t,e}||_F (Assumption 6)
W            max over layers/components/rounds of ||B[:, i]||_2 ||A[i, :]||_2 (Assumption 6)
phi          max (or a high quantile) over rounds of ||Cov(theta_B, theta_A)||_F^2 /
             ||theta_r||_F^2 (Assumption 3, eq. 12-13), with Cov the client-weighted
             E_k[(B_k - B)(A_k - A)]
S            max (or a high quantile) along a trajectory of
             ||grad F(theta_{t+1}) - grad F(theta_t)|| / ||theta_{t+1} - theta_t|| (Assumption 4)
H            from a rank sweep, with the highest swept rank r_o standing in for theta_o:
             max over r < r_o of ||theta_o - theta_r||_F^2 / ((r_o - r) sigma^2(theta_r))
             (Assumption 2, eq. 11)
===========  =====================================================================================

theta_r here is the rank-r LoRA update B A (all adapted layers flattened and concatenated).
G, W, phi, S and H are constants of upper bounds (each assumption holds for every round,
client or step), so each is estimated by the largest value the pilot saw (phi and S optionally
by a high quantile, to discard outliers): a mean would give a constant the pilot itself
violates. The estimates are lower bounds on the true constants (a pilot sees finitely many
rounds).
Everything is plain numpy; the runtime fills the record.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optim._validation import check_int, check_real
from optim.bound import BoundConstants

__all__ = [
    "PilotRecord",
    "calibrate_constants",
    "estimate_G",
    "estimate_H",
    "estimate_S",
    "estimate_W",
    "estimate_phi",
    "lora_component_norms",
    "lora_covariance",
]


@dataclass(frozen=True)
class PilotRecord:
    """What a pilot run records for calibration; every field is optional (None: not measured).

    Attributes:
        grad_norms: any shape, stochastic-gradient Frobenius norms ||grad F_k^{t,e}(theta)||_F
            over clients k, rounds t and local steps e.
        component_norms: any shape, products ||B[:, i]||_2 ||A[i, :]||_2 over adapted layers,
            rank components i and rounds (see :func:`lora_component_norms`).
        cov_sq_norms: (T,) ||Cov(theta_B, theta_A)||_F^2 per round, summed over layers (see
            :func:`lora_covariance`).
        theta_sq_norms: (T,) ||theta_r||_F^2 = ||B A||_F^2 of the global LoRA update per round,
            summed over layers.
        trajectory_params: (T, P) flattened trainable parameters at T points of a trajectory.
        trajectory_grads: (T, P) (full- or large-batch) gradients at those points.
        sweep_ranks: (R,) distinct ranks of a rank sweep (same data, same budget).
        sweep_updates: (R, P) flattened LoRA updates theta_r = B A per swept rank.
        sweep_sigma: (R,) sigma(theta_r) = max_i ||B[:, i]|| ||A[i, :]|| per swept rank.
    """

    grad_norms: ArrayLike | None = None
    component_norms: ArrayLike | None = None
    cov_sq_norms: ArrayLike | None = None
    theta_sq_norms: ArrayLike | None = None
    trajectory_params: ArrayLike | None = None
    trajectory_grads: ArrayLike | None = None
    sweep_ranks: ArrayLike | None = None
    sweep_updates: ArrayLike | None = None
    sweep_sigma: ArrayLike | None = None


def _finite(name: str, x: ArrayLike, *, min_size: int = 1) -> NDArray[np.float64]:
    arr = np.asarray(x, dtype=np.float64)
    if arr.size < min_size:
        raise ValueError(f"{name} must hold at least {min_size} value(s); got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return arr


def lora_component_norms(B: ArrayLike, A: ArrayLike) -> NDArray[np.float64]:
    """||B[:, i]||_2 ||A[i, :]||_2 for i = 1..r (the 'singular values' of Assumption 2).

    Args:
        B: (d, r) LoRA down/up matrix.
        A: (r, l).

    Returns:
        (r,) component norms.
    """
    b = _finite("B", B)
    a = _finite("A", A)
    if b.ndim != 2 or a.ndim != 2 or b.shape[1] != a.shape[0]:
        raise ValueError(f"B must be (d, r) and A (r, l) with equal r; got {b.shape}, {a.shape}")
    return np.linalg.norm(b, axis=0) * np.linalg.norm(a, axis=1)


def lora_covariance(
    B_clients: ArrayLike, A_clients: ArrayLike, weights: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Cov(theta_B, theta_A) = E_k[(B_k - B)(A_k - A)] of eq. (12), with B = E_k[B_k].

    Args:
        B_clients: (K, d, r) client B matrices.
        A_clients: (K, r, l) client A matrices.
        weights: (K,) client weights p_k (normalised here); default uniform.

    Returns:
        (d, l) covariance matrix; ||.||_F^2 of it is one entry of ``cov_sq_norms``.
    """
    b = _finite("B_clients", B_clients)
    a = _finite("A_clients", A_clients)
    if b.ndim != 3 or a.ndim != 3 or b.shape[0] != a.shape[0] or b.shape[2] != a.shape[1]:
        raise ValueError(
            f"B_clients must be (K, d, r) and A_clients (K, r, l); got {b.shape}, {a.shape}"
        )
    k = b.shape[0]
    if weights is None:
        w = np.full(k, 1.0 / k)
    else:
        w = _finite("weights", weights)
        if w.shape != (k,) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"weights must be (K,)=({k},), >= 0, with a positive sum")
        w = w / w.sum()
    db = b - np.einsum("k,kdr->dr", w, b)
    da = a - np.einsum("k,krl->rl", w, a)
    return np.einsum("k,kdr,krl->dl", w, db, da)


def estimate_G(grad_norms: ArrayLike) -> float:  # noqa: N802 - the paper's symbol
    """G = max recorded stochastic-gradient norm (Assumption 6)."""
    g = _finite("grad_norms", grad_norms)
    if np.any(g < 0):
        raise ValueError("grad_norms must be >= 0")
    return float(np.max(g))


def estimate_W(component_norms: ArrayLike) -> float:  # noqa: N802 - the paper's symbol
    """W = max ||B[:, i]|| ||A[i, :]|| over layers, components and rounds (Assumption 6)."""
    c = _finite("component_norms", component_norms)
    if np.any(c < 0):
        raise ValueError("component_norms must be >= 0")
    return float(np.max(c))


def estimate_phi(
    cov_sq_norms: ArrayLike, theta_sq_norms: ArrayLike, *, quantile: float = 1.0
) -> float:
    """phi = quantile_q over rounds of ||Cov(theta_B, theta_A)||_F^2 / ||theta_r||_F^2 (eq. 13).

    Assumption 3 bounds ||Cov(theta_B, theta_A)||_F^2 <= phi ||theta_r||_F^2 in every round, so
    phi is an upper-bound constant: ``quantile = 1`` (the default) gives the largest ratio seen,
    the smallest phi the pilot does not violate (still a lower bound on the true sup: a pilot
    sees finitely many rounds). A value like 0.95 discards outlier rounds (as in
    :func:`estimate_S`); a mean would be violated in about half the rounds.

    Rounds with ||theta_r||_F = 0 (e.g. round 0, LoRA initialised with B = 0) are skipped.

    Args:
        cov_sq_norms: (T,) ||Cov(theta_B, theta_A)||_F^2 per round.
        theta_sq_norms: (T,) ||theta_r||_F^2 per round.
        quantile: q in (0, 1] (numpy's linear interpolation between order statistics).
    """
    cov = _finite("cov_sq_norms", cov_sq_norms).ravel()
    th = _finite("theta_sq_norms", theta_sq_norms).ravel()
    if cov.shape != th.shape:
        raise ValueError(
            f"cov_sq_norms and theta_sq_norms must have the same length; got {cov.size}, {th.size}"
        )
    if np.any(cov < 0) or np.any(th < 0):
        raise ValueError("cov_sq_norms and theta_sq_norms must be >= 0")
    q = check_real("quantile", quantile, low=0.0, high=1.0, low_open=True)
    ok = th > 0
    if not np.any(ok):
        raise ValueError("theta_sq_norms must have at least one positive entry")
    return float(np.quantile(cov[ok] / th[ok], q))


def estimate_S(  # noqa: N802 - the paper's symbol
    params: ArrayLike, grads: ArrayLike, *, quantile: float = 1.0
) -> float:
    """Smoothness S from consecutive points of a trajectory (Assumption 4).

    S = quantile_q of ||g_{t+1} - g_t|| / ||theta_{t+1} - theta_t|| over t (pairs with
    theta_{t+1} = theta_t are skipped). ``quantile = 1`` gives the max (a lower bound on the true
    Lipschitz constant); a value like 0.95 discards outliers from noisy gradients.

    Args:
        params: (T, P) parameters, T >= 2.
        grads: (T, P) gradients at those parameters.
        quantile: q in (0, 1].
    """
    x = _finite("params", params)
    g = _finite("grads", grads)
    if x.ndim != 2 or x.shape != g.shape or x.shape[0] < 2:
        raise ValueError(
            f"params and grads must both be (T, P) with T >= 2; got {x.shape}, {g.shape}"
        )
    q = check_real("quantile", quantile, low=0.0, high=1.0, low_open=True)
    dx = np.linalg.norm(np.diff(x, axis=0), axis=1)
    dg = np.linalg.norm(np.diff(g, axis=0), axis=1)
    ok = dx > 0
    if not np.any(ok):
        raise ValueError("params must change along the trajectory (all steps are zero)")
    return float(np.quantile(dg[ok] / dx[ok], q))


def estimate_H(  # noqa: N802 - the paper's symbol
    ranks: ArrayLike, updates: ArrayLike, sigma: ArrayLike, *, r_max: int | None = None
) -> float:
    """H from a rank sweep (Assumption 2, eq. 11), theta_o := the update of the highest rank.

    H = max over swept r < r_o of ||theta_o - theta_r||_F^2 / ((r_max - r) sigma^2(theta_r)),
    with r_o the highest swept rank and r_max = r_o unless given (the paper's r_max is the rank
    of theta_o).

    Args:
        ranks: (R,) distinct swept ranks, R >= 2.
        updates: (R, P) flattened LoRA updates B A, one row per rank.
        sigma: (R,) sigma(theta_r) per rank, > 0 for the ranks below r_o.
        r_max: rank attributed to theta_o; default max(ranks).
    """
    r = np.asarray(ranks)
    u = _finite("updates", updates)
    s = _finite("sigma", sigma)
    if r.ndim != 1 or r.size < 2 or u.ndim != 2 or u.shape[0] != r.size or s.shape != r.shape:
        raise ValueError(
            "ranks (R,), updates (R, P) and sigma (R,) must agree with R >= 2; got "
            f"{r.shape}, {u.shape}, {s.shape}"
        )
    if not np.issubdtype(r.dtype, np.integer) or np.any(r < 1) or np.unique(r).size != r.size:
        raise ValueError(f"ranks must be distinct integers >= 1; got {r.tolist()}")
    top = int(np.argmax(r))
    r_o = int(r[top])
    rm = r_o if r_max is None else check_int("r_max", r_max, low=r_o)
    lower = np.flatnonzero(r < r_o)
    if np.any(s[lower] <= 0):
        raise ValueError("sigma must be > 0 for every rank below the highest")
    err = np.sum((u[lower] - u[top]) ** 2, axis=1)
    return float(np.max(err / ((rm - r[lower]) * s[lower] ** 2)))


def calibrate_constants(
    record: PilotRecord,
    *,
    defaults: BoundConstants | None = None,
    eta: float | None = None,
    E: int | None = None,  # noqa: N803 - the paper's symbol
    r_max: int | None = None,
    smoothness_quantile: float = 1.0,
    phi_quantile: float = 1.0,
) -> BoundConstants:
    """Estimate S, H, W, phi, G from ``record``; keep ``defaults`` for what it does not measure.

    Args:
        record: the pilot measurements.
        defaults: constants to start from (default ``BoundConstants()``).
        eta: the run's local learning rate (overrides ``defaults.eta``).
        E: the run's local iterations per round (overrides ``defaults.E``).
        r_max: the rank treated as full fine-tuning (overrides ``defaults.r_max``; also used as
            theta_o's rank for H when it is at least the highest swept rank).
        smoothness_quantile: quantile for :func:`estimate_S` (1 = max).
        phi_quantile: quantile for :func:`estimate_phi` (1 = max).

    Returns:
        a validated :class:`BoundConstants`.
    """
    base = BoundConstants() if defaults is None else defaults
    if not isinstance(base, BoundConstants):
        raise ValueError(f"defaults must be a BoundConstants; got {type(base).__name__}")
    if not isinstance(record, PilotRecord):
        raise ValueError(f"record must be a PilotRecord; got {type(record).__name__}")
    upd: dict[str, float | int] = {}
    if eta is not None:
        upd["eta"] = eta
    if E is not None:
        upd["E"] = E
    if r_max is not None:
        upd["r_max"] = r_max
    if record.grad_norms is not None:
        upd["G"] = estimate_G(record.grad_norms)
    if record.component_norms is not None:
        upd["W"] = estimate_W(record.component_norms)
    if record.cov_sq_norms is not None or record.theta_sq_norms is not None:
        if record.cov_sq_norms is None or record.theta_sq_norms is None:
            raise ValueError("cov_sq_norms and theta_sq_norms must be given together")
        upd["phi"] = estimate_phi(record.cov_sq_norms, record.theta_sq_norms, quantile=phi_quantile)
    if record.trajectory_params is not None or record.trajectory_grads is not None:
        if record.trajectory_params is None or record.trajectory_grads is None:
            raise ValueError("trajectory_params and trajectory_grads must be given together")
        upd["S"] = estimate_S(
            record.trajectory_params, record.trajectory_grads, quantile=smoothness_quantile
        )
    sweep = (record.sweep_ranks, record.sweep_updates, record.sweep_sigma)
    if any(x is not None for x in sweep):
        if any(x is None for x in sweep):
            raise ValueError("sweep_ranks, sweep_updates and sweep_sigma must be given together")
        top = int(np.max(np.asarray(record.sweep_ranks)))
        h_rmax = r_max if (r_max is not None and r_max >= top) else None
        upd["H"] = estimate_H(
            record.sweep_ranks, record.sweep_updates, record.sweep_sigma, r_max=h_rmax
        )
    return replace(base, **upd)
