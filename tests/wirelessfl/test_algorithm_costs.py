"""Every algorithm under every controller plans with its own cost model: on a deterministic
channel the delay a controller plans equals the D^t the simulator measures, and every
algorithm x controller x compression stage either runs network-only or is refused in one line.

The channel is an SNR trace (each client its own SNR each round, no fading), so a controller
knows the channel exactly and any gap between the planned and the measured delay is a gap
between what the controller costed and what the algorithm sent.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.errors import ConfigError, UserError
from wirelessfl.registries import ALGORITHMS, CONTROLLERS
from wirelessfl.sim.runner import run_scenario

CONTROLLER_NAMES = ["tsfa", "osfa", "fixed", "sketch"]
STAGES = ["none", "soft", "topk", "random", "structured"]
ROUNDS = 6
N, K = 12, 4

#: Settings an algorithm needs to run network-only here (H2Tune's L_g has no model to read).
STRATEGY = {
    "h2tune": {"global_layers": 2, "global_rank": 4},
    "fslora": {"ratio_choices": [0.5, 1.0]},
}
#: The algorithms whose payload their settings fix (FLoRAL's and H2Tune's families).
FIXED_PAYLOAD_ALGORITHMS = (
    "floral",
    "floral_local",
    "ensemble",
    "fedavg_full",
    "h2tune",
    "h2tune_local",
    "fllm",
    "h2tune_hetlora",
)
#: (algorithm, controller) pairs refused, and a phrase of the one-line reason.
NO_KNOB = "has no such knob"
REFUSED_CONTROLLERS = {
    (name, ctl): NO_KNOB for name in FIXED_PAYLOAD_ALGORITHMS for ctl in ("tsfa", "osfa", "sketch")
}


def _trace(tmp_path) -> str:
    """A (rounds, N) SNR trace in dB: each client its own level, moving from round to round."""
    rng = np.random.default_rng(7)
    db = rng.uniform(-3.0, 25.0, (ROUNDS, N))
    path = tmp_path / "snr.npy"
    np.save(path, db)
    return str(path)


def _scenario(tmp_path, algorithm: str, controller: str, **extra) -> dict:
    """A network-only scenario; D_th tight enough that the queue moves and decisions vary."""
    data = {
        "name": f"{algorithm}-{controller}",
        "n_clients": N,
        "n_scheduled": K,
        "rounds": ROUNDS,
        "eval_every": ROUNDS,
        "channel": {"snr_trace": _trace(tmp_path), "bandwidth_hz": 1.0e6},
        "devices": {"include_compute": False},
        "controller": {
            "name": controller,
            "rank": 8,
            "r_max": 8,
            "d_th_s": 0.05,
            "V": 1.0e-6,
            "o_min": 0.1,
            "sparsification": 0.4,
            "k_min": 1,
        },
        "algorithm": {"name": algorithm},
        "strategy": STRATEGY,
        "learner": {
            "kind": "surrogate",
            "shape": {"layer_shapes": [[64, 32], [48, 48], [32, 96]], "base_params": 10_000},
        },
        "output": {"events": True, "clients": True},
    }
    for key, value in extra.items():
        section, _, leaf = key.partition(".")
        data.setdefault(section, {})[leaf] = value
    return data


def _run(tmp_path, data: dict):
    scenario = scenario_from_dict(data)
    return run_scenario(scenario, tmp_path / "run", progress=False)


def _one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text and "Traceback" not in text
    return text


@pytest.mark.parametrize("controller", CONTROLLER_NAMES)
@pytest.mark.parametrize("algorithm", list(ALGORITHMS.names()))
def test_planned_delay_is_the_measured_one(tmp_path, algorithm: str, controller: str) -> None:
    assert set(CONTROLLERS.names()) >= set(CONTROLLER_NAMES)
    data = _scenario(tmp_path, algorithm, controller)
    refused = REFUSED_CONTROLLERS.get((algorithm, controller))
    if refused is not None:
        with pytest.raises((ConfigError, UserError)) as err:
            _run(tmp_path, data)
        assert refused in _one_line(err.value)
        return
    rounds = _run(tmp_path, data).rounds
    assert len(rounds) == ROUNDS
    measured, planned = rounds["delay_s"].to_numpy(), rounds["planned_delay_s"].to_numpy()
    np.testing.assert_allclose(planned, measured, rtol=1e-9, atol=0.0)
    assert (measured > 0).all() or algorithm == "h2tune_local"  # something was sent


@pytest.mark.parametrize("algorithm", ["soft", "fedit", "hetlora", "fslora", "ffa_lora"])
def test_index_bits_are_planned_too(tmp_path, algorithm: str) -> None:
    data = _scenario(tmp_path, algorithm, "osfa", **{"payload.index_overhead": True})
    data["compression"] = {"sparsifier": "topk"}
    rounds = _run(tmp_path, data).rounds
    assert rounds["index_bits"].sum() > 0
    np.testing.assert_allclose(rounds["planned_delay_s"], rounds["delay_s"], rtol=1e-9)


def _stage_refusal(algorithm: str, stage: str) -> str | None:
    """The phrase of the one-line refusal of ``stage`` for ``algorithm``, or None."""
    if stage == "none":
        return None
    if algorithm in ("floral", "floral_local", "ensemble", "fedavg_full") or algorithm in (
        "h2tune",
        "h2tune_local",
        "fllm",
        "h2tune_hetlora",
    ):
        return "cannot take a compression stage"
    if stage == "soft" and algorithm == "ffa_lora":
        return "sends B alone"
    if algorithm in ("flexlora", "fedstack"):
        return "sends its trained factors"  # error feedback on by default
    return None


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("controller", CONTROLLER_NAMES)
@pytest.mark.parametrize("algorithm", list(ALGORITHMS.names()))
def test_every_combination_runs_or_is_refused_in_one_line(
    tmp_path, algorithm: str, controller: str, stage: str
) -> None:
    data = _scenario(tmp_path, algorithm, controller)
    data["rounds"] = 3
    data["compression"] = {"sparsifier": stage}
    reasons = [REFUSED_CONTROLLERS.get((algorithm, controller)), _stage_refusal(algorithm, stage)]
    expected = [r for r in reasons if r is not None]
    if expected:
        with pytest.raises((ConfigError, UserError)) as err:
            _run(tmp_path, data)
        assert any(r in _one_line(err.value) for r in expected)
        return
    result = _run(tmp_path, data)
    rounds = result.rounds
    assert len(rounds) == 3
    np.testing.assert_allclose(rounds["planned_delay_s"], rounds["delay_s"], rtol=1e-9)
    if stage != "none" and controller == "fixed":
        # the stage sends the fraction the controller set (controller.sparsification), or the
        # algorithm's own fixed one for its own sparsifier (fedit_topk: top-k at 0.5)
        own = algorithm == "fedit_topk" and stage == "topk"
        sent = result.clients[result.clients["status"] == "arrived"]
        assert (sent["ratio"] == (0.5 if own else 0.4)).all()


#: Under the paper's Rayleigh cell: TSFA for every algorithm with a knob.
RAYLEIGH = [
    ("soft", "tsfa"),
    ("fedit", "tsfa"),
    ("fedit_topk", "tsfa"),
    ("hetlora", "tsfa"),
    ("flexlora", "tsfa"),
    ("fedstack", "tsfa"),
    ("ffa_lora", "tsfa"),
    ("fslora", "tsfa"),
]


@pytest.mark.parametrize(("algorithm", "controller"), RAYLEIGH)
def test_every_algorithm_meets_d_th_on_average_under_rayleigh(
    tmp_path, algorithm: str, controller: str
) -> None:
    """The ``paper`` scenario (N = 100, K = 10, unit-mean Rayleigh, D_th = 2 s), 2,000 rounds:
    the time-average D^t stays within 5 % of D_th (at or below it), over the run and over its
    second half, and the queue is bounded: it drains back to near 0 (before this planning, FedIT
    ended at Q = 11,050 s, growing every round)."""
    from wirelessfl.config.loader import load_scenario

    scenario = load_scenario(
        "paper",
        [
            "rounds=2000",
            f"algorithm.name={algorithm}",
            f"controller.name={controller}",
            "output.events=false",
        ],
    )
    rounds = run_scenario(scenario, tmp_path / "run", progress=False).rounds
    d_th = scenario.controller.d_th_s
    assert rounds["delay_s"].mean() <= 1.05 * d_th
    assert rounds["delay_s"][1000:].mean() <= 1.05 * d_th
    assert rounds["queue_after"].iloc[-1] <= 10 * d_th


#: Real training (tiny_mlp on digits) of every algorithm on the runtime's peft model, under
#: the controllers that decide its knobs; the cost model must size the real messages exactly.
TRAINED = ["soft", "fedit", "fedit_topk", "fslora", "hetlora", "flexlora", "fedstack", "ffa_lora"]


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("controller", ["osfa", "fixed", "sketch"])
@pytest.mark.parametrize("algorithm", TRAINED)
def test_real_messages_are_what_the_controller_planned(
    tmp_path, algorithm: str, controller: str
) -> None:
    """With real training the planned delay is the measured one too: the cost model sizes the
    messages the algorithm really sends (its stage and index bits included)."""
    pytest.importorskip("torch")
    from scenario_helpers import digits_scenario

    trace = np.random.default_rng(3).uniform(0.0, 20.0, (3, 8))
    np.save(tmp_path / "snr.npy", trace)
    overrides = {
        "algorithm.name": algorithm,
        "rounds": 3,
        "eval_every": 3,
        "channel": {"bandwidth_hz": 1.0e6, "snr_trace": str(tmp_path / "snr.npy")},
        "devices.include_compute": False,
        "controller": {
            "name": controller,
            "rank": 4,
            "r_max": 4,
            "d_th_s": 0.002,
            "V": 1e-6,
            "sparsification": 0.5,
        },
        "payload.index_overhead": True,
        "strategy": {"fslora": {"ratio_choices": [0.5, 1.0]}, "hetlora": {"sketch_ratio": 0.5}},
    }
    if algorithm in ("fedit", "hetlora", "ffa_lora", "fslora"):
        overrides["compression"] = {"sparsifier": "topk"}  # a stage that follows the controller
    if algorithm in ("flexlora", "fedstack"):
        overrides["compression"] = {"sparsifier": "random", "error_feedback": False}
    rounds = run_scenario(digits_scenario(**overrides), tmp_path / "run", progress=False).rounds
    np.testing.assert_allclose(rounds["planned_delay_s"], rounds["delay_s"], rtol=1e-9)
    assert (rounds["delay_s"] > 0).all()


def _small_group(clients: int, rank: int, dataset: str) -> dict:
    return {
        "clients": clients,
        "model": "bert_random",
        "model_options": {"n_layers": 2, "hidden": 32, "heads": 2},
        "dataset": dataset,
        "dataset_options": {"max_train": 24, "max_test": 8, "max_length": 16},
        "rank": rank,
    }


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("algorithm", FIXED_PAYLOAD_ALGORITHMS)
def test_fixed_payloads_of_built_models_are_what_the_controller_planned(
    tmp_path, algorithm: str
) -> None:
    """FLoRAL's and H2Tune's families: the sizes their cost models take from the models they
    built are the messages they send (the fixed controller; payloads differ per client for
    H2Tune's baselines on groups of different models)."""
    pytest.importorskip("torch")
    from wirelessfl.config import load_scenario

    n = 4 if algorithm.startswith(("h2tune", "fllm")) else 10
    trace = np.random.default_rng(4).uniform(0.0, 20.0, (2, n))
    np.save(tmp_path / "snr.npy", trace)
    channel = [f"channel.snr_trace={tmp_path / 'snr.npy'}", "channel.mean_snr_db=null"]
    common = ["rounds=2", "eval_every=2", "devices.include_compute=false", *channel]
    if algorithm.startswith(("floral", "ensemble", "fedavg")):
        scenario = load_scenario(
            "floral/synthetic_linear", [f"algorithm.name={algorithm}", "n_clients=10", *common]
        )
    else:
        groups = [
            _small_group(2, 2, "rotten_tomatoes"),
            _small_group(2, 4, "chatterbot_topic"),
        ]
        scenario = load_scenario(
            "h2tune/hybrid",
            [
                f"algorithm.name={algorithm}",
                "n_clients=4",
                "n_scheduled=4",
                f"strategy.{algorithm}.groups={json.dumps(groups)}",
                "strategy.h2tune.global_rank=4",
                "learner.dataset_options.max_test=8",
                *common,
            ],
        )
    rounds = run_scenario(scenario, tmp_path / "run", progress=False).rounds
    np.testing.assert_allclose(rounds["planned_delay_s"], rounds["delay_s"], rtol=1e-9)
    assert rounds["bound"].isna().all()  # no bound is known for these payloads
