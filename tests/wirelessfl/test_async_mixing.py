"""The server update of the event-driven modes, end to end: real FedIT training through the
engine (docs/simulator.md, "Asynchronous rounds"; ``wirelessfl.servers``).

The real learner's ``dispatch`` and ``add_updates`` and its algorithm's ``sent_message`` are
wrapped on the instance (the engine calls them as it would): each client's start state is a copy
of the global state when it is dispatched, its update Delta and trained model are what it sent,
and every aggregation's global state is copied before and after. The expected states are then
computed here, in float64, from those tensors and the papers' formulas (tau counted here from the
aggregations done at dispatch; the staleness functions written out), never with the engine's or
the algorithm's mixing code:

- async (FedAsync, Algorithm 1): x_t = (1 - alpha_t) x + alpha_t (x_start + Delta), with
  alpha_t = alpha s(tau);
- buffered and semi_sync (FedBuff, Algorithm 1): x <- x + eta_g (1/M) sum_k s(tau_k) Delta_k.

The mix flag the learner receives is checked in each mode: 1 under async, 0 otherwise.
"""

from __future__ import annotations

import math

import pytest

from wirelessfl.sim import run_scenario

N_CLIENTS = 4
CONCURRENCY = 3
AGGREGATIONS = 4
ALPHA = 0.6  # async: FedAsync's alpha, with s(tau) = 1 / (1 + tau) (polynomial, a = 1)
SERVER_LR = 0.8  # buffered, semi_sync: eta_g, with s(tau) = 1 / sqrt(1 + tau) (a = 0.5)
BUFFER = 2  # buffered: M
DEADLINE_S = 0.0415  # semi_sync: the first uploads end at ~0.040 s and ~0.044 s: one is late
SERVER = {
    "async": {"alpha": ALPHA, "staleness": "polynomial", "staleness_a": 1.0},
    "buffered": {"buffer_size": BUFFER, "server_lr": SERVER_LR},
    "semi_sync": {"deadline_s": DEADLINE_S, "server_lr": SERVER_LR},
}
#: the states agree to float32 rounding (values of order 0.1, differences of a few 1e-9)
ATOL = 1e-7


def _s_async(tau: int) -> float:
    """(tau + 1)^(-a) with a = 1."""
    return 1.0 / (tau + 1.0)


def _s_buffered(tau: int) -> float:
    """(tau + 1)^(-a) with a = 0.5 (FedBuff's)."""
    return 1.0 / math.sqrt(tau + 1.0)


class Spy:
    """What the engine hands the real learner, and the global state around each aggregation."""

    def __init__(self, learner, torch) -> None:
        self.learner, self.torch = learner, torch
        self.done = 0  # aggregations done
        self.starts: dict[int, tuple[int, dict]] = {}  # client -> (version, x_start)
        self.sent: dict[int, tuple[dict, dict]] = {}  # client -> (Delta, trained model)
        self.keep_start: list[bool] = []
        self.aggregations: list[dict] = []
        dispatch, add_updates = learner.dispatch, learner.add_updates
        sent_message = learner.algorithm.sent_message

        def spied_dispatch(plan, *, keep_start):
            self.keep_start.append(keep_start)
            for c in plan.clients.tolist():
                self.starts[int(c)] = (self.done, self._copy(learner.global_state))
            return dispatch(plan, keep_start=keep_start)

        def spied_sent_message(plan, download, result, private):
            message = sent_message(plan, download, result, private)
            self.sent[plan.client] = (self._copy(message.shared), self._copy(result.local))
            return message

        def spied_add_updates(index, updates):
            before = self._copy(learner.global_state)
            clients = [u.client for u in updates]
            metrics = add_updates(index, updates)
            self.aggregations.append(
                {
                    "index": index,
                    "updates": list(updates),
                    "mixes": [u.mix for u in updates],
                    "taus": [self.done - self.starts[c][0] for c in clients],
                    "x": before,
                    "x_start": {c: self.starts.pop(c)[1] for c in clients},
                    "delta": {c: self.sent[c][0] for c in clients},
                    "trained": {c: self.sent.pop(c)[1] for c in clients},
                    "after": self._copy(learner.global_state),
                }
            )
            self.done += 1
            return metrics

        learner.dispatch = spied_dispatch
        learner.add_updates = spied_add_updates
        learner.algorithm.sent_message = spied_sent_message

    def _copy(self, state: dict) -> dict:
        return {n: v.detach().to(self.torch.float64).clone() for n, v in state.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs(mode)``: a spied real-training run of ``mode`` (made once per module)."""
    torch = pytest.importorskip("torch")
    from scenario_helpers import digits_scenario

    from wirelessfl.learners import make_learner

    made: dict[str, Spy] = {}

    def run(mode: str) -> Spy:
        if mode not in made:
            sc = digits_scenario(
                **{
                    "algorithm.name": "fedit",
                    "n_clients": N_CLIENTS,
                    "n_scheduled": 2,
                    "rounds": AGGREGATIONS,
                    "eval_every": AGGREGATIONS,
                    "learner.local_steps": 2,
                    "controller.sparsification": 1.0,
                    "output.checkpoint_every": 0,
                    "server": {"mode": mode, "concurrency": CONCURRENCY, **SERVER[mode]},
                }
            )
            learner = make_learner(sc)
            spy = Spy(learner, torch)
            run_scenario(sc, tmp_path_factory.mktemp(mode), learner=learner)
            assert spy.done == AGGREGATIONS
            made[mode] = spy
        return made[mode]

    return run


def _max_abs(a: dict, b: dict) -> float:
    return max(float((a[n] - b[n]).abs().max()) for n in a)


@pytest.mark.usefixtures("one_torch_thread")
def test_fedasync_mixes_the_stale_client_model_into_the_global_one(runs):
    """Every async aggregation: x_t = (1 - alpha_t) x + alpha_t (x_start + Delta), alpha_t =
    alpha s(tau); at least one is stale (tau > 0) with x far enough from x_start that adding
    x + alpha_t Delta (no mixing) would miss by far more than the tolerance."""
    spy = runs("async")
    stale = []
    for agg in spy.aggregations:
        (u,) = agg["updates"]
        (tau,) = agg["taus"]
        c = u.client
        x, x_start, delta = agg["x"], agg["x_start"][c], agg["delta"][c]
        assert set(delta) == set(x) == set(x_start)  # FedIT sends every trainable tensor
        assert u.staleness == tau
        a_t = ALPHA * _s_async(tau)
        assert u.weight == pytest.approx(a_t, rel=1e-12)
        # Delta is the client's own update: its trained model minus the state it started from
        assert _max_abs({n: x_start[n] + delta[n] for n in x}, agg["trained"][c]) < ATOL
        want = {n: (1.0 - a_t) * x[n] + a_t * (x_start[n] + delta[n]) for n in x}
        diff = _max_abs(agg["after"], want)
        assert diff < ATOL, (agg["index"], tau, a_t, diff)
        if tau > 0:
            stale.append((agg["index"], tau, a_t, diff, a_t * _max_abs(x_start, x)))
    assert stale, "no stale update was aggregated"
    index, tau, a_t, diff, unmixed_miss = stale[0]
    assert tau > 0 and unmixed_miss > 1000 * ATOL, stale[0]  # ~3e-3 here


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("mode", ["buffered", "semi_sync"])
def test_fedbuff_adds_the_staleness_weighted_mean_update(runs, mode):
    """x <- x + eta_g (1/M) sum_k s(tau_k) Delta_k over the M updates taken (semi_sync: the n
    that arrived by the deadline); some are stale, from a start state the server has moved
    away from, so mixing them in (m = 1) would miss by far more than the tolerance."""
    spy = runs(mode)
    mixed_miss = []  # w (x_start - x) of each stale update: what mixing it would add
    for agg in spy.aggregations:
        x, m = agg["x"], len(agg["updates"])
        want = {n: v.clone() for n, v in x.items()}
        for u, tau in zip(agg["updates"], agg["taus"], strict=True):
            assert u.staleness == tau
            w = SERVER_LR * _s_buffered(tau) / m
            assert u.weight == pytest.approx(w, rel=1e-12)
            for n in want:
                want[n] += w * agg["delta"][u.client][n]
            if tau > 0:
                mixed_miss.append(w * _max_abs(agg["x_start"][u.client], x))
        assert _max_abs(agg["after"], want) < ATOL, (agg["index"], agg["taus"])
    assert mixed_miss and max(mixed_miss) > 1000 * ATOL, mixed_miss  # ~3e-3 here
    if mode == "buffered":
        assert all(len(agg["updates"]) == BUFFER for agg in spy.aggregations)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(("mode", "mix"), [("async", 1.0), ("buffered", 0.0), ("semi_sync", 0.0)])
def test_the_learner_is_told_to_mix_under_async_only(runs, mode, mix):
    """The engine's WeightedUpdate.mix is 1 under async (FedAsync mixes x_start + Delta) and 0
    under buffered and semi_sync (FedBuff adds Delta); only async keeps the start states."""
    spy = runs(mode)
    mixes = [m for agg in spy.aggregations for m in agg["mixes"]]
    assert len(mixes) >= AGGREGATIONS - 1  # semi_sync may have an empty aggregation
    assert mixes == [mix] * len(mixes)
    assert spy.keep_start and set(spy.keep_start) == {mode == "async"}
