"""Server modes and staleness functions defined outside the package
(``registries.SERVER_MODES``, ``registries.STALENESS``) run on the event-driven engine with no
other change: an exponential staleness s(tau) = exp(-a tau) under FedAsync gives each taken
update the weight alpha exp(-a tau) in ``clients.csv``; a mode that aggregates every two
arrivals with equal weights 1/2 (FedBuff's step without staleness) aggregates two updates at a
time, at the weights it states; only the keys it reads label its runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.config.scenario import Scenario
from wirelessfl.config.schema import applies
from wirelessfl.registries import SERVER_MODES, STALENESS
from wirelessfl.servers import ServerMode
from wirelessfl.sim.runner import run_scenario


def exponential(tau: int, a: float, b: float) -> float:
    return math.exp(-a * tau)


class Pairs(ServerMode):
    """Aggregate every two arrivals, each at weight 1/2, unmixed."""

    NAME = "pairs_test"
    READS = ("concurrency",)

    def updates_per_aggregation(self) -> int:
        return 2

    def aggregates_on_arrival(self, n_buffered: int) -> bool:
        return n_buffered >= 2

    def weights(self, taus):
        return [1.0 / len(taus)] * len(taus), 0.0


@pytest.fixture
def plugins():
    STALENESS.register("exponential_test", exponential)
    SERVER_MODES.register(Pairs.NAME, Pairs)
    yield
    STALENESS.unregister("exponential_test")
    SERVER_MODES.unregister(Pairs.NAME)


def _scenario(server: dict) -> dict:
    return {
        "name": "server_plugin",
        "seed": 5,
        "n_clients": 10,
        "n_scheduled": 4,
        "rounds": 12,
        "channel": {"bandwidth_hz": 1.0e6, "mean_snr_db": 10.0},
        "devices": {"flops_per_s": 1.0e10},
        "controller": {"name": "fixed", "rank": 4, "r_max": 8, "sparsification": 0.5},
        "algorithm": {"name": "fedit"},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[64, 32]], "base_params": 0}},
        "output": {"clients": True},
        "server": server,
    }


def test_a_registered_staleness_function_weights_fedasyncs_updates(tmp_path, plugins):
    server = {"mode": "async", "concurrency": 3, "alpha": 0.5, "staleness": "exponential_test"}
    server["staleness_a"] = 0.7
    clients = run_scenario(scenario_from_dict(_scenario(server)), tmp_path).clients
    taken = clients[clients.status == "arrived"]
    assert (taken.staleness > 0).any()  # stale updates happen, so the function is exercised
    np.testing.assert_allclose(taken.weight, 0.5 * np.exp(-0.7 * taken.staleness), rtol=1e-12)


def test_a_registered_server_mode_aggregates_as_it_says(tmp_path, plugins):
    result = run_scenario(
        scenario_from_dict(_scenario({"mode": "pairs_test", "concurrency": 3})), tmp_path
    )
    assert (result.rounds.n_arrived == 2).all()
    taken = result.clients[result.clients.status == "arrived"]
    assert (taken.weight == 0.5).all() and len(taken) == 2 * 12


def test_only_the_keys_a_registered_mode_reads_label_its_runs(plugins):
    config = {"server": {"mode": "pairs_test", "concurrency": 3, "alpha": 0.3}}
    assert applies(Scenario, config, "server.concurrency")
    assert not applies(Scenario, config, "server.alpha")  # FedAsync's, not read here
    assert applies(Scenario, {"server": {"mode": "async"}}, "server.alpha")
