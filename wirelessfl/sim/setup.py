"""What a run's simulator is built from: the cell, the devices and the bound constants.

Each turns the scenario's section into the ``channels`` / ``optim`` object and names the
section in the one-line error when ``channels`` rejects a value.
"""

from __future__ import annotations

import numpy as np

from channels import Cell, DeviceProfile, dbm_to_watt, make_fading, noise_power_w
from channels.availability import AvailabilityModel, make_availability
from channels.cell_mobility import MovingCells
from channels.large_scale import LargeScaleGains
from channels.mobility import MobilityModel, doppler_hz, make_mobility
from channels.multicell import MultiCellLayout
from channels.pathloss_3gpp import make_path_loss
from channels.power_control import PowerControl, make_power_control
from channels.traces import read_compute_trace, read_snr_trace
from wirelessfl.config.bound import bound_constants
from wirelessfl.config.scenario import Scenario
from wirelessfl.errors import ConfigError
from wirelessfl.sim.channel_process import Radio

__all__ = [
    "bound_constants",
    "build_cell",
    "build_devices",
    "build_moving_network_radio",
    "build_network_radio",
    "build_radio",
    "client_classes",
    "build_availability",
]


def build_radio(scenario: Scenario) -> Radio:
    """The scenario's channel: a fixed mean SNR, a geometric cell (static or moving), or an
    SNR trace; with each client's transmit power (docs/simulator.md)."""
    try:
        return _build_radio(scenario)
    except ValueError as err:  # channels validates its arguments; name the scenario section
        raise ConfigError(f"channel: {err}") from None


def build_cell(scenario: Scenario) -> Cell:
    """The scenario's cell (gains at time 0; see :func:`build_radio`)."""
    return build_radio(scenario).cell


def client_classes(scenario: Scenario) -> list[str] | None:
    """Each client's device class (``devices.kind: classes``), else None."""
    dv = scenario.devices
    if dv.kind != "classes":
        return None
    profile = DeviceProfile(kind="classes", classes=dict(dv.classes))
    return profile.draw_classes(scenario.seed, scenario.n_clients)


def clock_ranges_hz(
    scenario: Scenario, client_class: list[str] | None
) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """(N,) f_min and (N,) f_max [Hz] each client may run its CPU at: its device class's
    ``devices.energy.cpu_freq_min_hz`` and ``cpu_freq_hz`` (``devices.energy.model: cmos``;
    ``client_class`` from :func:`client_classes`, None: the numbers given); (None, None)
    under another energy model."""
    energy = scenario.devices.energy
    classes = client_class if client_class is not None else [None] * scenario.n_clients
    spans = [energy.cpu_hz_range(c) for c in classes]
    if not spans or spans[0] is None:
        return None, None
    low_hz, high_hz = np.asarray(spans, dtype=float).T
    return low_hz, high_hz


def _fading(scenario: Scenario, mobility: MobilityModel | None):
    """The fading model; Gauss-Markov without rho or Doppler takes the clients' Doppler."""
    ch = scenario.channel
    kwargs = ch.fading.model_kwargs()
    if ch.fading.model == "gauss_markov" and kwargs.get("doppler_hz", 0.0) is None:
        assert mobility is not None  # the scenario checks: slot_s alone needs mobility
        carrier_hz = ch.path_loss.carrier_ghz * 1.0e9
        kwargs["doppler_hz"] = float(doppler_hz(mobility.mean_speed_mps, carrier_hz))
    return make_fading(ch.fading.model, **kwargs)


def _power_control(scenario: Scenario) -> PowerControl:
    """``channel.power_control`` with its settings (a user-registered model takes
    ``channel.power_control_params``)."""
    ch = scenario.channel
    kwargs: dict = dict(ch.power_control_params)
    if ch.power_control == "fixed":
        kwargs = {"p_dbm": ch.tx_power_dbm}
    elif ch.power_control == "per_class":
        kwargs = {"per_class_dbm": dict(ch.tx_power_dbm_by_class)}
    elif ch.power_control == "fractional":
        kwargs = {
            "p_max_dbm": ch.tx_power_dbm,
            "p0_dbm": ch.p0_dbm,
            "alpha": ch.power_control_alpha,
        }
    return make_power_control(ch.power_control, **kwargs)


def _noise_w(scenario: Scenario) -> float:
    """σ² [W]: the receiver noise over ``channel.bandwidth_hz`` with its noise figure."""
    ch = scenario.channel
    return noise_power_w(
        bandwidth_hz=ch.bandwidth_hz,
        noise_psd_dbm_per_hz=ch.noise_psd_dbm_per_hz,
        noise_figure_db=ch.noise_figure_db,
    )


def _build_radio(scenario: Scenario) -> Radio:
    ch, n, seed = scenario.channel, scenario.n_clients, scenario.seed
    fixed_power_w = np.full(n, dbm_to_watt(ch.tx_power_dbm))
    if ch.snr_trace is not None:
        trace_db = read_snr_trace(ch.snr_trace, n)
        if trace_db.shape[0] < scenario.rounds:
            raise ValueError(
                f"snr_trace: {ch.snr_trace} holds {trace_db.shape[0]:,} rounds, the scenario runs "
                f"{scenario.rounds:,}; lower rounds or give a longer trace"
            )
        mean_db = 10.0 * np.log10(np.mean(10.0 ** (trace_db / 10.0), axis=0))
        cell = Cell.from_mean_snr(
            mean_snr_db=mean_db, n_clients=n, seed=seed, fading=_fading(scenario, None)
        )
        return Radio(cell, fixed_power_w, snr_trace_db=trace_db)
    if ch.mean_snr_db is not None:
        cell = Cell.from_mean_snr(
            mean_snr_db=ch.mean_snr_db, n_clients=n, seed=seed, fading=_fading(scenario, None)
        )
        return Radio(cell, fixed_power_w)
    sigma2 = _noise_w(scenario)
    paper_cell = (
        ch.path_loss.model == "single_slope"
        and ch.power_control == "fixed"
        and not scenario.mobility.moves
    )
    if paper_cell:  # the paper's cell, drawn as it always was
        cell = Cell.from_geometry(
            n_clients=n,
            seed=seed,
            d_min_m=ch.d_min_m,
            d_max_m=ch.d_max_m,
            path_loss_exponent=ch.path_loss_exponent,
            noise_power_w=sigma2,
            tx_power_w=dbm_to_watt(ch.tx_power_dbm + ch.reference_gain_db),
            shadowing_sigma_db=ch.shadowing_sigma_db,
            fading=_fading(scenario, None),
        )
        return Radio(cell, fixed_power_w)
    mob = scenario.mobility
    mobility = make_mobility(
        mob.model,
        seed=seed,
        n_clients=n,
        d_min_m=ch.d_min_m,
        d_max_m=ch.d_max_m,
        **mob.model_kwargs(),
    )
    large_scale = LargeScaleGains(
        path_loss=make_path_loss(ch.path_loss.model, **ch.path_loss.model_kwargs(ch)),
        mobility=mobility,
        power=_power_control(scenario),
        client_class=client_classes(scenario),
    )
    start = large_scale.at(0.0)
    cell = Cell(
        large_scale_power_gain=start.power_gain,
        noise_power_w=sigma2,
        fading=_fading(scenario, mobility),
        seed=seed,
        distances_m=np.maximum(start.distance_m, 1e-9),
    )
    return Radio(cell, start.tx_power_w, large_scale if large_scale.moves else None)


def build_network_radio(scenario: Scenario, layout: MultiCellLayout) -> Radio:
    """The channel of a network's clients at their serving sites (``cells``): each client's
    gain to its serving site (``layout``), the scenario's power control on that path loss,
    fading and the noise over ``channel.bandwidth_hz`` (the cell's band)."""
    gain = layout.serving_gain
    try:
        tx_w = _power_control(scenario).watts(-10.0 * np.log10(gain), client_classes(scenario))
        cell = Cell(
            large_scale_power_gain=tx_w * gain,
            noise_power_w=_noise_w(scenario),
            fading=_fading(scenario, None),
            seed=scenario.seed,
            distances_m=layout.distances_m[np.arange(len(gain)), layout.serving],
        )
    except ValueError as err:
        raise ConfigError(f"channel: {err}") from None
    return Radio(cell, tx_w)


def build_moving_network_radio(
    scenario: Scenario, layout: MultiCellLayout, serving: np.ndarray
) -> tuple[Radio, MovingCells]:
    """The channel of a network whose clients move (``cells`` and ``mobility``): each around
    its home site (:mod:`channels.cell_mobility`), at the serving cells ``serving`` (N,)
    (updated in place by the handovers), with the cell's noise and fading. ``serving`` is set
    to the cells of least coupling loss at time 0."""
    ch, mob, n = scenario.channel, scenario.mobility, scenario.n_clients
    try:
        mobility = make_mobility(
            mob.model,
            seed=scenario.seed,
            n_clients=n,
            d_min_m=ch.d_min_m,
            d_max_m=ch.d_max_m,
            **mob.model_kwargs(),
        )
        assert layout.home is not None and layout.translations_m is not None
        assert layout.los_uniform is not None and layout.shadow_z is not None
        moving = MovingCells(
            sites_m=layout.sites_m,
            translations_m=layout.translations_m,
            home=layout.home,
            mobility=mobility,
            path_loss=make_path_loss(ch.path_loss.model, **ch.path_loss.model_kwargs(ch)),
            los_uniform=layout.los_uniform,
            shadow_z=layout.shadow_z,
            power=_power_control(scenario),
            serving=serving,
            client_class=client_classes(scenario),
            boresight_deg=layout.boresight_deg,
        )
        _, gain, _ = moving.links_at(0.0)
        serving[:] = np.argmin(-10.0 * np.log10(gain), axis=1)
        start = moving.at(0.0)
        cell = Cell(
            large_scale_power_gain=start.power_gain,
            noise_power_w=_noise_w(scenario),
            fading=_fading(scenario, mobility),
            seed=scenario.seed,
            distances_m=start.distance_m,
        )
    except ValueError as err:
        raise ConfigError(f"channel: {err}") from None
    return Radio(cell, start.tx_power_w, moving), moving


def _build_devices(scenario: Scenario) -> np.ndarray:
    dv = scenario.devices
    if dv.kind == "trace":
        return read_compute_trace(dv.trace, scenario.n_clients, dv.flops_per_sample)
    profile = DeviceProfile(
        kind=dv.kind,
        flops_per_s=dv.flops_per_s,
        classes=dict(dv.classes) or None,
        median_flops_per_s=dv.median_flops_per_s,
        sigma=dv.sigma,
        per_client_flops_per_s=tuple(dv.per_client_flops_per_s) or None,
    )
    return np.asarray(profile.draw(scenario.seed, scenario.n_clients), dtype=float)


def build_availability(scenario: Scenario, client_class: list[str] | None) -> AvailabilityModel:
    """Who can take part in each round (``availability``; a user-registered model is built
    with ``seed``, ``n_clients`` and ``availability.params``)."""
    av, n, seed = scenario.availability, scenario.n_clients, scenario.seed
    kwargs: dict = {"seed": seed, "n_clients": n, **av.params}
    if av.model == "always":
        kwargs = {"n_clients": n}
    elif av.model == "markov":
        kwargs = {
            "seed": seed,
            "n_clients": n,
            "p_off_to_on": av.p_off_to_on,
            "p_on_to_off": av.p_on_to_off,
            "client_class": client_class,
        }
    elif av.model == "trace":
        kwargs = {"path": av.trace, "n_clients": n}
    try:
        return make_availability(av.model, **kwargs)
    except ValueError as err:
        raise ConfigError(f"availability: {err}") from None


def build_devices(scenario: Scenario) -> np.ndarray:
    """(N,) FLOP/s per client, from per-client streams of the run seed."""
    try:
        return _build_devices(scenario)
    except ValueError as err:
        raise ConfigError(f"devices: {err}") from None
