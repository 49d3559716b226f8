"""Per device class CPU clock ranges (``devices.energy.cpu_freq_hz`` / ``cpu_freq_min_hz`` as
{device class: Hz}, docs/simulator.md, "Compute energy"): the checks that refuse bad ranges in
one line, the (N,) ranges the simulator builds, and a joint-radio run on two classes whose
clocks stay in each class's range, its compute energy and time checked against the CMOS model
written out here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from channels.compute import DEVICE_CLASSES
from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.errors import ConfigError
from wirelessfl.sim.setup import client_classes, clock_ranges_hz

SCENARIO = SCENARIO_DIR / "energy/umi_joint_accuracy.yaml"
TWO_CLASSES = "devices.classes={flagship_phone: 0.5, laptop_cpu: 0.5}"
#: f_min and f_max per class [Hz]: disjoint ranges, so a clock tells the class apart
RANGES_HZ = {"flagship_phone": (0.2e9, 1.0e9), "laptop_cpu": (2.0e9, 3.0e9)}
PER_CLASS = [
    TWO_CLASSES,
    "devices.energy.cpu_freq_hz={flagship_phone: 1.0e9, laptop_cpu: 3.0e9}",
    "devices.energy.cpu_freq_min_hz={flagship_phone: 0.2e9, laptop_cpu: 2.0e9}",
]


def _scenario(*sets: str):
    return load_scenario(SCENARIO, list(sets))


def test_the_range_of_each_class():
    energy = _scenario(*PER_CLASS).devices.energy
    for device_class, span in RANGES_HZ.items():
        assert energy.cpu_hz_range(device_class) == span
    # a number and a table mix: f_min one number, f_max per class
    mixed = _scenario(TWO_CLASSES, PER_CLASS[1], "devices.energy.cpu_freq_min_hz=0.5e9")
    assert mixed.devices.energy.cpu_hz_range("laptop_cpu") == (0.5e9, 3.0e9)
    assert mixed.devices.energy.cpu_hz_range("flagship_phone") == (0.5e9, 1.0e9)


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (
            [PER_CLASS[1], "devices.energy.cpu_freq_min_hz={flagship_phone: 2.5e9}"],
            "devices.energy.cpu_freq_min_hz: must be <= cpu_freq_hz of flagship_phone (1e+09), "
            "got 2.5e+09",
        ),
        (
            [PER_CLASS[1], "devices.energy.cpu_freq_min_hz=2.5e9"],
            "devices.energy.cpu_freq_min_hz: must be <= cpu_freq_hz of flagship_phone",
        ),
        (
            ["devices.energy.cpu_freq_min_hz=3e9"],
            "devices.energy.cpu_freq_min_hz: must be <= cpu_freq_hz (2e+09), got 3e+09",
        ),
        (
            ["devices.energy.cpu_freq_hz={flagship_phone: 0, laptop_cpu: 3e9}"],
            "devices.energy.cpu_freq_hz.flagship_phone: must be in [1, 1e+12], got 0",
        ),
        (
            ["devices.energy.cpu_freq_min_hz={flagship_phone: -1e9, laptop_cpu: 1e9}"],
            "devices.energy.cpu_freq_min_hz.flagship_phone: must be in [1, 1e+12]",
        ),
        (
            ["devices.energy.cpu_freq_hz={flagship_phone: 2e9}"],
            "devices.energy.cpu_freq_hz: no clock for device class 'laptop_cpu' of devices.classes",
        ),
        (
            [PER_CLASS[1], "devices.kind=fixed"],
            "devices.energy.cpu_freq_hz: per device class needs devices.kind: classes",
        ),
        (
            ["devices.energy.cpu_freq_hz={phone: 2e9, laptop_cpu: 3e9}"],
            "devices.energy.cpu_freq_hz.phone: device classes are",
        ),
        (
            [PER_CLASS[1], "controller.name=fixed", "controller.cpu_freq_hz=2e9"],
            "controller.cpu_freq_hz: must be in [5e+08, 1e+09]",
        ),
    ],
)
def test_bad_ranges_are_refused_in_one_line(sets, message):
    with pytest.raises(ConfigError) as caught:
        _scenario(TWO_CLASSES, *sets)
    text = str(caught.value)
    assert text.startswith(message) and "\n" not in text


def test_the_simulator_ranges_follow_each_clients_class():
    sc = _scenario(*PER_CLASS)
    classes = client_classes(sc)
    low_hz, high_hz = clock_ranges_hz(sc, classes)
    assert set(classes) == set(RANGES_HZ)  # both classes drawn
    for k, device_class in enumerate(classes):
        assert (low_hz[k], high_hz[k]) == RANGES_HZ[device_class]
    # one number for every class: the arrays the simulator built before the tables existed
    plain = _scenario()
    low_hz, high_hz = clock_ranges_hz(plain, client_classes(plain))
    assert (low_hz == 0.5e9).all() and (high_hz == 2.0e9).all() and len(low_hz) == 20
    assert clock_ranges_hz(_scenario("devices.energy={model: per_flop}"), None) == (None, None)


@pytest.fixture(scope="module")
def two_class_run(tmp_path_factory):
    """The joint radio at the umi budget on two classes with disjoint clock ranges: 8 clients,
    4 scheduled, 3 rounds, network-only (the surrogate learner's FLOPs)."""
    from wirelessfl.sim import run_scenario

    sets = [
        *PER_CLASS,
        "n_clients=8",
        "n_scheduled=4",
        "rounds=3",
        "learner.kind=surrogate",
        "controller.energy_budget_j=0.004",
    ]
    sc = _scenario(*sets)
    run = run_scenario(sc, tmp_path_factory.mktemp("run"))
    return sc, client_classes(sc), run


def test_the_joint_radio_keeps_each_clock_in_its_class_range(two_class_run):
    sc, classes, run = two_class_run
    rows = run.clients[run.clients.cpu_hz.notna()]
    device_class = pd.Series(classes)[rows.client.to_numpy()].to_numpy()
    low_hz = np.array([RANGES_HZ[c][0] for c in device_class])
    high_hz = np.array([RANGES_HZ[c][1] for c in device_class])
    assert len(rows) >= 8 and set(device_class) == set(RANGES_HZ)
    assert (rows.cpu_hz >= low_hz * (1 - 1e-9)).all()
    assert (rows.cpu_hz <= high_hz * (1 + 1e-9)).all()
    # the ranges are disjoint: a single range for every device would have put some clock of
    # one class inside the other's
    assert rows.cpu_hz[device_class == "laptop_cpu"].min() > 1.0e9


def test_compute_energy_and_time_follow_each_class_clock(two_class_run):
    """E = kappa f^2 FLOPs / flops_per_cycle and t = FLOPs / flops_per_s(class) * f_max / f:
    every client trains the same FLOPs, so both give one FLOP count across classes."""
    sc, classes, run = two_class_run
    rows = run.clients[run.clients.cpu_hz.notna() & (run.clients.compute_s > 0)]
    energy = sc.devices.energy
    flops_from_energy = (
        rows.compute_energy_j * energy.flops_per_cycle / (energy.kappa * rows.cpu_hz**2)
    )
    device_class = [classes[k] for k in rows.client]
    speed = np.array([DEVICE_CLASSES[c] for c in device_class])
    f_max = np.array([RANGES_HZ[c][1] for c in device_class])
    flops_from_time = rows.compute_s * speed * rows.cpu_hz / f_max
    assert flops_from_energy.to_numpy() == pytest.approx(flops_from_time.to_numpy(), rel=1e-9)
    assert np.ptp(flops_from_energy) == pytest.approx(0.0, abs=1e-9 * flops_from_energy.max())


def test_the_energy_min_controller_keeps_each_clock_in_its_class_range(tmp_path):
    """Yang et al.'s cell (controller energy_min) on the two classes: at its loose round-time
    limit the least energy runs every device at its own class's f_min."""
    from wirelessfl.sim import run_scenario

    sets = ["rounds=2", "devices.kind=classes", *PER_CLASS]
    sc = load_scenario(SCENARIO_DIR / "energy/yang_cell.yaml", sets)
    run = run_scenario(sc, tmp_path / "yang")
    classes = client_classes(sc)
    rows = run.clients[run.clients.cpu_hz.notna()]
    assert len(rows) > 0
    for client, cpu_hz in zip(rows.client, rows.cpu_hz, strict=True):
        low_hz, high_hz = RANGES_HZ[classes[client]]
        assert low_hz * (1 - 1e-9) <= cpu_hz <= high_hz * (1 + 1e-9)
