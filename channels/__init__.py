"""Wireless physics for federated learning over FDMA uplinks (numpy + scipy only).

Modules (one concern each): :mod:`~channels.units` (dB/dBm/W), :mod:`~channels.noise` (σ²),
:mod:`~channels.aircomp` (over-the-air aggregation: analog time, power control, MSE),
:mod:`~channels.streams` (addressable random streams), :mod:`~channels.fading` (small-scale
fading models and registry), :mod:`~channels.pathloss` (path loss, shadowing),
:mod:`~channels.pathloss_3gpp` (3GPP TR 38.901 UMi/UMa path loss, LoS probability,
path-loss model registry),
:mod:`~channels.topology` (client placement), :mod:`~channels.cell` (:class:`Cell`: gains,
noise, fading → SNR blocks), :mod:`~channels.fdma` (rates and upload delays),
:mod:`~channels.capacity` (ergodic and average-channel rates, Rayleigh outage and the
expected inverse rate above a cut-off), :mod:`~channels.compute`
(device speeds, training FLOPs), :mod:`~channels.payload` (LoRA payload bits),
:mod:`~channels.report` (per-client link summary), :mod:`~channels.mobility` (client
movement over virtual time), :mod:`~channels.large_scale` (path loss, shadowing and transmit
power at any time), :mod:`~channels.energy` (compute and transmit energy),
:mod:`~channels.power_control` (transmit power per client),
:mod:`~channels.radio_decisions` (transmit power and CPU clock as per-round decisions),
:mod:`~channels.availability` (on/off availability), :mod:`~channels.fedscale` (FedScale trace
pickles to JSON, safely), :mod:`~channels.traces` (availability,
compute and SNR trace files), :mod:`~channels.registry` (the registry shape every registry of
the project uses).

Channel convention (paper, section II-C): h = s·q^{-γ} with s the fading coefficient
(E|s|² = 1) and q^{-γ} an *amplitude* path gain, so SNR = |s|²·q^{-2γ}·P_tx/σ².
"""

from channels.availability import (
    AVAILABILITY_MODELS,
    AlwaysAvailable,
    AvailabilityModel,
    MarkovAvailability,
    TraceAvailability,
    make_availability,
)
from channels.capacity import (
    average_channel_rate,
    ergodic_rate_rayleigh,
    ergodic_rate_rician,
    exp_e1,
    rayleigh_inverse_efficiency,
    rayleigh_outage_probability,
    rayleigh_outage_snr,
)
from channels.cell import Cell
from channels.compute import (
    DEVICE_CLASSES,
    DeviceProfile,
    compute_delay_s,
    lora_training_flops,
)
from channels.energy import (
    COMPUTE_ENERGY_MODELS,
    DEVICE_CLASS_JOULES_PER_FLOP,
    CmosEnergy,
    PerFlopEnergy,
    fractional_power_control_dbm,
    make_compute_energy,
    transmit_energy_j,
)
from channels.fading import (
    FADING_MODELS,
    FadingModel,
    GaussMarkovRayleigh,
    RayleighFading,
    RicianFading,
    jakes_rho,
    make_fading,
)
from channels.fdma import (
    NOISE_BANDWIDTHS,
    check_noise_bandwidth,
    equal_delay_shares,
    full_band_upload_s,
    rate_bps,
    spectral_efficiency,
    upload_delay_s,
)
from channels.large_scale import LargeScaleGains, LargeScaleState
from channels.mobility import (
    MOBILITY_MODELS,
    GaussMarkovMobility,
    MobilityModel,
    RandomWaypoint,
    Static,
    doppler_hz,
    make_mobility,
)
from channels.noise import noise_power_w
from channels.pathloss import path_gain, path_power_gain, shadowing_power_gain
from channels.pathloss_3gpp import (
    PATH_LOSS_MODELS,
    PathLossModel,
    SingleSlope,
    UMa,
    UMi,
    breakpoint_distance_m,
    make_path_loss,
    uma_los_probability,
    uma_path_loss_db,
    umi_los_probability,
    umi_path_loss_db,
)
from channels.payload import (
    SparsePayload,
    index_overhead_bits,
    kept_values,
    lora_param_count,
    params_per_rank,
    payload_bits,
    planned_payload_bits,
    sparse_payload_bits,
)
from channels.power_control import (
    POWER_CONTROLS,
    FixedPower,
    FractionalPower,
    PerClassPower,
    PowerControl,
    make_power_control,
)
from channels.radio_decisions import compute_delay_at_clock_s, snr_at_power
from channels.registry import Registry, UnknownNameError
from channels.report import channel_report
from channels.streams import as_client_generators, client_generators, round_generator, stream_id
from channels.topology import annulus_distances
from channels.traces import (
    read_availability_trace,
    read_compute_trace,
    read_snr_trace,
    snr_trace_linear,
)
from channels.units import db_to_linear, dbm_to_watt, linear_to_db, watt_to_dbm

__all__ = [
    "POWER_CONTROLS",
    "FixedPower",
    "FractionalPower",
    "PerClassPower",
    "PowerControl",
    "make_power_control",
    "LargeScaleGains",
    "LargeScaleState",
    "COMPUTE_ENERGY_MODELS",
    "DEVICE_CLASS_JOULES_PER_FLOP",
    "CmosEnergy",
    "PerFlopEnergy",
    "fractional_power_control_dbm",
    "make_compute_energy",
    "transmit_energy_j",
    "AVAILABILITY_MODELS",
    "AlwaysAvailable",
    "AvailabilityModel",
    "MarkovAvailability",
    "TraceAvailability",
    "make_availability",
    "read_availability_trace",
    "read_compute_trace",
    "read_snr_trace",
    "snr_trace_linear",
    "DEVICE_CLASSES",
    "FADING_MODELS",
    "PATH_LOSS_MODELS",
    "Cell",
    "DeviceProfile",
    "FadingModel",
    "GaussMarkovRayleigh",
    "PathLossModel",
    "RayleighFading",
    "Registry",
    "RicianFading",
    "SingleSlope",
    "SparsePayload",
    "UMa",
    "UMi",
    "UnknownNameError",
    "annulus_distances",
    "as_client_generators",
    "average_channel_rate",
    "breakpoint_distance_m",
    "channel_report",
    "client_generators",
    "compute_delay_at_clock_s",
    "compute_delay_s",
    "db_to_linear",
    "dbm_to_watt",
    "NOISE_BANDWIDTHS",
    "check_noise_bandwidth",
    "equal_delay_shares",
    "ergodic_rate_rayleigh",
    "ergodic_rate_rician",
    "exp_e1",
    "full_band_upload_s",
    "index_overhead_bits",
    "jakes_rho",
    "kept_values",
    "linear_to_db",
    "lora_param_count",
    "lora_training_flops",
    "make_fading",
    "MOBILITY_MODELS",
    "GaussMarkovMobility",
    "MobilityModel",
    "RandomWaypoint",
    "Static",
    "doppler_hz",
    "make_mobility",
    "make_path_loss",
    "noise_power_w",
    "params_per_rank",
    "path_gain",
    "path_power_gain",
    "payload_bits",
    "planned_payload_bits",
    "rate_bps",
    "rayleigh_inverse_efficiency",
    "rayleigh_outage_probability",
    "rayleigh_outage_snr",
    "round_generator",
    "shadowing_power_gain",
    "snr_at_power",
    "sparse_payload_bits",
    "spectral_efficiency",
    "stream_id",
    "uma_los_probability",
    "uma_path_loss_db",
    "umi_los_probability",
    "umi_path_loss_db",
    "upload_delay_s",
    "watt_to_dbm",
]
