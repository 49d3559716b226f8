"""Composition over the wireless side: algorithm x controller x compression stage x uplink x
server mode x learner kind. Every combination either runs, with the uplink's effect visible
in its result, or is refused in one line (docs/architecture.md, "Composition").

- Network-only (the surrogate learner), the whole product of algorithm, controller, stage,
  uplink (every registered one) and server mode: a run over the air reports an aggregation
  MSE > 0 and its bound sees it (a higher loss than the same run over FDMA), a run over NOMA
  lasts other times than FDMA's; a refusal is one line naming a key.
  The combinations the docs promise (the single-update algorithms under the fixed, OSFA and
  TSFA controllers, over FDMA in every server mode and over the air in synchronous rounds)
  must run.
- Real learners: ``lora`` (FedIT on the digits) over the air moves the parameters off FDMA's
  exact aggregate (MSE > 0, the global state differs, with the same clients and draws);
  ``flower`` clients, which have no over-the-air sum, are refused at load in one line.
"""

from __future__ import annotations

import itertools

import pytest
from scenario_helpers import digits_scenario

from channels.nr_bler import sionna_version
from wirelessfl.config.controller import controller_settings
from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.errors import ConfigError, UserError
from wirelessfl.registries import ALGORITHMS
from wirelessfl.registries import CONTROLLERS as CONTROLLER_REGISTRY
from wirelessfl.registries import UPLINKS as UPLINK_REGISTRY
from wirelessfl.sim.runner import run_scenario

CONTROLLERS = ["tsfa", "osfa", "fixed", "sketch"]
STAGES = ["none", "soft", "topk", "random", "structured"]
#: every built-in uplink but ns-3's, whose cells need the clients' positions (this network
#: has a mean SNR; tests/wirelessfl/test_ns3_uplink.py runs and refuses them)
UPLINKS = [u for u in UPLINK_REGISTRY.names() if u not in ("ns3_lte", "ns3_wifi")]
SERVERS = {
    "sync": {"mode": "sync"},
    "async": {"mode": "async", "concurrency": 3},
    "buffered": {"mode": "buffered", "concurrency": 4, "buffer_size": 2},
    "semi_sync": {"mode": "semi_sync", "concurrency": 4, "deadline_s": 0.5},
}
#: the algorithms whose aggregate is a weighted sum of single updates
SINGLE = [n for n in ALGORITHMS.names() if ALGORITHMS.load(n).CostModel.SINGLE_UPDATES]
#: keys a refusal line names (what this product varies, and what they need)
KEYS = ("channel.uplink", "server.", "controller", "compression.", "algorithm", "strategy.")
ROUNDS = 3
#: the NR uplink's carrier: an FR1 channel bandwidth (11 PRBs at 30 kHz)
NR_HZ = 5.0e6


def _network(algorithm: str, controller: str, stage: str, uplink: str, server: str) -> dict:
    return {
        "name": "compose",
        "seed": 2,
        "n_clients": 10,
        "n_scheduled": 4,
        "rounds": ROUNDS,
        "eval_every": ROUNDS,
        "channel": {
            "bandwidth_hz": NR_HZ if uplink == "nr" else 1.0e6,
            "mean_snr_db": 10.0,
            "uplink": uplink,
        },
        "devices": {"flops_per_s": 1.0e11},  # compute 9 ms, below D_th
        "controller": {
            "name": controller,
            "rank": 8,
            "r_max": 8,
            "d_th_s": 0.05,
            "sparsification": 0.4,
        },
        "algorithm": {"name": algorithm},
        "strategy": {
            "h2tune": {"global_layers": 2, "global_rank": 4},
            "fslora": {"ratio_choices": [0.5, 1.0]},
        },
        "compression": {"sparsifier": stage},
        "server": SERVERS[server],
        "constants": {"S": 2.0, "eta": 0.1, "E": 5, "G": 2.0},  # the air term is visible
        "learner": {
            "kind": "surrogate",
            "shape": {"layer_shapes": [[64, 32], [48, 48], [32, 96]], "base_params": 10_000},
        },
    }


def _must_run(algorithm: str, controller: str, stage: str, uplink: str, server: str) -> bool:
    promised = algorithm in SINGLE and controller in ("fixed", "osfa", "tsfa") and stage == "none"
    # what the controller needs of the uplink, the uplink offers (noma: no offline average)
    link = UPLINK_REGISTRY.load(uplink)
    needs = CONTROLLER_REGISTRY.load(controller).uplink_needs(controller_settings(controller))
    planned = needs <= link.OFFERS
    installed = uplink != "nr" or sionna_version() is not None  # the nr extra's tables
    return promised and planned and installed and (link.EVENT_DRIVEN or server == "sync")


def _run_or_refusal(tmp_path, data: dict):
    try:
        return run_scenario(scenario_from_dict(data), tmp_path, progress=False), None
    except (ConfigError, UserError) as err:
        return None, str(err)


@pytest.mark.parametrize(("stage", "server"), list(itertools.product(STAGES, SERVERS)))
def test_every_network_only_combination_runs_or_is_refused_in_one_line(tmp_path, stage, server):
    ran = 0
    for algorithm, controller in itertools.product(ALGORITHMS.names(), CONTROLLERS):
        losses, delays = {}, {}
        for uplink in UPLINKS:
            where = tmp_path / f"{algorithm}-{controller}-{uplink}"
            combo = (algorithm, controller, stage, uplink, server)
            result, refusal = _run_or_refusal(where, _network(*combo))
            if refusal is not None:
                assert "\n" not in refusal and "Traceback" not in refusal, (combo, refusal)
                assert any(key in refusal for key in KEYS), (combo, refusal)
                assert not _must_run(*combo), (combo, refusal)
                continue
            rounds = result.rounds
            assert len(rounds) == ROUNDS and rounds.loss.notna().all(), combo
            losses[uplink] = rounds.loss.to_numpy()
            delays[uplink] = rounds.delay_s.to_numpy()
            if uplink == "aircomp":
                assert (rounds.aircomp_mse > 0).all(), combo
            ran += 1
        if set(losses) == set(UPLINKS) and controller == "fixed":
            # the same clients and plans: the analog sum's noise raises the bound's loss
            assert (losses["aircomp"] >= losses["fdma"]).all(), (algorithm, stage, server)
            assert (losses["aircomp"] > losses["fdma"]).any(), (algorithm, stage, server)
            # NOMA's SIC rates on the whole band, not FDMA's shares, set its upload times
            assert not (delays["noma"] == delays["fdma"]).any(), (algorithm, stage, server)
    assert ran > 0


# ---- real learners ---------------------------------------------------------------------------
def _digits(uplink: str, server: str, stage: str):
    return digits_scenario(
        rounds=2,
        eval_every=2,
        **{
            "algorithm.name": "fedit",
            "controller.sparsification": 1.0 if stage == "none" else 0.5,
            "compression.sparsifier": stage,
            "channel.uplink": uplink,
            **{f"server.{key}": value for key, value in SERVERS[server].items()},
        },
    )


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("stage", ["none", "topk"])
def test_real_training_over_the_air_moves_the_parameters_off_fdmas_sum(tmp_path, stage):
    torch = pytest.importorskip("torch")
    from wirelessfl.learners import make_learner

    states, mse = {}, {}
    analog = ("fdma", "aircomp")  # the digital sum and the analog one (noma's is digital)
    for uplink in analog:
        for server in SERVERS:
            try:
                sc = _digits(uplink, server, stage)
                learner = make_learner(sc)
                result = run_scenario(sc, tmp_path / f"{uplink}-{server}", learner=learner)
            except (ConfigError, UserError) as err:
                text = str(err)
                assert "\n" not in text and "server.mode" in text, (uplink, server, text)
                assert uplink == "aircomp" and server != "sync", (uplink, server, text)
                continue
            assert result.rounds.loss.notna().all()
            if server == "sync":
                states[uplink] = {n: v.detach().clone() for n, v in learner.global_state.items()}
                mse[uplink] = result.rounds.get("aircomp_mse")
    assert set(states) == set(analog)
    assert (mse["aircomp"] > 0).all()
    moved = max(
        float((states["aircomp"][n] - states["fdma"][n]).abs().max()) for n in states["fdma"]
    )
    assert moved > 1e-4  # the same clients, draws and plans: only the analog sum differs
    assert all(torch.isfinite(v).all() for v in states["aircomp"].values())


@pytest.mark.parametrize("server", list(SERVERS))
def test_flower_clients_over_the_air_are_refused_at_load(server):
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(
            {
                "n_clients": 4,
                "n_scheduled": 2,
                "channel": {"uplink": "aircomp"},
                "server": SERVERS[server],
                "controller": {"name": "fixed"},
                "learner": {"kind": "flower", "client_fn": "any_module:client_fn"},
            }
        )
    text = str(err.value)
    assert "\n" not in text and "channel.uplink: aircomp" in text and "no over-the-air sum" in text
