"""What a run's simulator is built from: the cell, the devices and the bound constants.

Each turns the scenario's section into the ``channels`` / ``optim`` object and names the
section in the one-line error when ``channels`` rejects a value.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from channels import Cell, DeviceProfile, dbm_to_watt, make_fading, noise_power_w
from optim import BoundConstants
from wirelessfl.config.scenario import Scenario
from wirelessfl.errors import ConfigError

__all__ = ["bound_constants", "build_cell", "build_devices"]


def build_cell(scenario: Scenario) -> Cell:
    """The scenario's cell: a fixed mean SNR for every client, or a geometric cell."""
    try:
        return _build_cell(scenario)
    except ValueError as err:  # channels validates its arguments; name the scenario section
        raise ConfigError(f"channel: {err}") from None


def _build_cell(scenario: Scenario) -> Cell:
    ch = scenario.channel
    fading = make_fading(ch.fading.model, **ch.fading.model_kwargs())
    if ch.mean_snr_db is not None:
        return Cell.from_mean_snr(
            mean_snr_db=ch.mean_snr_db,
            n_clients=scenario.n_clients,
            seed=scenario.seed,
            fading=fading,
        )
    sigma2 = noise_power_w(
        bandwidth_hz=ch.bandwidth_hz,
        noise_psd_dbm_per_hz=ch.noise_psd_dbm_per_hz,
        noise_figure_db=ch.noise_figure_db,
    )
    return Cell.from_geometry(
        n_clients=scenario.n_clients,
        seed=scenario.seed,
        d_min_m=ch.d_min_m,
        d_max_m=ch.d_max_m,
        path_loss_exponent=ch.path_loss_exponent,
        noise_power_w=sigma2,
        tx_power_w=dbm_to_watt(ch.tx_power_dbm + ch.reference_gain_db),
        shadowing_sigma_db=ch.shadowing_sigma_db,
        fading=fading,
    )


def _build_devices(scenario: Scenario) -> np.ndarray:
    dv = scenario.devices
    profile = DeviceProfile(
        kind=dv.kind,
        flops_per_s=dv.flops_per_s,
        classes=dict(dv.classes) or None,
        median_flops_per_s=dv.median_flops_per_s,
        sigma=dv.sigma,
        per_client_flops_per_s=tuple(dv.per_client_flops_per_s) or None,
    )
    return np.asarray(profile.draw(scenario.seed, scenario.n_clients), dtype=float)


def build_devices(scenario: Scenario) -> np.ndarray:
    """(N,) FLOP/s per client, from per-client streams of the run seed."""
    try:
        return _build_devices(scenario)
    except ValueError as err:
        raise ConfigError(f"devices: {err}") from None


def bound_constants(scenario: Scenario) -> BoundConstants:
    """Theorem 1 constants of the scenario (``constants.*`` and ``controller.r_max``).

    ``constants.eta`` and ``constants.E`` are the learner's ``lr`` and ``local_steps`` unless
    the scenario gives them (``ConstantsConfig.resolve``, run when the scenario is loaded; a
    scenario built without loading is resolved here, on a copy).
    """
    k = scenario.constants
    if k.eta is None or k.E is None:
        k = dataclasses.replace(k)
        k.resolve(scenario.learner)
    assert k.eta is not None and k.E is not None
    return BoundConstants(
        S=k.S, H=k.H, W=k.W, phi=k.phi, G=k.G, eta=k.eta, E=k.E, r_max=scenario.controller.r_max
    )
