"""Shared fixtures: small network-only scenarios that run in well under a second."""

from __future__ import annotations

import pytest

from wirelessfl.config import scenario_from_dict


def small_scenario(**overrides):
    """A 40-round, N=20, K=5 network-only scenario with events and clients tables."""
    data = {
        "name": "small",
        "seed": 3,
        "n_clients": 20,
        "n_scheduled": 5,
        "rounds": 40,
        "eval_every": 5,
        "channel": {"bandwidth_hz": 1.0e6, "mean_snr_db": 10.0},
        "devices": {"include_compute": False},
        "controller": {"name": "tsfa", "V": 1.0e-4, "d_th_s": 0.5, "o_min": 0.05, "r_max": 16},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[64, 64], [64, 32]]}},
        "output": {"events": True, "clients": True},
    }
    for key, value in overrides.items():
        node = data
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return scenario_from_dict(data)


@pytest.fixture
def make_scenario():
    return small_scenario
