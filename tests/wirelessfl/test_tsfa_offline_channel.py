"""``controller.offline_channel``: TSFA's offline stage on the average or the expected channel."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scenario_helpers import small_scenario

from channels import rayleigh_inverse_efficiency, rayleigh_outage_snr
from optim.offline import OFFLINE_CHANNELS
from wirelessfl.controllers.tsfa import TsfaSettings
from wirelessfl.errors import ConfigError
from wirelessfl.learners import make_learner
from wirelessfl.sim import run_scenario
from wirelessfl.sim.simulator import Simulator


def _controller(**overrides):
    """The run's controller, built as a run builds it (no round is simulated)."""
    scenario = small_scenario(**{"controller.d_th_s": 0.05, **overrides})
    return Simulator(scenario, make_learner(scenario)).controller


def test_choices_are_optims():
    spec = TsfaSettings.__dataclass_fields__["offline_channel"].metadata
    assert tuple(spec["choices"]) == OFFLINE_CHANNELS
    assert TsfaSettings().offline_channel == "mean_snr"


def test_default_is_the_paper_and_expected_rate_plans_more_delay():
    paper = _controller()
    assert "offline_channel" not in paper.summary()
    planned = _controller(**{"controller.offline_channel": "expected_rate"})
    s = planned.summary()
    assert s["offline_channel"] == "expected_rate" and "offline_outage_prob" in s["offline_cutoff"]
    # 10 dB everywhere: w = E[1/log2(1+SNR) | SNR >= the 1 % quantile]
    w = rayleigh_inverse_efficiency(10.0, rayleigh_outage_snr(10.0, 0.01), conditional=True)
    assert s["offline_mean_inverse_efficiency"] == pytest.approx(w, rel=1e-12)
    o_paper = np.asarray(paper.summary()["offline_sparsifications"])
    o_planned = np.asarray(s["offline_sparsifications"])
    assert np.all(o_planned <= o_paper) and np.any(o_planned < o_paper)
    assert planned.rank <= paper.rank


def test_outage_threshold_is_the_cut_off():
    ctl = _controller(
        **{"controller.offline_channel": "expected_rate", "faults.outage_snr_db": 0.0}
    )
    s = ctl.summary()
    assert "faults.outage_snr_db" in s["offline_cutoff"]
    assert s["offline_mean_inverse_efficiency"] == pytest.approx(
        rayleigh_inverse_efficiency(10.0, 1.0), rel=1e-12
    )


def test_gauss_markov_is_accepted_rician_is_refused():
    ctl = _controller(
        **{
            "controller.offline_channel": "expected_rate",
            "channel.fading.model": "gauss_markov",
            "channel.fading.rho": 0.9,
        }
    )
    assert ctl.summary()["offline_channel"] == "expected_rate"
    with pytest.raises(ConfigError, match="controller.offline_channel: expected_rate"):
        _controller(
            **{
                "controller.offline_channel": "expected_rate",
                "channel.fading.model": "rician",
                "channel.fading.k_factor": 3.0,
            }
        )


def test_unknown_planner_is_refused():
    with pytest.raises(ConfigError, match="controller.offline_channel"):
        small_scenario(**{"controller.offline_channel": "ergodic"})


def test_run_records_the_planner(tmp_path):
    scenario = small_scenario(
        **{"controller.offline_channel": "expected_rate", "rounds": 3, "output.events": False}
    )
    run_scenario(scenario, tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert "expected_rate" in json.dumps(meta)
