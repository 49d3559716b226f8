"""Our simulator and SOFT with TSFA as the Flower App of ``examples/flower_app``, launched the
way Flower 1.42 launches an app: ``flwr run`` against a SuperLink in simulation mode (started
here, in its own process), the scenario and the results folder in ``--run-config``, five
ClientApps in Flower's simulation engine (Ray). Against the same scenario run by our own
learner: the same global state and the same tables, with Rayleigh fading, O^t moving with the
queue and a deadline that cuts a slow client every round (its error memory grows on its node
all the same). Only ``wall_s`` differs, and ``algo.memory_norm``: the error memory never leaves
a Flower client. A bad run config fails the run with its one-line reason."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from scenario_helpers import digits_scenario

pytest.importorskip("flwr")
pytest.importorskip("ray")
torch = pytest.importorskip("torch")

import wirelessfl  # noqa: E402
from wirelessfl.config.loader import scenario_yaml  # noqa: E402
from wirelessfl.results import load  # noqa: E402
from wirelessfl.sim import run_scenario  # noqa: E402

N_CLIENTS, ROUNDS = 5, 3
APP = Path(__file__).resolve().parents[2] / "examples" / "flower_app"
BIN = Path(sys.executable).parent  # flwr, flower-superlink and the processes they start
#: N nodes; one CPU for Ray and for each ClientApp: one actor (as the reference).
FEDERATION = f"num-supernodes={N_CLIENTS} client-resources-num-cpus=1 init-args-num-cpus=1"
CONNECTION = "test"  # the SuperLink connection in the test's Flower config
ONLY_HERE = ["wall_s", "algo.memory_norm"]

pytestmark = pytest.mark.slow  # ~60 s on a 2-core CPU: a SuperLink, Ray, torch in each actor


def _scenario(rounds: int = ROUNDS):
    return digits_scenario(
        n_clients=N_CLIENTS,
        n_scheduled=4,
        rounds=rounds,
        eval_every=1,
        controller={"name": "tsfa", "V": 1.0e-4, "d_th_s": 0.05, "r_max": 16},
        devices={"kind": "listed", "per_client_flops_per_s": [1e9, 1e9, 1e9, 2e7, 1e9]},
        faults={"deadline_s": 0.25},
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _superlink(home: Path):
    """A SuperLink in simulation mode on a free port, with ``home`` as its Flower home and a
    Flower config naming it :data:`CONNECTION`; yields the environment for ``flwr``."""
    port = _free_port()
    home.mkdir()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "{CONNECTION}"\n\n'
        f'[superlink.{CONNECTION}]\naddress = "127.0.0.1:{port}"\ninsecure = true\n'
    )
    env = {
        **os.environ,
        "FLWR_HOME": str(home),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        # the code under test, wherever the SuperLink's processes start
        "PYTHONPATH": str(Path(wirelessfl.__file__).parents[1]),
        "FLWR_DISABLE_UPDATE_CHECK": "1",  # no look-up of newer flwr releases
        "OMP_NUM_THREADS": "1",  # torch on one thread in the ServerApp and the actor, as ours
    }
    command = [BIN / "flower-superlink", "--insecure", "--simulation", "--isolation"]
    command += ["subprocess", "--host", "127.0.0.1", "--port", str(port)]
    with (home / "superlink.log").open("w") as log:
        link = subprocess.Popen(
            command, env=env, cwd=home, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_until_healthy(link, port, home / "superlink.log")
        yield env
    finally:
        os.killpg(link.pid, signal.SIGTERM)  # the SuperLink and what it started
        try:
            link.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(link.pid, signal.SIGKILL)
            link.wait()


def _wait_until_healthy(link: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if link.poll() is not None:
            pytest.fail(f"flower-superlink exited with {link.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    pytest.fail(f"flower-superlink not healthy within 60 s:\n{log.read_text()}")


def _flwr_run(env: dict[str, str], run_config: dict[str, object]) -> dict[str, object]:
    """``flwr run examples/flower_app`` with ``run_config``, to its end; the run's record as
    ``flwr ls --format json`` gives it (``status``, ``status-details``)."""
    items = " ".join(f"{k}={_toml(v)}" for k, v in run_config.items())
    command = [BIN / "flwr", "run", APP, CONNECTION, "--stream"]
    command += ["--federation-config", FEDERATION, "--run-config", items]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400)
    started = re.search(r"Successfully started run (\d+)", done.stdout)
    assert done.returncode == 0 and started, done.stdout + done.stderr
    listing = [BIN / "flwr", "ls", CONNECTION, "--run-id", started[1], "--format", "json"]
    shown = subprocess.run(listing, env=env, capture_output=True, text=True, timeout=60)
    (record,) = json.loads(shown.stdout)["runs"]
    return {**record, "log": done.stdout + done.stderr}


def _toml(value: object) -> str:
    """A run-config value as ``--run-config`` takes it: TOML (a string in single quotes)."""
    return repr(value) if isinstance(value, float) else f"'{value}'"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flower_serverapp")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ours = run_scenario(_scenario(), folder / "ours")
    finally:
        torch.set_num_threads(threads)
    # The file has 2 more rounds; the run config's `set` brings them back to ROUNDS.
    scenario_file = folder / "scenario.yaml"
    scenario_file.write_text(scenario_yaml(_scenario(rounds=ROUNDS + 2)))
    with _superlink(folder / "flwr-home") as env:
        flower = _flwr_run(
            env,
            {
                "scenario": scenario_file,
                "set": f"rounds={ROUNDS}",
                "out-dir": folder / "flower",
                "timeout-s": 300.0,
            },
        )
        refused = _flwr_run(env, {"scenario": "no_such_scenario", "out-dir": folder / "bad"})
    assert flower["status"] == "finished:completed", flower["log"]
    return ours, load(folder / "flower"), refused


def test_the_flower_run_has_our_tables(runs):
    ours, flower, _ = runs
    rounds = ours.rounds
    assert len(flower.rounds) == ROUNDS
    assert rounds.sparsification.nunique() == ROUNDS  # TSFA's O^t follows the fading and queue
    assert (rounds.n_stragglers > 0).all() and rounds.n_arrived.sum() > 0
    same = [c for c in rounds.columns if c not in ONLY_HERE]
    assert flower.rounds[same].equals(rounds[same])
    assert flower.clients.equals(ours.clients)
    assert flower.events.equals(ours.events)
    assert flower.rounds["algo.memory_norm"].isna().all()
    assert rounds["algo.memory_norm"].iloc[1:].gt(0).all()


def test_the_flower_run_has_our_global_state(runs):
    ours, flower, _ = runs
    saved = [
        torch.load(run.path / "checkpoints" / str(ROUNDS) / "learner.pt", weights_only=True)
        for run in (ours, flower)
    ]
    mine, theirs = (s["global"] for s in saved)
    assert sorted(mine) == sorted(theirs)
    for name in mine:
        assert torch.equal(mine[name], theirs[name]), name
    assert theirs and not math.isnan(float(flower.rounds.accuracy.iloc[-1]))


def test_a_bad_run_config_fails_the_run_in_one_line(runs):
    *_, refused = runs
    assert refused["status"] == "finished:failed", refused["log"]
    details = str(refused["status-details"])
    assert "\n" not in details
    assert details.endswith(
        "run config scenario: 'no_such_scenario' is neither a shipped scenario's name "
        "(wirelessfl scenarios lists them) nor an absolute path; a relative path would be read "
        "in the SuperLink's folder"
    )
