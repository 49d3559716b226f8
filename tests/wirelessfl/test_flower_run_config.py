"""The Flower App's run config (``scenario``, ``set``, ``out-dir``, ``timeout-s``) read into a
validated scenario, a results folder and a timeout, or refused in one line naming the key."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from wirelessfl.bridges.flower_run_config import RUN_CONFIG_KEYS, app_settings
from wirelessfl.config import load_scenario
from wirelessfl.config.loader import scenario_yaml
from wirelessfl.errors import UserError

OUT = "/runs/flower"


def _config(**changes):
    config = {"scenario": "umi_energy", "set": "", "out-dir": OUT, "timeout-s": 600.0}
    config.update({k.replace("_", "-"): v for k, v in changes.items()})
    return config


def test_a_shipped_scenario_with_overrides_split_as_a_shell_splits_them():
    settings = app_settings(
        _config(set="n_clients=5 rounds=4 controller.V=1e-3 name='my run'", timeout_s=30)
    )
    shipped = load_scenario("umi_energy")
    assert (settings.scenario.n_clients, settings.scenario.rounds) == (5, 4)
    assert settings.scenario.controller.V == 1e-3 and settings.scenario.name == "my run"
    assert settings.scenario.channel == shipped.channel  # the rest is the shipped file's
    assert settings.out_dir == Path(OUT)
    assert settings.timeout_s == 30.0 and isinstance(settings.timeout_s, float)


def test_a_scenario_file_by_absolute_path_or_from_home(tmp_path, monkeypatch):
    written = load_scenario("umi_energy", ["name=from-file", "rounds=7"])
    (tmp_path / "mine.yaml").write_text(scenario_yaml(written))
    monkeypatch.setenv("HOME", str(tmp_path))
    for source in (str(tmp_path / "mine.yaml"), "~/mine.yaml"):
        settings = app_settings(_config(scenario=source, out_dir="~/out"))
        assert settings.scenario == written
        assert settings.out_dir == tmp_path / "out"


def test_the_app_pyproject_names_exactly_the_run_config_keys():
    import tomllib

    app = Path(__file__).resolve().parents[2] / "examples" / "flower_app" / "pyproject.toml"
    flwr = tomllib.loads(app.read_text())["tool"]["flwr"]["app"]
    assert list(flwr["config"]) == list(RUN_CONFIG_KEYS)
    assert flwr["components"] == {
        "serverapp": "wirelessfl.bridges.flower_app:serverapp",
        "clientapp": "wirelessfl.bridges.flower_app:clientapp",
    }
    shipped = app_settings({**flwr["config"], "out-dir": OUT}).scenario
    assert shipped.n_clients == 5 and shipped.learner.kind == "lora"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"scenario": "umi_energy", "set": "", "out-dir": OUT},
            "run config: no key 'timeout-s'; the app's [tool.flwr.app.config] needs scenario, "
            "set, out-dir, timeout-s",
        ),
        (
            _config(out_dir=OUT, rounds=3),
            "run config: unknown key 'rounds' (the app's [tool.flwr.app.config] takes "
            "scenario, set, out-dir, timeout-s)",
        ),
        (_config(timeout_s="600"), "run config timeout-s: expected a number, got '600'"),
        (_config(timeout_s=True), "run config timeout-s: expected a number, got True"),
        (_config(scenario=3), "run config scenario: expected a string, got 3"),
        (
            _config(timeout_s=0),
            "run config timeout-s: expected a number of seconds > 0, got 0",
        ),
        (
            _config(timeout_s=math.inf),
            "run config timeout-s: expected a number of seconds > 0, got inf",
        ),
        (
            _config(out_dir=""),
            "run config out-dir: the results folder must be an absolute path, got '' (the "
            "ServerApp runs in the SuperLink's folder)",
        ),
        (
            _config(out_dir="runs/flower"),
            "run config out-dir: the results folder must be an absolute path, got "
            "'runs/flower' (the ServerApp runs in the SuperLink's folder)",
        ),
        (
            _config(scenario="scenarios/paper.yaml"),
            "run config scenario: 'scenarios/paper.yaml' is neither a shipped scenario's name "
            "(wirelessfl scenarios lists them) nor an absolute path; a relative path would be "
            "read in the SuperLink's folder",
        ),
        (
            _config(set="name='my run"),
            'run config set: No closing quotation in "name=\'my run"; write KEY=VALUE items '
            "separated by spaces, quoting a value that holds spaces",
        ),
    ],
)
def test_a_bad_run_config_is_refused_in_one_line(config, message):
    with pytest.raises(UserError) as refused:
        app_settings(config)
    assert str(refused.value) == message


def test_a_bad_override_or_file_is_refused_as_the_scenario_loader_refuses_it(tmp_path):
    with pytest.raises(UserError, match=r"^--set: expected KEY=VALUE") as refused:
        app_settings(_config(set="rounds"))
    assert "\n" not in str(refused.value)
    with pytest.raises(UserError, match=r"^n_clients: ") as refused:
        app_settings(_config(set="n_clients=0"))
    assert "\n" not in str(refused.value)
    with pytest.raises(UserError, match=r"^scenario: no file ") as refused:
        app_settings(_config(scenario=str(tmp_path / "missing.yaml")))
    assert "\n" not in str(refused.value)
