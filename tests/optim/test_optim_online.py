"""solve_slot: equal-delay shares (eq. 31), the planned delay, fallback, and argument checks."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from optim import BoundConstants, SlotSolution, convergence_bound, solve_slot
from optim.p3_cvxpy import P3CvxpyProblem, P3CvxpyResult

P = 36_864
V_BITS = 32
B_HZ = 1e6


def _kwargs(**over):
    kw = dict(
        queue=3.0,
        V=1e-3,
        snr=10 ** np.random.default_rng(0).uniform(-1, 2, size=10),
        rank=8,
        n_clients=100,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        o_min=0.05,
        constants=BoundConstants(),
    )
    kw.update(over)
    return kw


@pytest.mark.parametrize("method", ["exact", "cvxpy"])
def test_every_scheduled_client_finishes_at_the_planned_delay(method):
    rng = np.random.default_rng(11)
    for _ in range(10):
        k = int(rng.integers(1, 50))
        kw = _kwargs(
            snr=10 ** rng.uniform(-1, 3, size=k),
            queue=float(rng.uniform(0, 50)),
            rank=int(rng.integers(1, 65)),
        )
        sol = solve_slot(method=method, **kw)
        assert isinstance(sol, SlotSolution)
        assert sol.shares.shape == (k,)
        assert sol.shares.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.all(sol.shares > 0)
        bits = V_BITS * sol.sparsification * kw["rank"] * P  # eq. payload v O r (d + l)
        per_client = bits / (sol.shares * B_HZ * np.log2(1.0 + kw["snr"]))
        np.testing.assert_allclose(per_client, sol.delay_s, rtol=1e-12)
        g = convergence_bound(
            rank=kw["rank"],
            sparsification=sol.sparsification,
            n_scheduled=k,
            n_clients=100,
            constants=kw["constants"],
        )
        assert sol.bound == pytest.approx(g, rel=1e-12)
        assert sol.objective == pytest.approx(kw["queue"] * sol.delay_s + kw["V"] * g, rel=1e-12)
        assert sol.queue_before == kw["queue"] and sol.queue_after is None
        assert kw["o_min"] <= sol.sparsification <= 1.0


def test_limits_of_the_trade_off():
    assert solve_slot(**_kwargs(queue=0.0)).sparsification == 1.0  # no backlog: send all
    assert solve_slot(**_kwargs(V=0.0)).sparsification == 0.05  # no penalty: least delay
    lo = solve_slot(**_kwargs(queue=1.0)).sparsification
    hi = solve_slot(**_kwargs(queue=100.0)).sparsification
    assert hi < lo  # more backlog, more compression


def test_cvxpy_failure_falls_back_to_exact_and_logs(monkeypatch, caplog):
    def fail(self, *, qc, va, o_min):
        return P3CvxpyResult(sparsification=None, status="infeasible_inaccurate", solver="CLARABEL")

    monkeypatch.setattr(P3CvxpyProblem, "solve", fail)
    with caplog.at_level(logging.WARNING, logger="optim.online"):
        sol = solve_slot(method="cvxpy", cvxpy_problem=P3CvxpyProblem(), **_kwargs())
    assert sol.fell_back and sol.method == "exact"
    assert sol.sparsification == solve_slot(method="exact", **_kwargs()).sparsification
    assert any("falling back" in r.getMessage() for r in caplog.records)


def test_cvxpy_solver_error_is_caught(monkeypatch, caplog):
    import cvxpy as cp

    prob = P3CvxpyProblem(solvers=("CLARABEL",))

    def boom(*args, **kwargs):
        raise cp.SolverError("simulated")

    monkeypatch.setattr(prob.problem, "solve", boom)
    with caplog.at_level(logging.WARNING):
        sol = solve_slot(method="cvxpy", cvxpy_problem=prob, **_kwargs())
    assert sol.fell_back and sol.method == "exact"


def test_zero_snr_raises_with_clear_message():
    snr = np.array([5.0, 0.0, 3.0])
    with pytest.raises(ValueError, match=r"snr must be > 0.*index 1"):
        solve_slot(**_kwargs(snr=snr))


@pytest.mark.parametrize(
    ("over", "name"),
    [
        (dict(queue=-1.0), "queue"),
        (dict(queue=float("nan")), "queue"),
        (dict(V=-1e-3), "V"),
        (dict(snr=np.array([1.0, np.inf])), "snr"),
        (dict(snr=np.array([1.0, -2.0])), "snr"),
        (dict(snr=np.ones((2, 3))), "snr"),
        (dict(snr=np.array([])), "snr"),
        (dict(snr=np.ones(101)), "n_clients"),
        (dict(rank=0), "rank"),
        (dict(rank=65), "rank"),
        (dict(n_clients=0), "n_clients"),
        (dict(params_per_rank=0), "params_per_rank"),
        (dict(bits_per_value=-32), "bits_per_value"),
        (dict(bandwidth_hz=0.0), "bandwidth_hz"),
        (dict(o_min=0.0), "o_min"),
        (dict(o_min=1.0), "o_min"),
        (dict(o_min=1.5), "o_min"),
        (dict(constants=None), "constants"),
        (dict(method="newton"), "method"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(over, name):
    with pytest.raises(ValueError, match=name):
        solve_slot(**_kwargs(**over))


def test_error_message_gives_accepted_range():
    with pytest.raises(ValueError, match=r"o_min must be a finite number in \(0, 1\); got 1\.5"):
        solve_slot(**_kwargs(o_min=1.5))
    with pytest.raises(ValueError, match=r"rank must be an integer in \[1, 64\]; got 65"):
        solve_slot(**_kwargs(rank=65))
