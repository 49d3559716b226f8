"""Small scenarios shared by the tests (importable: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from wirelessfl.config import scenario_from_dict


def set_keys(data: dict, overrides: dict) -> dict:
    for key, value in overrides.items():
        node = data
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return data


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
    return scenario_from_dict(set_keys(data, overrides))


def digits_scenario(**overrides):
    data = {
        "name": "digits",
        "seed": 1,
        "n_clients": 8,
        "n_scheduled": 4,
        "rounds": 12,
        "eval_every": 4,
        "channel": {"bandwidth_hz": 1.0e6, "mean_snr_db": 10.0},
        "devices": {"flops_per_s": 1.0e9},
        "controller": {"name": "fixed", "rank": 4, "sparsification": 0.5, "r_max": 16},
        "learner": {
            "kind": "lora",
            "model": "tiny_mlp",
            "dataset": "digits",
            "local_steps": 8,
            "batch_size": 16,
            "lr": 0.1,
        },
        "output": {"clients": True, "checkpoint_every": 1},
    }
    data = set_keys(data, overrides)
    if data.get("algorithm", {}).get("name", "soft") == "soft":  # zeta is a SOFT-family setting
        data.setdefault("strategy", {}).setdefault("zeta", 0.01)
    return scenario_from_dict(data)


def interrupt_at(run, round_index: int) -> None:
    """Execute ``run`` until it is interrupted (KeyboardInterrupt) when ``round_index`` starts."""
    import pytest

    original = run.sim.run_round

    def dying(t):
        if t == round_index:
            raise KeyboardInterrupt
        return original(t)

    run.sim.run_round = dying
    with pytest.raises(KeyboardInterrupt):
        run.execute()


def spent_per_round_j(run, n_clients: int = 20) -> np.ndarray:
    """(T, N) each device's compute + transmit energy per round [J], from the clients table."""
    spent = np.zeros((len(run.rounds), n_clients))
    c = run.clients
    np.add.at(spent, (c["round"], c.client), c.compute_energy_j + c.transmit_energy_j)
    return spent


def rounds_text(path: Path) -> list[list[str]]:
    """``rounds.csv``'s cells as written, without ``wall_s`` (the only column a resume changes)."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    wall = rows[0].index("wall_s")
    return [row[:wall] + row[wall + 1 :] for row in rows]


def assert_same_tables(
    full: Path, resumed: Path, names: tuple[str, ...] = ("events.csv", "clients.csv")
) -> None:
    """The tables ``names`` byte for byte and ``rounds.csv`` but for ``wall_s``."""
    for name in names:
        assert (resumed / name).read_bytes() == (full / name).read_bytes(), name
    assert rounds_text(resumed / "rounds.csv") == rounds_text(full / "rounds.csv")
