"""Scenario sections of the wireless models beyond the paper's cell (docs/simulator.md).

Path loss (``channel.path_loss``), mobility (``mobility``), availability (``availability``) and
device energy (``devices.energy``): each names a model of a ``channels`` registry and gives its
settings; a user-registered model takes its keyword arguments from ``params``.
"""

from __future__ import annotations

from dataclasses import dataclass

from channels import (
    AVAILABILITY_MODELS,
    COMPUTE_ENERGY_MODELS,
    DEVICE_CLASSES,
    MOBILITY_MODELS,
    PATH_LOSS_MODELS,
)
from wirelessfl.config.schema import key_text, option, show
from wirelessfl.errors import ConfigError

#: J/FLOP of ``devices.energy.joules_per_flop: null`` without device classes: the order of a
#: phone SoC or a laptop CPU (channels.energy.DEVICE_CLASS_JOULES_PER_FLOP: 5e-11 to 2e-10).
DEFAULT_JOULES_PER_FLOP = 1.0e-10

__all__ = [
    "CLOCK_KEYS",
    "DEFAULT_JOULES_PER_FLOP",
    "AvailabilityConfig",
    "EnergyConfig",
    "MobilityConfig",
    "PathLossConfig",
]


#: the keys of ``devices.energy`` that give a clock [Hz], one number or one per device class
CLOCK_KEYS = ("cpu_freq_hz", "cpu_freq_min_hz")
#: the clocks they may take [Hz]: above 0 (1 Hz) and below any CPU (1 THz)
_LOWEST_CLOCK_HZ, _HIGHEST_CLOCK_HZ = 1.0, 1.0e12


def _class_value(value: float | dict[str, float], device_class: str | None) -> float:
    """``value`` for one device class: the number itself, or the table's entry (a table read
    without a class, or without the class, is a KeyError: the scenario's checks prevent it)."""
    if isinstance(value, dict):
        if device_class is None:
            raise KeyError("a value per device class needs the device class")
        return float(value[device_class])
    return float(value)


def _classes_of(*values: float | dict[str, float] | None) -> list[str | None]:
    """The device classes the tables among ``values`` name ([None]: every one is a number)."""
    named = [c for v in values if isinstance(v, dict) for c in v]
    return list(dict.fromkeys(named)) or [None]


def _check_params(prefix: str, params: dict, model: str, own: dict[str, str]) -> None:
    """``params`` are keyword arguments of user-registered models only."""
    for name in params:
        if not name.isidentifier():
            raise ConfigError(f"{prefix}.params: option names are Python names, got {show(name)}")
    if params and model in own:
        raise ConfigError(
            f"{prefix}.params: only for a user-registered model, not {model!r} (it is set by "
            f"{own[model]}); got {key_text(next(iter(params)))}"
        )


def check_per_class(prefix: str, value: float | dict[str, float], low: float, high: float) -> None:
    """A number in [low, high], or a table device class -> such a number."""
    values = value.items() if isinstance(value, dict) else [("", value)]
    for name, v in values:
        where = f"{prefix}.{name}" if name else prefix
        if name and name not in DEVICE_CLASSES:
            raise ConfigError(
                f"{where}: device classes are {', '.join(DEVICE_CLASSES)}, got {show(name)}"
            )
        if not low <= v <= high:
            raise ConfigError(f"{where}: must be in [{low:g}, {high:g}], got {show(v)}")


@dataclass
class PathLossConfig:
    """Large-scale path loss: the paper's single slope, or 3GPP TR 38.901 UMi / UMa."""

    OWN_KEYS = {
        "single_slope": "channel.path_loss_exponent, reference_gain_db and shadowing_sigma_db",
        "3gpp_umi": "carrier_ghz, h_bs_m and h_ut_m",
        "3gpp_uma": "carrier_ghz, h_bs_m and h_ut_m",
    }

    model: str = option(
        "single_slope",
        choices=PATH_LOSS_MODELS,
        doc="single_slope (q^-gamma, the paper) | 3gpp_umi | 3gpp_uma (TR 38.901, with LoS "
        "probability and the standard's shadowing sigma) | a user-registered model",
    )
    carrier_ghz: float = option(
        3.5, ge=0.5, le=100.0, doc="carrier frequency f_c (3GPP models; 0.5-100 GHz)"
    )
    h_bs_m: float | None = option(
        None, gt=1.0, le=1000.0, doc="base-station height (null: UMi 10 m, UMa 25 m)"
    )
    h_ut_m: float = option(
        1.5, ge=1.5, le=22.5, doc="client antenna height (UMi 1.5-22.5 m, UMa 1.5-13 m)"
    )
    params: dict[str, object] = option(
        default_factory=dict, doc="keyword arguments of a user-registered path-loss model"
    )

    def validate(self, prefix: str) -> None:
        _check_params(prefix, self.params, self.model, self.OWN_KEYS)
        if self.model == "3gpp_uma" and self.h_ut_m > 13.0:
            raise ConfigError(
                f"{prefix}.h_ut_m: 3gpp_uma accepts 1.5-13 m (h_E = 1 m exactly), got "
                f"{show(self.h_ut_m)}"
            )

    def model_kwargs(self, channel) -> dict:
        """Keyword arguments of ``channels.make_path_loss`` (``channel``: ChannelConfig)."""
        if self.model == "single_slope":
            return {
                "exponent": channel.path_loss_exponent,
                "reference_gain_db": channel.reference_gain_db,
                "shadowing_sigma_db": channel.shadowing_sigma_db,
            }
        if self.model in ("3gpp_umi", "3gpp_uma"):
            kwargs = {"carrier_ghz": self.carrier_ghz, "h_ut_m": self.h_ut_m}
            if self.h_bs_m is not None:
                kwargs["h_bs_m"] = self.h_bs_m
            return kwargs
        return dict(self.params)


@dataclass
class MobilityConfig:
    """How clients move over virtual time (``channels.MOBILITY_MODELS``)."""

    OWN_KEYS = {
        "static": "nothing (clients do not move)",
        "random_waypoint": "speed_min_mps, speed_max_mps and pause_s",
        "gauss_markov": "mean_speed_mps, alpha, step_s, speed_sigma_mps, direction_sigma_rad "
        "and edge_margin_m",
    }

    model: str = option(
        "static",
        choices=MOBILITY_MODELS,
        doc="static | random_waypoint | gauss_markov (Liang-Haas) | a user-registered model",
    )
    speed_min_mps: float = option(0.5, gt=0.0, le=1000.0, doc="random_waypoint: lowest speed")
    speed_max_mps: float = option(1.5, gt=0.0, le=1000.0, doc="random_waypoint: highest speed")
    pause_s: float = option(0.0, ge=0.0, doc="random_waypoint: pause at each waypoint")
    mean_speed_mps: float = option(1.0, ge=0.0, le=1000.0, doc="gauss_markov: mean speed")
    alpha: float = option(0.75, ge=0.0, le=1.0, doc="gauss_markov: memory (0 random, 1 straight)")
    step_s: float = option(1.0, gt=0.0, doc="gauss_markov: time between speed/direction updates")
    speed_sigma_mps: float | None = option(
        None, ge=0.0, le=1000.0, doc="gauss_markov: speed spread sigma_s (null: mean_speed / 2)"
    )
    direction_sigma_rad: float | None = option(
        None, ge=0.0, le=10.0, doc="gauss_markov: direction spread sigma_d (null: pi / 4)"
    )
    edge_margin_m: float | None = option(
        None,
        ge=0.0,
        doc="gauss_markov: border band where the mean direction points to the centre (null: "
        "10 % of d_max - d_min)",
    )
    params: dict[str, object] = option(
        default_factory=dict, doc="keyword arguments of a user-registered mobility model"
    )

    def validate(self, prefix: str) -> None:
        _check_params(prefix, self.params, self.model, self.OWN_KEYS)
        if self.speed_min_mps > self.speed_max_mps:
            raise ConfigError(
                f"{prefix}.speed_min_mps: must be <= speed_max_mps ({self.speed_max_mps:g}), "
                f"got {show(self.speed_min_mps)}"
            )

    @property
    def moves(self) -> bool:
        return self.model != "static"

    def model_kwargs(self) -> dict:
        """Keyword arguments of ``channels.make_mobility`` besides the cell's."""
        if self.model == "static":
            return {}
        if self.model == "random_waypoint":
            return {
                "speed_min_mps": self.speed_min_mps,
                "speed_max_mps": self.speed_max_mps,
                "pause_s": self.pause_s,
            }
        if self.model == "gauss_markov":
            optional = ("speed_sigma_mps", "direction_sigma_rad", "edge_margin_m")
            return {
                "mean_speed_mps": self.mean_speed_mps,
                "alpha": self.alpha,
                "step_s": self.step_s,
                **{k: getattr(self, k) for k in optional if getattr(self, k) is not None},
            }
        return dict(self.params)


@dataclass
class AvailabilityConfig:
    """Whether each client can take part in a round (``channels.AVAILABILITY_MODELS``)."""

    OWN_KEYS = {
        "always": "nothing",
        "markov": "p_on_to_off and p_off_to_on",
        "trace": "trace",
    }

    model: str = option(
        "always",
        choices=AVAILABILITY_MODELS,
        doc="always | markov (on/off chain per round, per device class) | trace (intervals "
        "from a file) | a user-registered model",
    )
    p_on_to_off: float | dict[str, float] = option(
        0.1, doc="markov: P(available -> unavailable) per round; a number or {device class: p}"
    )
    p_off_to_on: float | dict[str, float] = option(
        0.5, doc="markov: P(unavailable -> available) per round; a number or {device class: p}"
    )
    trace: str | None = option(
        None,
        doc="trace: CSV client,start_s,end_s or FedScale-style JSON (docs/simulator.md); "
        "relative to the working directory",
    )
    empty_round_s: float = option(
        1.0,
        gt=0.0,
        doc="virtual time a round lasts when nobody is scheduled or every scheduled client is "
        "unavailable",
    )
    params: dict[str, object] = option(
        default_factory=dict, doc="keyword arguments of a user-registered availability model"
    )

    def validate(self, prefix: str) -> None:
        _check_params(prefix, self.params, self.model, self.OWN_KEYS)
        check_per_class(f"{prefix}.p_on_to_off", self.p_on_to_off, 0.0, 1.0)
        check_per_class(f"{prefix}.p_off_to_on", self.p_off_to_on, 0.0, 1.0)
        if (self.model == "trace") != (self.trace is not None):
            raise ConfigError(
                f"{prefix}.trace: a trace file goes with model: trace (and only with it); "
                f"model is {self.model!r}, trace is {show(self.trace)}"
            )

    @property
    def per_class(self) -> bool:
        return isinstance(self.p_on_to_off, dict) or isinstance(self.p_off_to_on, dict)


@dataclass
class EnergyConfig:
    """Compute energy of local training (``channels.COMPUTE_ENERGY_MODELS``)."""

    OWN_KEYS = {
        "per_flop": "joules_per_flop",
        "cmos": "kappa, cpu_freq_hz, cpu_freq_min_hz and flops_per_cycle",
    }

    model: str = option(
        "per_flop",
        choices=COMPUTE_ENERGY_MODELS,
        doc="per_flop (FLOPs x J/FLOP) | cmos (kappa f^2 cycles) | a user-registered model",
    )
    joules_per_flop: float | dict[str, float] | None = option(
        None,
        doc="per_flop: J/FLOP, one number or {device class: J/FLOP} (null: the class "
        "defaults of channels.energy with devices.kind: classes, else 1e-10)",
    )
    kappa: float = option(1.0e-28, gt=0.0, doc="cmos: effective switched capacitance")
    cpu_freq_hz: float | dict[str, float] = option(
        2.0e9,
        doc="cmos: clock frequency f [Hz], > 0, a number or {device class: Hz}; the device "
        "computes at its flops_per_s at this clock, the highest a controller may choose (f_max)",
    )
    cpu_freq_min_hz: float | dict[str, float] | None = option(
        None,
        doc="cmos: the lowest clock a controller may choose [Hz] (0 < f_min <= f_max), a number "
        "or {device class: Hz}; at f the device computes at flops_per_s f / f_max; null: "
        "cpu_freq_hz (no choice)",
    )
    flops_per_cycle: float = option(8.0, gt=0.0, doc="cmos: FLOPs per clock cycle")
    params: dict[str, object] = option(
        default_factory=dict, doc="keyword arguments of a user-registered energy model"
    )

    def validate(self, prefix: str) -> None:
        _check_params(prefix, self.params, self.model, self.OWN_KEYS)
        if self.joules_per_flop is not None:
            check_per_class(f"{prefix}.joules_per_flop", self.joules_per_flop, 1.0e-30, 1.0)
        for key in CLOCK_KEYS:
            value = getattr(self, key)
            if value is not None:
                check_per_class(f"{prefix}.{key}", value, _LOWEST_CLOCK_HZ, _HIGHEST_CLOCK_HZ)
        if self.cpu_freq_min_hz is None:
            return
        if self.model != "cmos":
            raise ConfigError(
                f"{prefix}.cpu_freq_min_hz: a clock range needs model: cmos (the energy of a "
                f"clock), got model: {self.model}; use model: cmos or remove cpu_freq_min_hz"
            )
        bounds = (self.cpu_freq_hz, self.cpu_freq_min_hz)
        for device_class in _classes_of(*bounds):
            if any(isinstance(v, dict) and device_class not in v for v in bounds):
                continue  # a class one table lacks: the scenario names it (devices.classes)
            low, high = self.cpu_hz_range(device_class)  # type: ignore[misc]
            if low > high:
                where = f" of {device_class}" if device_class else ""
                raise ConfigError(
                    f"{prefix}.cpu_freq_min_hz: must be <= cpu_freq_hz{where} ({high:g}), got "
                    f"{low:g}"
                )

    def cpu_hz_range(self, device_class: str | None = None) -> tuple[float, float] | None:
        """(f_min, f_max) [Hz] a controller may choose the clock of a ``device_class`` device in
        (model ``cmos``; None: the numbers given for every class), else None."""
        if self.model != "cmos":
            return None
        high = _class_value(self.cpu_freq_hz, device_class)
        low = self.cpu_freq_hz if self.cpu_freq_min_hz is None else self.cpu_freq_min_hz
        return _class_value(low, device_class), high

    def model_kwargs(self) -> dict:
        """Keyword arguments of ``channels.make_compute_energy``."""
        if self.model == "per_flop":
            return {} if self.joules_per_flop is None else {"joules_per_flop": self.joules_per_flop}
        if self.model == "cmos":
            return {
                "kappa": self.kappa,
                "cpu_freq_hz": self.cpu_freq_hz,
                "flops_per_cycle": self.flops_per_cycle,
            }
        return dict(self.params)
