"""The event-driven modes (``server.mode``: async, buffered, semi_sync; docs/simulator.md,
"Asynchronous rounds").

An event loop written here (heapq, plain Python, the band re-divided among the uploads on the
air by tracking every upload's remaining bits, not the engine's attained service) reproduces
the engine's dispatches, arrival order, arrival times, staleness and weights on fixed channels
(an SNR trace with the same row every round) and fixed device speeds. FedAsync's and FedBuff's
server updates are checked by hand on small tensors, the staleness functions against the
papers' formulas, and the refusals are one line each.
"""

from __future__ import annotations

import bisect
import heapq
import math

import numpy as np
import pytest
from scenario_helpers import small_scenario

from channels import lora_training_flops
from channels.streams import round_generator
from wirelessfl.config.scenario import ServerConfig
from wirelessfl.errors import ConfigError
from wirelessfl.servers.fedasync import FedAsync
from wirelessfl.servers.fedbuff import FedBuff
from wirelessfl.servers.semi_sync import SemiSync
from wirelessfl.servers.staleness import staleness_weight
from wirelessfl.sim import run_scenario

N = 12
RANK = 4
V = 32
LAYERS = [[64, 64], [64, 32]]
BANDWIDTH_HZ = 1.0e6
SNR_DB = np.linspace(-3.0, 21.0, N)  # client k's SNR, every round
FLOPS_PER_S = [2.0e9 * (1 + (7 * k) % 5) for k in range(N)]  # an order of magnitude apart


def _scenario(tmp_path, mode: str, rounds: int, **server):
    trace = tmp_path / "snr.npy"
    np.save(trace, np.tile(SNR_DB, (rounds, 1)))
    overrides = {
        "n_clients": N,
        "n_scheduled": 4,
        "rounds": rounds,
        "eval_every": 5,
        "channel": {"bandwidth_hz": BANDWIDTH_HZ, "snr_trace": str(trace)},
        "devices": {
            "kind": "listed",
            "per_client_flops_per_s": FLOPS_PER_S,
            "include_compute": True,
        },
        "controller": {"name": "fixed", "rank": RANK, "r_max": 16},
        "learner.shape.layer_shapes": LAYERS,
        "server": {"mode": mode, **server},
    }
    return small_scenario(**overrides)


def _expected_bits_and_flops() -> tuple[float, float]:
    """SOFT at ratio 1 sends r (d + l) values per layer; the surrogate's FLOPs of a round."""
    bits = V * RANK * sum(d + ell for d, ell in LAYERS)
    flops = lora_training_flops(
        [tuple(s) for s in LAYERS], RANK, batch_size=16, steps=5, seq_len=197, base_params=86e6
    )
    return float(bits), float(flops)


def _reference(
    mode: str, seed: int, rounds: int, concurrency: int, m: int, s, alpha=0.6, lr=1.0
) -> list[dict]:
    """The updates in aggregation order, from a plain event loop (module docstring)."""
    bits, flops = _expected_bits_and_flops()
    full_rate = [BANDWIDTH_HZ * math.log2(1.0 + 10.0 ** (db / 10.0)) for db in SNR_DB]
    now, version, j = 0.0, 0, 0
    idle = list(range(N))
    computing: list[tuple[float, int]] = []
    remaining: dict[int, float] = {}  # bits left of the uploads on the air
    started: dict[int, dict] = {}  # client -> its update so far
    buffer: list[dict] = []
    out: list[dict] = []

    def refill():
        nonlocal j
        while len(started) < concurrency and idle:
            rng = round_generator(seed, stream="dispatch", round_index=j)
            client = idle.pop(int(rng.integers(len(idle))))
            j += 1
            started[client] = {"client": client, "dispatch_s": now, "version": version}
            heapq.heappush(computing, (now + flops / FLOPS_PER_S[client], client))

    refill()
    while version < rounds:
        n = len(remaining)
        ends = sorted((left * n / full_rate[c], c) for c, left in remaining.items())
        upload_end = now + ends[0][0] if ends else math.inf
        compute_end = computing[0][0] if computing else math.inf
        next_s = min(upload_end, compute_end)
        for c in remaining:
            remaining[c] -= full_rate[c] / n * (next_s - now)
        now = next_s
        if upload_end <= compute_end:
            client = ends[0][1]
            del remaining[client]
            u = started.pop(client)
            u["arrival_s"] = now
            buffer.append(u)
            if mode == "async" or len(buffer) == m:
                for b in buffer:
                    b["round"], b["staleness"] = version, version - b["version"]
                    tau = b["staleness"]
                    b["weight"] = alpha * s(tau) if mode == "async" else lr * s(tau) / len(buffer)
                    bisect.insort(idle, b["client"])
                out.extend(buffer)
                buffer = []
                version += 1
            refill()
        else:
            _, client = heapq.heappop(computing)
            started[client]["upload_start_s"] = now
            remaining[client] = bits
    return out


def _poly(a):
    return lambda tau: (tau + 1.0) ** (-a)


@pytest.mark.parametrize(
    ("mode", "rounds", "server", "s"),
    [
        ("async", 40, {"concurrency": 5, "alpha": 0.6}, _poly(0.5)),
        (
            "async",
            30,
            {"concurrency": 6, "alpha": 0.9, "staleness": "hinge", "staleness_a": 2.0,
             "staleness_b": 1.0},
            lambda tau: 1.0 if tau <= 1.0 else 1.0 / (2.0 * (tau - 1.0) + 1.0),
        ),
        ("buffered", 12, {"concurrency": 5, "buffer_size": 3, "server_lr": 2.0}, _poly(0.5)),
        ("buffered", 8, {"concurrency": 12, "buffer_size": 4, "staleness": "constant"},
         lambda tau: 1.0),
    ],
)  # fmt: skip
def test_an_independent_event_loop_gives_the_same_updates(tmp_path, mode, rounds, server, s):
    sc = _scenario(tmp_path, mode, rounds, **server)
    result = run_scenario(sc, tmp_path / "run")
    ref = _reference(
        mode,
        sc.seed,
        rounds,
        server["concurrency"],
        server.get("buffer_size", 1),
        s,
        alpha=server.get("alpha", 0.6),
        lr=server.get("server_lr", 1.0),
    )
    got = result.clients
    bits, _ = _expected_bits_and_flops()
    assert (got.bits == bits).all()
    assert got.client.tolist() == [u["client"] for u in ref]  # arrival order
    assert got["round"].tolist() == [u["round"] for u in ref]
    assert got.staleness.tolist() == [u["staleness"] for u in ref]
    assert got.version.tolist() == [u["version"] for u in ref]
    assert got.staleness.max() > 0  # the loop tests staleness, not only fresh updates
    for column in ("dispatch_s", "upload_start_s", "arrival_s", "weight"):
        np.testing.assert_allclose(got[column], [u[column] for u in ref], rtol=1e-9, atol=1e-12)
    rounds_table = result.rounds
    assert rounds_table["round"].tolist() == list(range(rounds))
    last = got.groupby("round").arrival_s.max()
    np.testing.assert_allclose(rounds_table.t_end_s, last, rtol=0, atol=0)
    assert (rounds_table.version == rounds_table["round"] + 1).all()
    np.testing.assert_allclose(
        rounds_table.max_staleness, got.groupby("round").staleness.max(), rtol=0
    )


def test_semi_sync_aggregates_at_each_deadline_and_carries_late_updates(tmp_path):
    deadline_s = 600.0  # the clients compute for 540-2,700 s: many miss a deadline
    sc = _scenario(tmp_path, "semi_sync", 15, concurrency=5, deadline_s=deadline_s)
    result = run_scenario(sc, tmp_path / "run")
    rounds, clients = result.rounds, result.clients
    np.testing.assert_allclose(rounds.t_end_s, deadline_s * np.arange(1, 16), rtol=1e-12)
    # each update is taken by the first deadline at or after its arrival
    assert (clients["round"] == np.ceil(clients.arrival_s / deadline_s) - 1).all()
    late = clients[clients.staleness > 0]
    assert len(late) > 0  # carried over, not discarded
    assert (late.arrival_s > deadline_s * (late.version + 1)).all()
    taken = clients.groupby("round").size().reindex(range(15), fill_value=0)
    assert (rounds.n_arrived == taken).all()
    assert (rounds.n_arrived == 0).any()  # a deadline with nothing arrived is a row too
    # dispatches happen only at deadlines (and time 0), from the version of that deadline
    np.testing.assert_allclose(clients.dispatch_s, deadline_s * clients.version, rtol=1e-12)


# ---- the papers' formulas by hand -----------------------------------------------------------
def test_staleness_functions_are_the_fedasync_ones():
    assert staleness_weight(7, "constant", 0.5, 4.0) == 1.0
    assert staleness_weight(3, "polynomial", 0.5, 4.0) == pytest.approx(0.5)  # 4^-1/2
    assert staleness_weight(0, "polynomial", 2.0, 4.0) == 1.0
    assert staleness_weight(1, "hinge", 2.0, 1.0) == 1.0  # tau <= b
    assert staleness_weight(3, "hinge", 2.0, 1.0) == pytest.approx(1.0 / 5.0)  # 1/(2*2+1)
    fedasync = FedAsync(ServerConfig(mode="async", alpha=0.6, staleness_b=4.0), 5)
    assert fedasync.weights([8]) == (pytest.approx([0.2]), 1.0)  # 0.6/3, mixed
    # FedBuff and semi_sync: eta_g s(tau) / M with s = 1/sqrt(1 + tau), not mixed
    for mode, name in ((FedBuff, "buffered"), (SemiSync, "semi_sync")):
        server = ServerConfig(mode=name, server_lr=1.5, staleness_b=0.0)
        assert mode(server, 5).weights([0, 3, 8]) == (
            pytest.approx([1.5 / 3, 1.5 * 0.5 / 3, 1.5 / 3 / 3]),
            0.0,
        )


@pytest.fixture
def fedit():
    torch = pytest.importorskip("torch")
    from scenario_helpers import digits_scenario

    from wirelessfl.algorithms import make_algorithm
    from wirelessfl.training.runtime import Runtime

    sc = digits_scenario(**{"algorithm.name": "fedit"})
    runtime = Runtime(sc)
    runtime.start(rank=4, seed=sc.seed)
    algorithm = make_algorithm(sc)
    algorithm.bind(runtime)
    return torch, runtime, algorithm


def _random_update(torch, glob, names, generator):
    return {n: torch.randn(glob[n].shape, generator=generator) for n in names}


def test_fedasync_mixes_the_client_model_by_hand(fedit):
    """x <- (1 - a) x + a (x_start + Delta), a = alpha s(tau) (FedAsync, Algorithm 1)."""
    torch, runtime, algorithm = fedit
    from wirelessfl.algorithms import Message

    g = torch.Generator().manual_seed(3)
    start = {n: v.clone() for n, v in runtime.initial_state().items()}
    names = list(start)
    # the server moved on since the client downloaded: x = x_start + drift
    glob = {n: v + torch.randn(v.shape, generator=g) for n, v in start.items()}
    before = {n: v.clone() for n, v in glob.items()}
    delta = _random_update(torch, glob, names, g)
    ([a], _) = FedAsync(ServerConfig(mode="async", alpha=0.6, staleness_b=0.0), 5).weights([3])
    out = algorithm.add_updates(glob, {7: Message(shared=delta)}, [a], [1.0], {7: start})
    for n in names:
        want = (1 - a) * before[n] + a * (start[n] + delta[n])
        torch.testing.assert_close(out[n], want, rtol=1e-6, atol=1e-6)


def test_fedbuff_step_by_hand(fedit):
    """x <- x + eta_g (1/M) sum_k s(tau_k) Delta_k (FedBuff, Algorithm 1)."""
    torch, runtime, algorithm = fedit
    from wirelessfl.algorithms import Message

    g = torch.Generator().manual_seed(4)
    glob = runtime.initial_state()
    before = {n: v.clone() for n, v in glob.items()}
    names = list(glob)
    taus, lr = [0, 2, 5], 0.8
    deltas = {c: _random_update(torch, glob, names, g) for c in (1, 4, 6)}
    weights, _ = FedBuff(ServerConfig(mode="buffered", server_lr=lr), 5).weights(taus)
    messages = {c: Message(shared=d) for c, d in deltas.items()}
    out = algorithm.add_updates(glob, messages, weights, [0.0] * 3)
    for n in names:
        want = before[n] + lr / 3 * sum(
            d[n] / math.sqrt(1 + tau) for d, tau in zip(deltas.values(), taus, strict=True)
        )
        torch.testing.assert_close(out[n], want, rtol=1e-6, atol=1e-6)


# ---- real training ---------------------------------------------------------------------------
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("mode", ["async", "buffered"])
def test_real_training_runs_asynchronously(tmp_path, mode):
    pytest.importorskip("torch")
    from scenario_helpers import digits_scenario

    sc = digits_scenario(
        **{
            "algorithm.name": "fedit",
            "rounds": 6,
            "eval_every": 3,
            "server": {"mode": mode, "concurrency": 3, "buffer_size": 2},
        }
    )
    result = run_scenario(sc, tmp_path / "run")
    rounds = result.rounds
    assert len(rounds) == 6
    assert np.isfinite(rounds.loss).all()
    assert np.isfinite(rounds.accuracy.iloc[-1]) and rounds.accuracy.iloc[-1] > 0.1
    assert (rounds.n_arrived == (1 if mode == "async" else 2)).all()
    assert result.clients.staleness.max() > 0


# ---- refusals --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "starts"),
    [
        ({"server.dispatch": "nearest"}, "server.dispatch: must be one of 'random', "),
        ({"server.mode": "semi_sync"}, "server.deadline_s: semi_sync aggregates"),
        ({"server.deadline_s": 1.0}, "server.deadline_s: semi_sync aggregates"),
        ({"server.mode": "async", "faults.redistribute_unused": True},
         "faults.redistribute_unused: not read"),
        ({"server.mode": "buffered", "selection.method": "best_snr"},
         "selection.method: not read"),
        ({"server.mode": "async", "server.concurrency": 21}, "server.concurrency: must be <="),
        ({"server.staleness": "exponential"}, "server.staleness: must be one of"),
    ],
)  # fmt: skip
def test_bad_settings_are_one_line(overrides, starts):
    with pytest.raises(ConfigError) as err:
        small_scenario(**overrides)
    assert str(err.value).startswith(starts)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("algorithm", ["fedstack", "flexlora", "floral"])
def test_an_algorithm_without_single_updates_is_refused_when_loaded(algorithm):
    with pytest.raises(ConfigError) as err:
        small_scenario(**{"server.mode": "async", "algorithm.name": algorithm})
    message = str(err.value)
    assert message.startswith("server.mode: async adds single weighted updates")
    assert f"{algorithm!r}" in message and "\n" not in message


def test_a_learner_without_event_driven_rounds_is_refused(tmp_path):
    """A learner made in Python that does not implement dispatch / add_updates."""
    from wirelessfl.learners.surrogate import SurrogateLearner

    class SyncOnly(SurrogateLearner):
        def event_driven_refusal(self):
            return "the learner SyncOnly has no event-driven rounds"

    sc = small_scenario(**{"server.mode": "buffered"})
    with pytest.raises(ConfigError) as err:
        run_scenario(sc, tmp_path / "run", learner=SyncOnly.from_scenario(sc))
    assert str(err.value) == (
        "server.mode: buffered needs a learner that adds single weighted updates, and the "
        "learner SyncOnly has no event-driven rounds; use server.mode: sync"
    )
