"""DP in the event-driven server modes (``server.mode: async | buffered | semi_sync``,
docs/privacy.md "Asynchronous rounds"): the server's noise std z C max_k w_k at the staleness
weights the engine applies (FedBuff's and FedAsync's, closed form, Monte Carlo over the model's
values), epsilon after a run against Opacus's accountant stepped by hand with the releases
counted from the run's own tables (central: aggregations that took an update; local and
DP-SGD: every dispatch of a device), no amplification, and a resume that draws the same noise.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import digits_scenario, interrupt_at

from wirelessfl.errors import ConfigError

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus.accountants import RDPAccountant  # noqa: E402

from wirelessfl.learners import make_learner  # noqa: E402
from wirelessfl.plans import RoundPlan, WeightedUpdate  # noqa: E402
from wirelessfl.privacy.accounting import sampling_rate  # noqa: E402
from wirelessfl.sim import resume_run  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402

pytestmark = [pytest.mark.train, pytest.mark.usefixtures("one_torch_thread")]

Z, C, DELTA = 0.3, 0.05, 1e-5


def _dp(mode: str, server: dict, **overrides):
    """The digits scenario (N = 8, FedIT) with client-level DP and an event-driven server."""
    return digits_scenario(
        **{
            "algorithm.name": "fedit",
            "rounds": 8,
            "eval_every": 4,
            "server": server,
            "privacy.mode": mode,
            "privacy.noise_multiplier": Z,
            "privacy.clip_norm": C,
            "privacy.delta": DELTA,
            "output": {"clients": True, "events": True, "checkpoint_every": 1},
            **overrides,
        }
    )


def _epsilon_after(steps: int, sample_rate: float = 1.0, z: float = Z) -> float:
    """Opacus's RDP accountant stepped ``steps`` times by hand (0 before any step)."""
    accountant = RDPAccountant()
    for _ in range(steps):
        accountant.step(noise_multiplier=z, sample_rate=sample_rate)
    return accountant.get_epsilon(DELTA) if steps else 0.0


# ---- the server's noise ------------------------------------------------------------------------
def _global_after(z: float, server: dict, updates: list[tuple[int, float, float, int]]):
    """The global state after one aggregation of a fresh learner at noise multiplier ``z``:
    each (client, w, mix, tau) of ``updates`` dispatched at version 0, then added together."""
    sc = _dp("central", server, **{"privacy.noise_multiplier": z})
    learner = make_learner(sc)
    learner.start(rank=4, n_clients=sc.n_clients, seed=sc.seed)
    for j, (client, _, mix, _) in enumerate(updates):
        plan = RoundPlan(j, np.array([client]), 4, 1.0, math.nan, len(updates))
        learner.dispatch(plan, keep_start=mix != 0.0)
    learner.add_updates(0, [WeightedUpdate(c, w, m, tau) for c, w, m, tau in updates])
    return learner.global_state


@pytest.mark.parametrize(
    ("server", "updates"),
    [
        # FedBuff, M = 3, eta_g = 0.9, s(tau) = (1 + tau)^-1/2: w = 0.9 / 3 * (1, 1/2, 1/3)
        (
            {"mode": "buffered", "buffer_size": 3, "server_lr": 0.9, "concurrency": 3},
            [(1, 0.3, 0.0, 0), (4, 0.3 / 2.0, 0.0, 3), (6, 0.3 / 3.0, 0.0, 8)],
        ),
        # FedAsync, alpha = 0.6, tau = 3: w = alpha (1 + 3)^-1/2 = 0.3, the client's model mixed
        ({"mode": "async", "alpha": 0.6, "concurrency": 2}, [(2, 0.6 / 2.0, 1.0, 3)]),
    ],
)
def test_server_noise_std_is_z_c_max_staleness_weight(server, updates):
    """The same clipped updates added at z = 2 and at a negligible z differ by the server's
    noise alone: N(0, (z C max_k w_k)^2) per value, with the staleness weights."""
    z = 2.0
    noised = _global_after(z, server, updates)
    clean = _global_after(1e-9, server, updates)
    residual = torch.cat([(noised[n] - clean[n]).flatten().double() for n in sorted(noised)])
    n = residual.numel()
    assert n > 1000
    std = z * C * max(w for _, w, _, _ in updates)  # the largest weight: the first update's
    assert float(residual.std()) == pytest.approx(std, rel=5 / math.sqrt(2 * n))
    assert abs(float(residual.mean())) < 5 * std / math.sqrt(n)


# ---- accounting ---------------------------------------------------------------------------------
def test_no_amplification_in_the_event_driven_modes():
    """Uniform dispatch of always-available clients amplifies in sync rounds with a fixed
    denominator (q = K/N), never in the event-driven modes (who arrives follows from speed, not
    from a uniform draw)."""
    sync = digits_scenario(
        **{
            "algorithm.name": "fedit",
            "privacy.mode": "central",
            "strategy.aggregation": "unbiased",
        }
    )
    assert sampling_rate(sync) == pytest.approx(4 / 8)
    for server in (
        {"mode": "async"},
        {"mode": "buffered", "buffer_size": 2},
        {"mode": "semi_sync", "deadline_s": 0.05},
    ):
        assert sampling_rate(_dp("central", {**server, "dispatch": "random"})) == 1.0


def test_central_epsilon_counts_the_aggregations_that_took_an_update(tmp_path):
    """semi_sync with a deadline shorter than some uploads: empty aggregations release
    nothing; the others one Gaussian mechanism at z each, q = 1."""
    sc = _dp("central", {"mode": "semi_sync", "deadline_s": 0.03, "concurrency": 4})
    rounds = Run(sc, tmp_path / "run").execute().rounds
    released = np.cumsum(rounds.n_arrived.to_numpy() > 0)
    assert 0 < released[-1] < len(rounds)  # some aggregations took nothing
    expected = [_epsilon_after(int(k)) for k in released]
    assert np.allclose(rounds.dp_epsilon, expected, rtol=1e-12)


def _dispatches(events: pd.DataFrame, n_clients: int, n_rounds: int) -> np.ndarray:
    """(rounds, N): each device's dispatches up to each aggregation, from ``events.csv``
    (without a downlink a dispatch is a compute start)."""
    starts = events[events.kind == "compute_start"]
    counts = np.zeros((n_rounds, n_clients), dtype=int)
    for t in range(n_rounds):
        for client in starts[starts["round"] <= t].client:
            counts[t, int(client)] += 1
    return counts


def test_local_epsilon_counts_every_dispatch_of_the_busiest_device(tmp_path):
    sc = _dp("local", {"mode": "buffered", "buffer_size": 2, "concurrency": 3})
    run = Run(sc, tmp_path / "run")
    run.execute()
    rounds = pd.read_csv(tmp_path / "run" / "rounds.csv")
    events = pd.read_csv(tmp_path / "run" / "events.csv")
    sends = _dispatches(events, sc.n_clients, len(rounds)).max(axis=1)
    assert sends[-1] > rounds.n_arrived.sum() / sc.n_clients  # in flight counted too
    expected = [_epsilon_after(int(k)) for k in sends]
    assert np.allclose(rounds.dp_epsilon, expected, rtol=1e-12)


def test_dp_sgd_epsilon_composes_each_devices_local_steps(tmp_path):
    sc = digits_scenario(
        **{
            "algorithm.name": "fedit",
            "rounds": 5,
            "server": {"mode": "async", "concurrency": 3},
            "privacy.dp_sgd": True,
            "privacy.sample_noise_multiplier": 1.1,
            "privacy.delta": DELTA,
            "learner.trainer": "sequential",
            "output": {"events": True},
        }
    )
    run = Run(sc, tmp_path / "run")
    rt = run.learner.runtime
    rounds = run.execute().rounds
    events = pd.read_csv(tmp_path / "run" / "events.csv")
    dispatches = _dispatches(events, sc.n_clients, len(rounds))
    expected = []
    for per_device in dispatches:
        eps = []
        for c in np.flatnonzero(per_device):
            accountant = RDPAccountant()
            q = min(1.0, sc.learner.batch_size / rt.partition.sizes[c])
            accountant.history = [(1.1, q, int(per_device[c]) * rt.steps_for(int(c)))]
            eps.append(accountant.get_epsilon(DELTA))
        expected.append(max(eps))
    assert np.allclose(rounds.dp_sgd_epsilon, expected, rtol=1e-12)


def test_a_target_epsilon_stops_an_asynchronous_run(tmp_path):
    target = _epsilon_after(3) * 1.0001  # three releases fit, the fourth does not
    sc = _dp("central", {"mode": "async", "concurrency": 3}, **{"privacy.target_epsilon": target})
    rounds = Run(sc, tmp_path / "run").execute().rounds
    assert len(rounds) == 3
    assert rounds.dp_epsilon.iloc[-1] == pytest.approx(_epsilon_after(3), rel=1e-12)


# ---- adaptive clipping ---------------------------------------------------------------------------
def test_adaptive_clipping_default_count_noise_is_per_aggregation():
    """sigma_b defaults to (updates an aggregation takes) / 20: 1 / 20 for FedAsync, which
    cannot carry z = 0.3 (2 sigma_b > z); the line says where the 1 comes from."""
    with pytest.raises(ConfigError) as err:
        _dp("central", {"mode": "async"}, **{"privacy.adaptive_clipping": True})
    assert "sigma_b = 0.05 (null: 1 / 20, the updates an aggregation takes)" in str(err.value)
    assert "\n" not in str(err.value)


# ---- resume -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "server", "overrides"),
    [
        (
            "central",
            {"mode": "buffered", "buffer_size": 2, "concurrency": 3},
            {"privacy.adaptive_clipping": True, "privacy.count_noise": 0.5},
        ),
        ("local", {"mode": "async", "concurrency": 3}, {}),
    ],
)
def test_resume_draws_the_same_noise(tmp_path, mode, server, overrides):
    """Interrupted after a checkpoint with updates in flight and resumed: the tables equal the
    uninterrupted run's (the noise of every release and the counts come back)."""
    sc = _dp(mode, server, rounds=6, **overrides)
    full = Run(sc, tmp_path / "full").execute().rounds
    interrupt_at(Run(sc, tmp_path / "cut"), 3)
    resumed = resume_run(tmp_path / "cut").rounds
    wall = [c for c in full.columns if c.startswith("wall")]
    pd.testing.assert_frame_equal(full.drop(columns=wall), resumed.drop(columns=wall))
    assert full.dp_epsilon.is_monotonic_increasing and full.dp_epsilon.iloc[-1] > 0
    if overrides:
        assert full.dp_clip_norm.nunique() > 1  # C moved: its state was restored
