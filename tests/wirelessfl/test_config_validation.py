"""The scenario validator: one clear line naming the key and the accepted range."""

from __future__ import annotations

import subprocess
import sys

import pytest

from wirelessfl.config import load_scenario, scenario_from_dict
from wirelessfl.errors import ConfigError, UserError


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"n_clientz": 3}, "n_clientz: unknown key"),
        ({"n_clients": "many"}, "n_clients: expected an integer"),
        ({"n_clients": 0}, "n_clients: must be >= 1"),
        ({"n_clients": 5, "n_scheduled": 6}, "n_scheduled: must be <= n_clients (5)"),
        ({"channel": {"bandwidth_hz": -1.0}}, "channel.bandwidth_hz: must be > 0"),
        ({"channel": {"fading": {"model": "nakagami"}}}, "channel.fading.model: must be one of"),
        ({"channel": {"d_min_m": 600.0}}, "channel.d_min_m: must be < d_max_m"),
        ({"controller": {"o_min": 1.0}}, "controller.o_min: must be > 0.0 and < 1.0"),
        ({"controller": {"rank": 0}}, "controller.rank: must be >= 1"),
        ({"controller": {"rank": 80, "r_max": 64}}, "controller.rank: must be <= controller.r_max"),
        ({"controller": {"V": -1.0}}, "controller.V: must be >= 0"),
        ({"controller": {"d_th_s": 0}}, "controller.d_th_s: must be > 0"),
        ({"faults": {"dropout_prob": 1.5}}, "faults.dropout_prob: must be >= 0.0 and < 1.0"),
        ({"strategy": {"zeta": -0.1}}, "strategy.zeta: must be >= 0"),
        ({"learner": {"zeta": 0.001}}, "learner.zeta: moved to strategy.zeta: "),
        ({"channel": "wide"}, "channel: expected a table"),
        ({"controller": {"method": "magic"}}, "controller.method: must be one of 'exact', 'cvxpy'"),
        # names checked against the registries, at load, accepted names listed
        ({"learner": {"kind": "oracle"}}, "learner.kind: must be one of 'surrogate', 'lora'"),
        ({"learner": {"model": "resnet999"}}, "learner.model: must be one of 'tiny_mlp', "),
        ({"learner": {"model": "resnet999"}}, "'hub:<name-or-path>', got 'resnet999'"),
        ({"learner": {"model": "hub:"}}, "learner.model: must be one of"),
        ({"learner": {"dataset": "cifar1000"}}, "learner.dataset: must be one of 'digits', "),
        ({"learner": {"partition": "zipf"}}, "learner.partition: must be one of 'iid', "),
        (
            {"compression": {"sparsifier": "magic"}},
            "compression.sparsifier: must be one of 'soft', ",
        ),
        (
            {"strategy": {"sparsifier": "topk"}},
            "strategy.sparsifier: moved to compression.sparsifier",
        ),
        ({"strategy": {"aggregation": "median"}}, "strategy.aggregation: must be one of 'weight"),
        ({"strategy": {"sparsifiers": "soft"}}, "strategy.sparsifiers: unknown key"),
        ({"algorithm": {"name": "fedmagic"}}, "algorithm.name: must be one of 'soft'"),
        ({"controller": {"name": "greedy"}}, "controller.name: must be one of 'tsfa', 'osfa'"),
        ({"selection": {"method": "lottery"}}, "selection.method: must be one of 'uniform', "),
        (
            {"channel": {"fading": {"model": "nakagami"}}},
            "channel.fading.model: must be one of 'rayleigh', 'gauss_markov', 'rician', 'none', "
            "got",
        ),
    ],
)
def test_bad_values_name_the_key(data, needle):
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(data)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_hub_names_pass_validation():
    sc = scenario_from_dict(
        {"learner": {"kind": "lora", "model": "hub:./my-vit", "dataset": "hub:cifar100"}}
    )
    assert sc.learner.model == "hub:./my-vit" and sc.learner.dataset == "hub:cifar100"


def test_a_name_registered_by_user_code_is_accepted():
    from optim import SELECTION_METHODS

    def first_k(rng, n, k, snr, avg):
        return list(range(k))

    SELECTION_METHODS.register("first_k", first_k)
    try:
        assert scenario_from_dict({"selection": {"method": "first_k"}}).selection.method == (
            "first_k"
        )
    finally:
        SELECTION_METHODS.unregister("first_k")
    with pytest.raises(ConfigError, match="selection.method: must be one of"):
        scenario_from_dict({"selection": {"method": "first_k"}})


def test_overrides_are_parsed_as_numbers():
    sc = scenario_from_dict({}, ["channel.bandwidth_hz=2e6", "rounds=7", "faults.deadline_s=1.5"])
    assert sc.channel.bandwidth_hz == 2e6 and sc.rounds == 7 and sc.faults.deadline_s == 1.5


def test_unknown_scenario_name_lists_shipped():
    with pytest.raises(UserError, match="shipped: .*paper"):
        load_scenario("no_such_scenario")


def test_shipped_scenarios_validate():
    for name in ("default", "paper", "network_only"):
        load_scenario(name)


def test_cli_reports_one_line_without_traceback(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wirelessfl",
            "run",
            "paper",
            "--set",
            "controller.o_min=2",
            "--out",
            str(tmp_path / "x"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == ["wirelessfl: error: controller.o_min: must be > 0.0 and < 1.0, got 2.0"]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("key", ["sketch_ratio", "ratio_choices"])
def test_algorithm_settings_under_algorithm_point_to_strategy(key):
    with pytest.raises(ConfigError) as err:
        scenario_from_dict({"algorithm": {"name": "fslora", key: 0.5}})
    assert str(err.value) == (
        f"algorithm.{key}: use strategy.<algorithm>.{key} (an algorithm's settings are its "
        "table of the strategy section)"
    )


def test_a_sparsifier_under_algorithm_points_to_the_compression_section():
    with pytest.raises(ConfigError) as err:
        scenario_from_dict({"algorithm": {"name": "soft", "sparsifier": "topk"}})
    assert str(err.value) == (
        "algorithm.sparsifier: use compression.sparsifier (the compression stage is a section "
        "of its own)"
    )
