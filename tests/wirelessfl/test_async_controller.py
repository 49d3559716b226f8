"""The controller in the event-driven modes (docs/solvers.md, "Per-dispatch step (asynchronous
modes)"; docs/simulator.md, "Asynchronous rounds").

Network-only runs on a fixed channel (an SNR trace with the same row every aggregation) and
listed device speeds. Each check recomputes from the tables, independently of the code: every
update's ratio (the root of P3's quintic by numpy.roots, the penalty from
``optim.convergence_bound`` at K = C), the queue's recursion per update, the energy queues per
aggregation, and which idle client ``server.dispatch: controller`` starts.
"""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import small_scenario

from optim import convergence_bound
from wirelessfl.errors import ConfigError
from wirelessfl.sim import run_scenario
from wirelessfl.sim.setup import bound_constants

N = 12
RANK = 4
V_BITS = 32
LAYERS = [[64, 64], [64, 32]]
BANDWIDTH_HZ = 1.0e6
SNR_DB = np.linspace(-3.0, 21.0, N)
SNR = 10.0 ** (SNR_DB / 10.0)
FLOPS_PER_S = np.array([4.0e12 * (1 + (7 * k) % 5) for k in range(N)])  # 0.1 to 1.4 s a round
BITS_AT_ONE = V_BITS * RANK * sum(d + ell for d, ell in LAYERS)  # SOFT at O = 1


def _scenario(tmp_path, rounds: int, *, controller=None, compute=True, **server):
    trace = tmp_path / "snr.npy"
    np.save(trace, np.tile(SNR_DB, (rounds, 1)))
    return small_scenario(
        **{
            "n_clients": N,
            "n_scheduled": 4,
            "rounds": rounds,
            "eval_every": 5,
            "channel": {"bandwidth_hz": BANDWIDTH_HZ, "snr_trace": str(trace)},
            "devices": {
                "kind": "listed",
                "per_client_flops_per_s": FLOPS_PER_S.tolist(),
                "include_compute": compute,
            },
            "controller": {
                "name": "osfa",
                "rank": RANK,
                "r_max": 16,
                "V": 1.0e-4,
                "d_th_s": 0.45,
                "o_min": 0.05,
                **(controller or {}),
            },
            "learner.shape.layer_shapes": LAYERS,
            "server": server,
        }
    )


def _penalty_parts(sc, concurrency: int) -> tuple[float, float]:
    """gamma(O) = offset + a (1 - O)^2 / O^4 at the run's rank with K = C, from eq. (14)."""
    kw = {
        "rank": RANK,
        "n_scheduled": concurrency,
        "n_clients": N,
        "constants": bound_constants(sc),
    }
    offset = float(convergence_bound(sparsification=1.0, **kw))
    a = (float(convergence_bound(sparsification=0.5, **kw)) - offset) / 4.0  # (1/2)^2/(1/2)^4
    return offset, a


def _ratio(qc: float, va: float, o_min: float) -> float:
    """argmin_{O in [o_min, 1]} qc O + va (1 - O)^2 / O^4: with x = 1/O the stationary point is
    the root x >= 1 of 2 va (2 x^5 - 3 x^4 + x^3) = qc (numpy.roots)."""
    if qc == 0.0:
        return 1.0
    roots = np.roots([4.0 * va, -6.0 * va, 2.0 * va, 0.0, 0.0, -qc])
    x = max(r.real for r in roots if abs(r.imag) < 1e-9 * max(1.0, abs(r)) and r.real >= 1.0)
    return min(1.0, max(o_min, 1.0 / x))


def _upload_per_ratio_s(client, concurrency: int):
    """u_k: upload seconds per unit ratio at the share 1/C."""
    return BITS_AT_ONE * concurrency / (BANDWIDTH_HZ * np.log2(1.0 + SNR[client]))


def test_each_dispatch_solves_its_own_problem_and_the_queue_takes_every_update(tmp_path):
    c = 5
    sc = _scenario(tmp_path, 40, mode="buffered", concurrency=c, buffer_size=2)
    result = run_scenario(sc, tmp_path / "run")
    rounds, clients = result.rounds, result.clients
    # the queue: eq. (21) once per update, in arrival order, with compute + upload
    q = 0.0
    for t, row in rounds.iterrows():
        assert row.queue == q
        for latency in (clients.compute_s + clients.upload_s)[clients["round"] == t]:
            q = max(q + latency - 0.45, 0.0)
        assert row.queue_after == pytest.approx(q, rel=1e-12, abs=1e-15)
        q = row.queue_after
    assert (rounds.queue > 0).sum() >= 5  # the budget binds, so the ratio moves
    # each update's ratio from the queue of the aggregation it was dispatched under
    offset, a = _penalty_parts(sc, c)
    queue_at = rounds.queue.to_numpy()
    want = [
        _ratio(queue_at[v] * _upload_per_ratio_s(k, c), 1.0e-4 * a, 0.05)
        for k, v in zip(clients.client, clients.version, strict=True)
    ]
    np.testing.assert_allclose(clients.ratio, want, rtol=1e-9)
    assert (clients.ratio < 1.0).sum() >= 5 and (clients.ratio == 1.0).any()
    # exact bits: round(O r (d + l)) values per layer
    assert (np.abs(clients.bits - clients.ratio * BITS_AT_ONE) <= V_BITS * len(LAYERS)).all()
    # the rows' controller columns are the means over the updates taken
    taken = clients.groupby("round")
    np.testing.assert_allclose(rounds.sparsification, taken.ratio.mean(), rtol=1e-12)
    gamma = offset + a * (1.0 - clients.ratio) ** 2 / clients.ratio**4
    np.testing.assert_allclose(rounds.bound, gamma.groupby(clients["round"]).mean(), rtol=1e-9)
    assert rounds.energy_queue_mean_j.isna().all()  # no budget
    # planned latency: compute + the exact bits at the share 1/C, never below the realised one
    # (at most C uploads share the band)
    planned = clients.compute_s + clients.bits * c / (
        BANDWIDTH_HZ * np.log2(1.0 + SNR[clients.client])
    )
    realised = clients.compute_s + clients.upload_s
    np.testing.assert_allclose(rounds.planned_delay_s, planned.groupby(clients["round"]).mean())
    assert (planned >= realised * (1.0 - 1e-12)).all() and (planned > realised).any()


def test_with_every_slot_on_the_air_the_planned_latency_is_the_realised_one(tmp_path):
    """async without compute: an arrival's slot is refilled at once, so C uploads are always on
    the air and the share is exactly the planned 1/C."""
    sc = _scenario(
        tmp_path, 30, compute=False, controller={"d_th_s": 0.01}, mode="async", concurrency=4
    )
    rounds = run_scenario(sc, tmp_path / "run").rounds
    np.testing.assert_allclose(rounds.planned_delay_s, rounds.delay_s, rtol=1e-9)
    assert rounds.sparsification.min() < 1.0


def test_dispatch_by_the_controller_starts_the_idle_client_of_least_objective(tmp_path):
    """Every dispatch instant, replayed from events.csv: the clients started are the idle ones
    of least J_k = V gamma_k(O_k) + Q (c_k + u_k O_k), ties by the shorter latency, then id."""
    c = 4
    sc = _scenario(
        tmp_path, 30, mode="buffered", concurrency=c, buffer_size=2, dispatch="controller"
    )
    result = run_scenario(sc, tmp_path / "run")
    rounds, clients, events = result.rounds, result.clients, result.events
    offset, a = _penalty_parts(sc, c)
    flops = float((clients.compute_s * FLOPS_PER_S[clients.client]).iloc[0])
    compute_s = flops / FLOPS_PER_S
    taken_in = clients.groupby("round").client.apply(list)
    starts = events[events.kind == "compute_start"]
    # replay in the file's order: compute_start -> busy, aggregate -> the round's clients idle
    busy, checked, instant = set(), 0, None
    for row in events.itertuples():
        if row.kind == "aggregate":
            busy -= set(taken_in.get(row.round, []))
        elif row.kind == "compute_start":
            key = (row.round, row.time_s)
            if key != instant:
                instant = key
                group = starts[(starts["round"] == row.round) & (starts.time_s == row.time_s)]
                idle = [k for k in range(N) if k not in busy]
                q = float(rounds.queue[row.round])
                scored = []
                for k in idle:
                    u = _upload_per_ratio_s(k, c)
                    o = _ratio(q * u, 1.0e-4 * a, 0.05)
                    latency = compute_s[k] + u * o
                    j = 1.0e-4 * (offset + a * (1.0 - o) ** 2 / o**4) + q * latency
                    scored.append((j, latency, k))
                want = sorted(scored)[: len(group)]
                assert set(group.client) == {k for *_, k in want}, (row.round, row.time_s)
                checked += 1
            busy.add(row.client)
    assert checked >= 20
    assert (rounds.queue > 0).any()


def test_energy_queues_take_each_aggregation(tmp_path):
    budget_j = 0.05
    sc = _scenario(
        tmp_path,
        25,
        mode="async",
        concurrency=3,
        controller={"energy_budget_j": budget_j, "name": "tsfa", "d_th_s": 2.0},
    )
    result = run_scenario(sc, tmp_path / "run")
    rounds, clients = result.rounds, result.clients
    z = np.zeros(N)
    for t in range(len(rounds)):
        spent = np.zeros(N)
        mine = clients[clients["round"] == t]
        np.add.at(spent, mine.client, mine.compute_energy_j + mine.transmit_energy_j)
        z = np.maximum(z + spent - budget_j, 0.0)
        assert rounds.energy_queue_mean_j[t] == pytest.approx(z.mean(), rel=1e-12)
    assert rounds.energy_queue_mean_j.iloc[-1] > 0


def test_cvxpy_method_gives_the_exact_ratios(tmp_path):
    pytest.importorskip("cvxpy")
    runs = {}
    for method in ("exact", "cvxpy"):
        sc = _scenario(tmp_path, 12, controller={"method": method}, mode="async", concurrency=4)
        runs[method] = run_scenario(sc, tmp_path / method).clients
    # CLARABEL's O is within ~1e-5 of the exact one, and the queue carries the difference on
    np.testing.assert_allclose(runs["cvxpy"].ratio, runs["exact"].ratio, rtol=1e-4)
    assert runs["exact"].ratio.min() < 1.0


def test_fixed_controller_dispatches_at_its_rank_and_ratio(tmp_path):
    sc = _scenario(tmp_path, 8, controller={"name": "fixed", "sparsification": 0.5}, mode="async")
    clients = run_scenario(sc, tmp_path / "run").clients
    assert (clients.ratio == 0.5).all() and (clients["rank"] == RANK).all()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"server.mode": "async", "server.dispatch": "controller", "controller.name": "fixed"},
            "server.dispatch: controller starts the idle client of least per-dispatch "
            "drift-plus-penalty, and controller 'fixed' has none; use controller.name: tsfa or "
            "osfa, or server.dispatch: random",
        ),
        (
            {
                "server.mode": "buffered",
                "controller.name": "fixed",
                "controller.energy_budget_j": 1.0,
            },
            "controller.energy_budget_j: the 'fixed' controller has no online stage to keep it; "
            "use tsfa or osfa, or remove the budget",
        ),
    ],
)
def test_refusals_are_one_line(overrides, message):
    with pytest.raises(ConfigError) as err:
        small_scenario(**overrides)
    assert str(err.value) == message


def test_semi_sync_runs_with_an_energy_budget(tmp_path):
    sc = small_scenario(
        **{
            "rounds": 6,
            "server": {"mode": "semi_sync", "deadline_s": 0.3, "concurrency": 4},
            "controller.energy_budget_j": 1.0,
        }
    )
    rounds = run_scenario(sc, tmp_path / "run").rounds
    assert (rounds.energy_queue_mean_j > 0).all()  # compute energy alone exceeds 1 J
