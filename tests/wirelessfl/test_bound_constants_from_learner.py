"""constants.eta and constants.E follow the learner unless a scenario sets them (and then warn).

With ``learner.kind = lora`` the bound's learning rate and local iterations are the ones the
clients train with (``learner.lr``, ``learner.local_steps`` in steps); the surrogate keeps 1e-3
and 5. A given value that differs is kept and warned about in one line naming both keys.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from wirelessfl.config import load_scenario, scenario_from_dict
from wirelessfl.config.loader import SCENARIO_DIR, scenario_yaml
from wirelessfl.sim.setup import bound_constants

LOGGER = "wirelessfl.config.sections"
LORA = {"learner": {"kind": "lora", "lr": 0.02, "local_steps": 7}}


@pytest.fixture
def warnings(monkeypatch, caplog):
    """The warning lines logged while loading (the once-per-process memory emptied)."""
    monkeypatch.setattr(f"{LOGGER}._warned", set())
    caplog.set_level(logging.WARNING, logger=LOGGER)

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == LOGGER]

    return lines


def _lora(**constants) -> dict:
    data = {"learner": dict(LORA["learner"])}
    if constants:
        data["constants"] = constants
    return data


def test_lora_bound_uses_the_learners_lr_and_steps(warnings):
    sc = scenario_from_dict(_lora())
    assert (sc.constants.eta, sc.constants.E) == (0.02, 7)
    c = bound_constants(sc)
    assert (c.eta, c.E) == (0.02, 7)
    sc = scenario_from_dict(_lora(), ["learner.lr=0.3", "learner.local_steps=2"])
    assert (sc.constants.eta, sc.constants.E) == (0.3, 2)
    assert warnings() == []


def test_the_surrogate_keeps_the_old_defaults(warnings):
    sc = scenario_from_dict({"learner": {"kind": "surrogate", "lr": 0.02, "local_steps": 7}})
    assert (sc.constants.eta, sc.constants.E) == (1.0e-3, 5)
    sc = scenario_from_dict({"constants": {"eta": 0.5, "E": 9}})
    assert (sc.constants.eta, sc.constants.E) == (0.5, 9)
    assert warnings() == []


def test_a_given_value_that_disagrees_is_kept_and_warned_about(warnings):
    sc = scenario_from_dict(_lora(eta=1.0e-3, E=5))
    assert (sc.constants.eta, sc.constants.E) == (1.0e-3, 5)
    assert (bound_constants(sc).eta, bound_constants(sc).E) == (1.0e-3, 5)
    lines = warnings()
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    assert "constants.eta = 0.001" in lines[0] and "learner.lr = 0.02" in lines[0]
    assert "constants.E = 5" in lines[1] and "learner.local_steps = 7" in lines[1]
    scenario_from_dict(_lora(eta=1.0e-3, E=5))  # a sweep loads a scenario again: said once
    assert len(warnings()) == 2


def test_a_given_value_that_agrees_says_nothing(warnings):
    sc = scenario_from_dict(_lora(eta=0.02, E=7))
    assert (sc.constants.eta, sc.constants.E) == (0.02, 7)
    assert warnings() == []


def test_epochs_leave_E_as_given_or_5_with_a_warning(warnings):
    sc = scenario_from_dict(_lora(), ["learner.local_unit=epochs"])
    assert (sc.constants.eta, sc.constants.E) == (0.02, 5)
    (line,) = warnings()
    assert "constants.E = 5" in line and "epochs" in line
    sc = scenario_from_dict(_lora(E=40), ["learner.local_unit=epochs"])
    assert sc.constants.E == 40
    assert len(warnings()) == 1  # a given E is the user's count of steps: nothing to compare


def test_config_yaml_holds_the_resolved_values_and_reloads_the_same(tmp_path, warnings):
    sc = scenario_from_dict(_lora())
    text = scenario_yaml(sc)
    written = yaml.safe_load(text)["constants"]
    assert (written["eta"], written["E"]) == (0.02, 7)
    path = tmp_path / "config.yaml"
    path.write_text(text)
    again = load_scenario(path)
    assert again == sc and scenario_yaml(again) == text
    assert warnings() == []
    # a run's config.yaml of a scenario whose lr is then changed: the file's eta is explicit
    load_scenario(path, ["learner.lr=0.5"])
    assert any("learner.lr = 0.5" in line for line in warnings())


def _shipped() -> list[Path]:
    return sorted(SCENARIO_DIR.glob("*.yaml")) + sorted((SCENARIO_DIR / "paper").glob("*.yaml"))


@pytest.mark.parametrize("path", _shipped(), ids=lambda p: p.stem)
def test_shipped_scenarios(path, warnings):
    """No shipped scenario sets constants.eta or E; all but the SmolLM2 ones resolve to the
    values they ran with before (1e-3 and 5, so their results, the golden tables among them,
    stay). instruct trains with lr 5e-4 and 4 steps: its bound now says so (it said 1e-3 and
    5); fig3ab_verbalizer, added later, trains with lr 5e-4 and 2 steps."""
    raw = yaml.safe_load(path.read_text())
    assert "eta" not in raw.get("constants", {}) and "E" not in raw.get("constants", {})
    sc = load_scenario(path)
    from_learner = {"instruct": (5.0e-4, 4), "fig3ab_verbalizer": (5.0e-4, 2)}
    assert (sc.constants.eta, sc.constants.E) == from_learner.get(path.stem, (1.0e-3, 5))
    assert warnings() == []
