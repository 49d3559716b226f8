"""Each controller's and learner kind's settings live with it (its ``Settings``), and the
``controller`` and ``learner`` sections are the running one's (``config.schema.chosen_section``):
keys of another one are accepted, kept, written back and apply to nothing; a plug-in's own
settings reach it; AirComp's section is its uplink's ``Settings``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml
from scenario_helpers import small_scenario

from wirelessfl.config.controller import ControllerSettings, controller_settings
from wirelessfl.config.learner import LearnerSettings
from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.config.scenario import Scenario
from wirelessfl.config.schema import applies, build, describe, field_names, option, to_dict
from wirelessfl.controllers.fixed import Fixed, FixedSettings
from wirelessfl.errors import ConfigError
from wirelessfl.learners.kinds import LearnerSpec
from wirelessfl.registries import CONTROLLERS, LEARNERS, UPLINKS
from wirelessfl.sim.runner import run_scenario


def test_every_built_in_declares_its_settings_on_the_base():
    for name in CONTROLLERS.names():
        settings = CONTROLLERS.load(name).Settings
        assert issubclass(settings, ControllerSettings) and settings is not ControllerSettings
    for kind in LEARNERS.names():
        spec = LEARNERS.load(kind)
        assert isinstance(spec, LearnerSpec) and issubclass(spec.Settings, LearnerSettings)
    # the old union: 22 controller keys, 41 learner keys (kind included), none lost or doubled
    ctl = [k for k, _, _ in describe(Scenario) if k.startswith("controller.")]
    lrn = [k for k, _, _ in describe(Scenario) if k.startswith("learner.")]
    assert len(ctl) == len(set(ctl)) == 22
    assert len({k.split(".")[1] for k in lrn}) == 41 and len(lrn) == len(set(lrn))
    # each key is marked with the controllers that read it, unless all do
    docs = {k: doc for k, _, doc in describe(Scenario)}
    assert docs["controller.V"].startswith("[controller.name = tsfa, osfa, sketch] ")
    assert not docs["controller.d_th_s"].startswith("[")
    assert docs["learner.client_fn"].startswith("[learner.kind = flower] ")


def test_another_controllers_key_is_kept_written_back_and_applies_to_nothing():
    sc = scenario_from_dict({"controller": {"name": "osfa", "V": 1e-3, "sparsification": 0.3}})
    assert type(sc.controller).__name__ == "LyapunovSettings" and sc.controller.V == 1e-3
    assert not hasattr(sc.controller, "sparsification")
    assert sc.controller.others == {"sparsification": 0.3}
    assert sc.controller.given("sparsification") == 0.3 and sc.controller.given("V") == 1e-3
    config = yaml.safe_load(yaml.safe_dump(to_dict(sc), sort_keys=False))
    assert list(config["controller"])[-1] == "sparsification"  # after osfa's own keys
    assert config["controller"]["sparsification"] == 0.3
    assert to_dict(build(Scenario, config)) == to_dict(sc)  # config.yaml reads back the same
    assert not applies(Scenario, config, "controller.sparsification")
    assert applies(Scenario, config, "controller.V")
    # the same file under the fixed controller reads the ratio and keeps V
    fixed = scenario_from_dict({**config, "controller": {**config["controller"], "name": "fixed"}})
    assert fixed.controller.sparsification == 0.3 and fixed.controller.others["V"] == 1e-3


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ({"name": "fixed", "V": -1.0}, "controller.V: must be >= 0.0, got -1.0"),
        ({"name": "fixed", "vv": 1}, "controller.vv: unknown key (accepted here: bandwidth,"),
        ({"name": "sketch", "k_min": 9, "rank": 8}, "controller.k_min: must be <= controller.rank"),
        ({"name": "osfa", "energy_queue": "signed"}, "need controller.energy_budget_j"),
        ({"name": "fixed", "energy_budget_j": 1.0}, "the 'fixed' controller has no online stage"),
        ({"name": "osfa", "cpu_freq_hz": 1e9}, "is the fixed controller's, and 'osfa' does not"),
        ({"name": "fixed", "bits_choices": [4]}, "the 'fixed' controller does not choose b"),
        ({"name": "tsfa", "rank": 70}, "controller.rank: must be <= controller.r_max (64)"),
    ],
)
def test_bad_controller_settings_are_one_line(section, needle):
    with pytest.raises(ConfigError) as err:
        scenario_from_dict({"controller": section})
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_unknown_key_lists_the_running_and_the_other_controllers_keys():
    with pytest.raises(ConfigError) as err:
        controller_settings("fixed", vv=1)
    message = str(err.value)
    assert "other controllers' keys: V, bits_choices" in message
    own = message.split("accepted here: ")[1].split(";")[0].split(", ")
    assert own == sorted(field_names(Fixed.Settings))


@dataclasses.dataclass
class _SlowSettings(FixedSettings):
    """The fixed controller's settings and a plug-in's own key."""

    slowdown: float = option(2.0, gt=0.0, doc="plug-in: divide every share by this")


class _Slow(Fixed):
    """The fixed controller, every share divided by ``controller.slowdown``."""

    Settings = _SlowSettings

    def decide(self, snr, compute_s):
        decision = super().decide(snr, compute_s)
        shares = np.asarray(decision.shares) / self.ctx.settings.slowdown
        return dataclasses.replace(decision, shares=shares)


def test_a_plug_in_controllers_own_setting_reaches_it(tmp_path):
    CONTROLLERS.register("slow_plugin", _Slow)
    try:
        with pytest.raises(ConfigError, match=r"controller\.slowdown: must be > 0.0"):
            scenario_from_dict({"controller": {"name": "slow_plugin", "slowdown": 0}})
        runs = {}
        for slowdown in (1.0, 4.0):
            sc = small_scenario(
                rounds=2,
                **{"controller.name": "slow_plugin", "controller.slowdown": slowdown},
            )
            assert sc.controller.slowdown == slowdown
            runs[slowdown] = run_scenario(sc, tmp_path / str(slowdown), progress=False)
        shares = {k: r.clients["share"].to_numpy() for k, r in runs.items()}
        np.testing.assert_allclose(shares[4.0], shares[1.0] / 4.0)
        assert "slowdown" in (tmp_path / "4.0" / "config.yaml").read_text()
    finally:
        CONTROLLERS.unregister("slow_plugin")


def test_one_file_switches_learner_kind_and_keeps_the_other_kinds_keys():
    lora = {"learner": {"kind": "lora", "lr": 0.1, "model": "tiny_mlp"}}
    network = scenario_from_dict({"learner": {**lora["learner"], "kind": "surrogate"}})
    assert type(network.learner).__name__ == "SurrogateSettings"
    assert network.learner.others == {"lr": 0.1, "model": "tiny_mlp"}
    config = to_dict(network)
    assert not applies(Scenario, config, "learner.lr")
    assert applies(Scenario, config, "learner.initial_loss")
    trains = scenario_from_dict(config | {"learner": {**config["learner"], "kind": "lora"}})
    assert trains.learner.lr == 0.1 and trains.learner.others["initial_loss"] == 2.3
    with pytest.raises(ConfigError, match="farms out real training, and learner.kind 'flower'"):
        scenario_from_dict({"learner": {"kind": "flower", "executor": "ray"}})


def test_aircomp_section_is_the_uplinks_settings():
    sc = scenario_from_dict({"channel": {"uplink": "aircomp", "aircomp": {"policy": "truncated"}}})
    assert type(sc.channel.aircomp) is UPLINKS.load("aircomp").Settings
    config = to_dict(sc)
    assert applies(Scenario, config, "channel.aircomp.policy")
    assert not applies(Scenario, to_dict(scenario_from_dict({})), "channel.aircomp.policy")
    with pytest.raises(ConfigError, match=r"channel\.aircomp\.polic: unknown key"):
        scenario_from_dict({"channel": {"aircomp": {"polic": "optimal"}}})


class _ReadsOmin(Fixed):
    """A plug-in that reads the online stage's o_min without declaring it."""

    Settings = ControllerSettings

    def choose_rank(self):
        return int(self.ctx.settings.rank) if self.ctx.settings.o_min else 1


def test_reading_an_undeclared_setting_is_one_line(tmp_path):
    settings = controller_settings("fixed")
    assert getattr(settings, "o_min", None) is None  # getattr with a default still works
    CONTROLLERS.register("reads_o_min", _ReadsOmin)
    try:
        sc = small_scenario(rounds=1, **{"controller.name": "reads_o_min"})
        with pytest.raises(ConfigError) as err:
            run_scenario(sc, tmp_path, progress=False)
    finally:
        CONTROLLERS.unregister("reads_o_min")
    assert str(err.value).startswith("controller.o_min: not a setting of the running controller")
    assert "declares the keys it reads in its Settings" in str(err.value)
