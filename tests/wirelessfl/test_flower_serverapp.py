"""Our simulator and SOFT with TSFA as a Flower ServerApp, training on Flower ClientApps in
Flower's simulation engine (Ray), against the same scenario run by our own learner: the same
global state and the same tables, with Rayleigh fading, O^t moving with the queue and a
deadline that cuts a slow client every round (its error memory grows on its node all the
same). Only ``wall_s`` differs, and ``algo.memory_norm``: the error memory never leaves a
Flower client."""

from __future__ import annotations

import math
import os

import pytest
from scenario_helpers import digits_scenario

pytest.importorskip("flwr")
pytest.importorskip("ray")
torch = pytest.importorskip("torch")

from flwr.simulation import run_simulation  # noqa: E402

from wirelessfl.bridges.flower_clientapp import client_app  # noqa: E402
from wirelessfl.bridges.flower_serverapp import server_app  # noqa: E402
from wirelessfl.results import load  # noqa: E402
from wirelessfl.sim import run_scenario  # noqa: E402

N_CLIENTS, ROUNDS = 5, 3
#: One CPU for Ray and for each ClientApp: one actor, torch on one thread (as the reference).
BACKEND = {"client_resources": {"num_cpus": 1}, "init_args": {"num_cpus": 1}}
ONLY_HERE = ["wall_s", "algo.memory_norm"]

pytestmark = [
    pytest.mark.slow,  # ~40 s on a 2-core CPU: Ray, and torch loaded by the ClientApp's actor
    pytest.mark.filterwarnings("ignore:Tip. In future versions of Ray:FutureWarning"),
]


def _scenario():
    return digits_scenario(
        n_clients=N_CLIENTS,
        n_scheduled=4,
        rounds=ROUNDS,
        eval_every=1,
        controller={"name": "tsfa", "V": 1.0e-4, "d_th_s": 0.05, "r_max": 16},
        devices={"kind": "listed", "per_client_flops_per_s": [1e9, 1e9, 1e9, 2e7, 1e9]},
        faults={"deadline_s": 0.25},
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    ray = pytest.importorskip("ray")
    folder = tmp_path_factory.mktemp("flower_serverapp")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    pythonpath = os.environ.get("PYTHONPATH")  # Flower's Ray backend overwrites it for good
    try:
        ours = run_scenario(_scenario(), folder / "ours")
        run_simulation(
            server_app=server_app(_scenario(), folder / "flower", timeout_s=300),
            client_app=client_app(),
            num_supernodes=N_CLIENTS,
            backend_config=BACKEND,
        )
    finally:
        torch.set_num_threads(threads)
        if ray.is_initialized():
            ray.shutdown()
        if pythonpath is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = pythonpath
    return ours, load(folder / "flower")


def test_the_flower_run_has_our_tables(runs):
    ours, flower = runs
    rounds = ours.rounds
    assert rounds.sparsification.nunique() == ROUNDS  # TSFA's O^t follows the fading and queue
    assert (rounds.n_stragglers > 0).all() and rounds.n_arrived.sum() > 0
    same = [c for c in rounds.columns if c not in ONLY_HERE]
    assert flower.rounds[same].equals(rounds[same])
    assert flower.clients.equals(ours.clients)
    assert flower.events.equals(ours.events)
    assert flower.rounds["algo.memory_norm"].isna().all()
    assert rounds["algo.memory_norm"].iloc[1:].gt(0).all()


def test_the_flower_run_has_our_global_state(runs):
    ours, flower = runs
    saved = [
        torch.load(run.path / "checkpoints" / str(ROUNDS) / "learner.pt", weights_only=True)
        for run in (ours, flower)
    ]
    mine, theirs = (s["global"] for s in saved)
    assert sorted(mine) == sorted(theirs)
    for name in mine:
        assert torch.equal(mine[name], theirs[name]), name
    assert theirs and not math.isnan(float(flower.rounds.accuracy.iloc[-1]))
