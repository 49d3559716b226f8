"""The scenario: everything that defines a run, as validated dataclasses.

Every key, its default and its accepted range is listed by ``wirelessfl scenario-keys``
(generated from this module with :func:`wirelessfl.config.schema.describe`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from channels import FADING_MODELS, NOISE_BANDWIDTHS, POWER_CONTROLS
from optim import ENERGY_MIN_METHODS, SELECTION_METHODS
from wirelessfl.config.aircomp import AirCompConfig
from wirelessfl.config.privacy import (
    PrivacyConfig,
    count_sensitivity,
    has_fixed_denominator,
    updates_per_aggregation,
)
from wirelessfl.config.schema import hidden_option, key_text, option, settings_option, show
from wirelessfl.config.wireless import (
    CLOCK_KEYS,
    AvailabilityConfig,
    EnergyConfig,
    MobilityConfig,
    PathLossConfig,
    check_per_class,
)
from wirelessfl.errors import ConfigError
from wirelessfl.registries import (
    ALGORITHMS,
    CONTROLLERS,
    DATASETS,
    HUB_PREFIX,
    LEARNERS,
    MODELS,
    PARTITIONERS,
    SERVER_MODES,
    SPARSIFIERS,
    STALENESS,
    UPLINKS,
)

# ---- limits on values a run allocates memory (or time) in proportion to --------------------
#: Most clients: every block of fading rounds makes one random generator per client (~1.2 KB
#: and ~20 us each), besides the (block_rounds, N) arrays below.
MAX_CLIENTS = 1_000_000
#: Most rounds: rounds.csv (~30 numbers a round) is read back whole when a run ends.
MAX_ROUNDS = 10_000_000
#: Largest r_max: the offline stage scores every rank 1..r_max and meta.json keeps the scores.
MAX_RANK = 65_536
#: Largest side of one adapted layer (d or l), and most adapted layers.
MAX_LAYER_SIDE = 1_000_000
MAX_LAYERS = 10_000
#: Most Ray training actors: each holds a copy of the frozen base model.
MAX_RAY_WORKERS = 4096

#: ``learner.init_lora_weights`` values: peft's inits that leave the base weights as they are.
LORA_INITS = (True, False, "gaussian")
#: peft's LoRA settings of the learner section and their defaults (the shipped results').
PEFT_SETTINGS: dict[str, object] = {
    "lora_dropout": 0.0,
    "use_rslora": False,
    "lora_bias": "none",
    "modules_to_save": None,
    "init_lora_weights": True,
    "use_dora": False,
    "layers_to_transform": None,
    "rank_pattern": None,
}

#: One fading block is n_clients x block_rounds values; each costs ~40 bytes at the peak of a
#: draw (complex128 coefficients, a float64 SNR, a temporary and the previous block's SNRs).
FADING_BYTES_PER_VALUE = 40
FADING_BLOCK_BUDGET = 4 * 2**30
#: Any level in dB (power, gain, noise, SNR) lies within +-MAX_DB: 10**(300/10) = 1e30 is far
#: past any radio, and keeps 10**(x/10) and the products of a few such factors finite.
MAX_DB = 300.0
#: Built-in fading models take their parameters from their own keys, not ``params``.
_FADING_OWN_KEYS = {
    "rayleigh": "it has no settings",
    "gauss_markov": "it is set by channel.fading.rho, or doppler_hz and slot_s",
    "rician": "it is set by channel.fading.k_factor",
}


def _check_option_names(options: dict, key: str) -> None:
    """Option tables are passed on as keyword arguments: their keys must be Python names."""
    for name in options:
        if not name.isidentifier():
            raise ConfigError(
                f"{key}: option names are Python names (letters, digits and _, not starting with "
                f"a digit), got {show(name)}"
            )


def _check_flower_values(values: dict, key: str) -> None:
    """Flower's config records hold text keys and numbers, text or bools (``UserConfigValue``)."""
    for name, value in values.items():
        if not isinstance(name, str) or not isinstance(value, (bool, int, float, str)):
            raise ConfigError(
                f"{key}: Flower config values are numbers, text or true/false, got "
                f"{show(name)}: {show(value)}"
            )


def _check_rank_pattern(pattern: Mapping[str, object], kind: str, key: str) -> None:
    """peft's ``rank_pattern``: module keys (names or regexes) to ranks in 1..MAX_RANK, for a
    real peft model (the network-only shape takes ``learner.shape.layer_ranks``)."""
    if kind != "lora":
        raise ConfigError(
            f"{key}: names modules of the peft model that learner.kind: lora trains, and "
            f"learner.kind is {kind!r}; network-only runs fix layer ranks with "
            "learner.shape.layer_ranks"
        )
    if not pattern:
        raise ConfigError(f"{key}: expected at least one module key, got {{}}; use null for none")
    for name, rank in pattern.items():
        try:
            re.compile(name)
        except re.error as err:
            raise ConfigError(
                f"{key}: {name!r} is not a module name or regular expression ({err})"
            ) from None
        if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= MAX_RANK:
            raise ConfigError(
                f"{key}.{key_text(name)}: a rank is an integer in [1, {MAX_RANK:,}], got "
                f"{show(rank)}"
            )


def _check_layer_ranks(ranks: list[int | None], n_layers: int, key: str) -> None:
    """One rank in 1..MAX_RANK or null per adapted layer, at least one null (a layer that
    trains at the controller's rank)."""
    if len(ranks) != n_layers:
        raise ConfigError(
            f"{key}: one entry per layer of learner.shape.layer_shapes ({n_layers}), got "
            f"{len(ranks)}"
        )
    for i, rank in enumerate(ranks):
        if rank is not None and not 1 <= rank <= MAX_RANK:
            raise ConfigError(
                f"{key}[{i}]: a rank is an integer in [1, {MAX_RANK:,}] or null, got {show(rank)}"
            )
    if None not in ranks:
        raise ConfigError(
            f"{key}: every layer has a fixed rank, so the controller's rank would adapt none; "
            "leave at least one entry null"
        )


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.3g} GiB"


#: ``compression.sparsifier`` that sends every value (no stage).
NO_STAGE = "none"


def _stage(config: Mapping[str, Any]) -> tuple[str, float | None]:
    """The compression stage (sparsifier, fixed ratio or None) of a run's resolved config (plain
    data): a null key takes the algorithm's own stage (its cost model's ``OWN_STAGE``, read
    through the registry), the rule of ``wirelessfl.algorithms.compression.resolve_compression``
    (tests/wirelessfl/test_label_applicability.py holds the two to the same answers)."""
    section = config.get("compression") or {}
    algorithm = (config.get("algorithm") or {}).get("name", AlgorithmConfig.name)
    own = ALGORITHMS.load(algorithm).CostModel.OWN_STAGE
    sparsifier = section.get("sparsifier")
    sparsifier = own.sparsifier if sparsifier is None else sparsifier
    ratio = section.get("ratio")
    if ratio is None and sparsifier == own.sparsifier:
        ratio = own.ratio
    return sparsifier, ratio


def _stage_active(config: Mapping[str, Any]) -> bool:
    """Whether the run's compression stage sparsifies anything."""
    return _stage(config)[0] != NO_STAGE


def _stage_follows_controller(config: Mapping[str, Any]) -> bool:
    """Whether the controller's ratio reaches the run's messages: a stage without a fixed ratio
    (otherwise O is moot: a stage that sends everything, or a fixed ``compression.ratio``)."""
    sparsifier, ratio = _stage(config)
    return sparsifier != NO_STAGE and ratio is None


def _controller_reads(setting: str) -> Callable[[Mapping[str, Any]], bool]:
    """The ``applies`` rule of ``controller.<setting>``: the run's controller reads it (it is not
    among the registered class's ``IGNORED_SETTINGS``: the fixed controller's ratio and share
    rule do not reach tsfa, osfa or sketch). A config that names no controller (not a resolved
    one) is not judged: the setting applies."""

    def reads(config: Mapping[str, Any]) -> bool:
        name = (config.get("controller") or {}).get("name")
        return name is None or setting not in CONTROLLERS.load(name).IGNORED_SETTINGS

    return reads


def _controller_keeps_budget(config: Mapping[str, Any]) -> bool:
    """``controller.energy_budget_j``: the run's controller has an online stage that keeps a
    budget (``SUPPORTS_ENERGY_BUDGET``); a config naming no controller is not judged."""
    name = (config.get("controller") or {}).get("name")
    return name is None or bool(CONTROLLERS.load(name).SUPPORTS_ENERGY_BUDGET)


def _ratio_reaches_messages(config: Mapping[str, Any]) -> bool:
    """``controller.sparsification``: the fixed ratio O reaches a run's messages when its
    controller reads it and its compression stage follows the controller."""
    return _controller_reads("sparsification")(config) and _stage_follows_controller(config)


def _stage_weighs_importance(config: Mapping[str, Any]) -> bool:
    """Whether the run's sparsifier computes importance weights (SOFT's eq. 3)."""
    sparsifier = _stage(config)[0]
    return sparsifier != NO_STAGE and bool(SPARSIFIERS.load(sparsifier).takes_importance)


@dataclass
class FadingConfig:
    """Small-scale fading model (``channels.make_fading``)."""

    model: str = option("rayleigh", choices=FADING_MODELS, doc="a channels.FADING_MODELS name")
    rho: float | None = option(None, ge=0.0, le=1.0, doc="Gauss-Markov correlation per round")
    doppler_hz: float | None = option(None, ge=0.0, doc="Doppler for rho = J0(2 pi f_d T)")
    slot_s: float | None = option(None, gt=0.0, doc="round duration T for the Jakes rho")
    k_factor: float = option(3.0, ge=0.0, doc="Rician K-factor (linear)")
    params: dict[str, object] = option(
        default_factory=dict, doc="keyword arguments of a user-registered fading model"
    )

    def validate(self, prefix: str) -> None:
        _check_option_names(self.params, f"{prefix}.params")
        if self.params and self.model in _FADING_OWN_KEYS:
            raise ConfigError(
                f"{prefix}.params: only for a user-registered fading model, not {self.model!r} "
                f"({_FADING_OWN_KEYS[self.model]}); got {key_text(next(iter(self.params)))}"
            )

    def model_kwargs(self) -> dict:
        if self.model == "gauss_markov":
            if self.rho is not None:
                return {"rho": self.rho}
            return {"doppler_hz": self.doppler_hz, "slot_s": self.slot_s}
        if self.model == "rician":
            return {"k_factor": self.k_factor}
        return dict(self.params)


@dataclass
class ChannelConfig:
    """FDMA uplink: bandwidth, large-scale geometry or a fixed mean SNR, noise, fading."""

    bandwidth_hz: float = option(1.0e6, gt=0.0, doc="total uplink bandwidth B")
    mean_snr_db: float | None = option(
        None,
        ge=-MAX_DB,
        le=MAX_DB,
        doc="if set, every client has this mean SNR (geometry keys are ignored)",
    )
    d_min_m: float = option(10.0, gt=0.0, doc="inner cell radius")
    d_max_m: float = option(500.0, gt=0.0, doc="outer cell radius")
    path_loss_exponent: float = option(
        1.5, gt=0.0, doc="gamma in h = s q^-gamma (amplitude; power falls as q^-2 gamma)"
    )
    tx_power_dbm: float = option(23.0, ge=-MAX_DB, le=MAX_DB, doc="client transmit power")
    reference_gain_db: float = option(
        -35.0,
        ge=-MAX_DB,
        le=0.0,
        doc="path gain at 1 m, folded into the transmit power (q^-gamma has none)",
    )
    noise_psd_dbm_per_hz: float = option(
        -174.0, ge=-MAX_DB, le=MAX_DB, doc="noise spectral density"
    )
    noise_figure_db: float = option(7.0, ge=0.0, le=MAX_DB, doc="receiver noise figure")
    noise_bandwidth: str = option(
        "band",
        choices=NOISE_BANDWIDTHS,
        doc="the noise a client's share sees: band (of the whole band B, rate b B log2(1 + "
        "SNR)) | share (of its share b B, rate b B log2(1 + SNR / b)); SNR is the whole-band "
        "SNR at the client's power",
    )
    shadowing_sigma_db: float = option(
        0.0, ge=0.0, le=100.0, doc="log-normal shadowing std (6 sigma stays within 600 dB)"
    )
    fading: FadingConfig = field(default_factory=FadingConfig)
    path_loss: PathLossConfig = field(default_factory=PathLossConfig)
    power_control: str = option(
        "fixed",
        choices=POWER_CONTROLS,
        doc="client transmit power: fixed (tx_power_dbm) | per_class (tx_power_dbm_by_class) | "
        "fractional (3GPP open loop: min(tx_power_dbm, p0_dbm + alpha PL)) | a user-registered "
        "model (channels.POWER_CONTROLS)",
    )
    tx_power_dbm_by_class: dict[str, float] = option(
        default_factory=dict, doc="power_control per_class: {device class: dBm}"
    )
    p0_dbm: float = option(-90.0, ge=-202.0, le=24.0, doc="power_control fractional: P0")
    power_control_alpha: float = option(
        0.8, ge=0.0, le=1.0, doc="power_control fractional: path-loss compensation alpha"
    )
    power_control_params: dict[str, object] = option(
        default_factory=dict, doc="keyword arguments of a user-registered power control"
    )
    snr_trace: str | None = option(
        None,
        doc="per-round SNRs from a file, .npy or .csv of shape rounds x clients in dB (replaces "
        "geometry and fading; relative to the working directory)",
    )
    downlink_rate_bps: float = option(
        0.0,
        ge=0.0,
        doc="the server's downlink rate R: a synchronous broadcast reaches every client at R, "
        "the event-driven modes' concurrent downloads share it (R / n each); 0 = "
        "instantaneous downlink (the paper)",
    )
    block_rounds: int = option(
        128,
        ge=1,
        doc="rounds of fading drawn per block (memory/speed); n_clients x block_rounds x 40 B "
        "must stay within 4 GiB",
    )
    uplink: str = option(
        "fdma",
        choices=UPLINKS,
        doc="an uplink registry name: fdma (digital uploads on bandwidth shares) | aircomp "
        "(analog over-the-air sum of the updates on the whole band, channel.aircomp)",
    )
    uplink_params: dict[str, object] = option(
        default_factory=dict,
        doc="the settings of an uplink that takes them (noma: sic_residual; a user-registered "
        "one's), passed to it by name; fdma and aircomp take none (aircomp's are "
        "channel.aircomp)",
    )
    aircomp: AirCompConfig = field(default_factory=AirCompConfig)

    def validate(self, prefix: str) -> None:
        if self.mean_snr_db is None and self.d_min_m >= self.d_max_m:
            raise ConfigError(
                f"{prefix}.d_min_m: must be < d_max_m ({self.d_max_m}), got {self.d_min_m}"
            )
        check_per_class(
            f"{prefix}.tx_power_dbm_by_class", self.tx_power_dbm_by_class, -MAX_DB, MAX_DB
        )
        _check_option_names(self.power_control_params, f"{prefix}.power_control_params")
        _check_option_names(self.uplink_params, f"{prefix}.uplink_params")
        if self.power_control_params and self.power_control in ("fixed", "per_class", "fractional"):
            raise ConfigError(
                f"{prefix}.power_control_params: only for a user-registered power control, not "
                f"{self.power_control!r} (it is set by tx_power_dbm, tx_power_dbm_by_class, p0_dbm "
                "and power_control_alpha)"
            )
        if self.mean_snr_db is not None or self.snr_trace is not None:
            given = "mean_snr_db" if self.snr_trace is None else "snr_trace"
            if self.path_loss.model != "single_slope" or self.power_control != "fixed":
                what = (
                    f"path_loss.model {self.path_loss.model!r}"
                    if self.path_loss.model != "single_slope"
                    else f"power_control {self.power_control!r}"
                )
                raise ConfigError(
                    f"{prefix}.{given}: gives the SNRs directly, so {what} has nothing to act "
                    f"on; remove {given} (a geometric cell) or the {what.split()[0]} setting"
                )
        if self.mean_snr_db is not None and self.snr_trace is not None:
            raise ConfigError(
                f"{prefix}.snr_trace: replaces the channel; remove mean_snr_db "
                f"({self.mean_snr_db:g}) or snr_trace"
            )

    @property
    def geometric(self) -> bool:
        """Client positions, path loss and transmit power make the SNRs."""
        return self.mean_snr_db is None and self.snr_trace is None


@dataclass
class DevicesConfig:
    """Per-client compute speed (``channels.DeviceProfile``)."""

    kind: str = option(
        "fixed",
        choices=("fixed", "classes", "lognormal", "listed", "trace"),
        doc="profile kind (trace: FLOP/s per client from devices.trace)",
    )
    flops_per_s: float = option(1.0e12, ge=1.0, doc="FLOP/s of every device (kind=fixed)")
    classes: dict[str, float] = option(
        default_factory=dict, doc="device class -> probability (kind=classes)"
    )
    median_flops_per_s: float = option(1.0e12, ge=1.0, doc="median FLOP/s (kind=lognormal)")
    sigma: float = option(
        0.5, ge=0.0, le=10.0, doc="log-std of FLOP/s (kind=lognormal; <= 10 keeps every draw > 0)"
    )
    per_client_flops_per_s: list[float] = option(
        default_factory=list, doc="FLOP/s of client 0, 1, ... (kind=listed; one per client)"
    )
    include_compute: bool = option(True, doc="false: local training takes no virtual time")
    trace: str | None = option(
        None,
        doc="kind=trace: CSV client,flops_per_s or FedScale device JSON (docs/simulator.md); "
        "relative to the working directory",
    )
    flops_per_sample: float | None = option(
        None, gt=0.0, doc="kind=trace with FedScale JSON: FLOPs of one training sample"
    )
    energy: EnergyConfig = field(default_factory=EnergyConfig)

    def validate(self, prefix: str) -> None:
        if (self.kind == "trace") != (self.trace is not None):
            raise ConfigError(
                f"{prefix}.trace: a compute trace goes with kind: trace (and only with it); "
                f"kind is {self.kind!r}, trace is {show(self.trace)}"
            )
        # each value >= 1, as flops_per_s (finite: the loader checks); the count needs
        # n_clients and is checked by Scenario.validate
        for i, value in enumerate(self.per_client_flops_per_s):
            if not value >= 1.0:
                raise ConfigError(
                    f"{prefix}.per_client_flops_per_s[{i}]: must be >= 1.0, got {show(value)}"
                )


#: eta and E of the bound when no learner trains with them (the surrogate, plug-in learners):
#: the values these keys had before they followed the learner (network-only runs unchanged).
NETWORK_ONLY_ETA = 1.0e-3
NETWORK_ONLY_E = 5

_log = logging.getLogger(__name__)
_warned: set[str] = set()  # each distinct warning once per process (a sweep loads many times)


def _warn_once(message: str) -> None:
    """One line on stderr through :mod:`logging` (as ``optim`` warns), once per process."""
    if message not in _warned:
        _warned.add(message)
        _log.warning("wirelessfl: warning: %s", message)


@dataclass
class ConstantsConfig:
    """Theorem 1 constants (``optim.BoundConstants``); defaults documented in optim.bound.

    ``eta`` and ``E`` are the learning rate and the local iterations of the round the bound
    describes. Left null they follow the learner (:meth:`Scenario.validate` resolves them, so
    ``config.yaml`` holds numbers): with ``learner.kind = lora``, eta = ``learner.lr`` and
    E = ``learner.local_steps`` when ``learner.local_unit = steps``. With ``local_unit =
    epochs`` the steps a round takes depend on a client's data and are known only at run time:
    E stays at 5 (or what is given) and a null E is warned about. With the surrogate (no
    training) they are 1e-3 and 5. Values given that differ from the learner's are kept (the
    scenario says so) and warned about in one line.
    """

    S: float = option(1.0, ge=0.0, doc="smoothness")
    H: float = option(1.0, ge=0.0, doc="LoRA rank-error constant (Assumption 2)")
    W: float = option(1.0, ge=0.0, doc="largest singular value bound")
    phi: float = option(0.1, ge=0.0, doc="covariance constant (Assumption 3)")
    G: float = option(1.0, ge=0.0, doc="gradient norm bound")
    eta: float | None = option(
        None,
        gt=0.0,
        doc="learning rate in the bound (null: learner.lr with learner.kind = lora, else 1e-3)",
    )
    E: int | None = option(
        None,
        ge=1,
        doc="local iterations in the bound (null: learner.local_steps with learner.kind = lora "
        "and local_unit = steps, else 5)",
    )

    def resolve(self, learner: LearnerConfig) -> list[str]:
        """Fill a null ``eta`` / ``E`` from ``learner``; return the warnings (one line each).

        A warning for a given value that differs from what the learner trains with, and for a
        null E that cannot be derived (``local_unit = epochs``).
        """
        trains = learner.kind == "lora"
        lines = []
        if self.eta is None:
            self.eta = float(learner.lr) if trains else NETWORK_ONLY_ETA
        elif trains and self.eta != learner.lr:
            lines.append(
                f"constants.eta = {self.eta:g} differs from learner.lr = {learner.lr:g}: the bound "
                "(and the rank and O^t chosen from it) uses constants.eta; leave it out to use "
                "learner.lr"
            )
        steps = trains and learner.local_unit == "steps"
        if self.E is None:
            self.E = int(learner.local_steps) if steps else NETWORK_ONLY_E
            if trains and not steps:
                lines.append(
                    f"constants.E = {self.E} (the default): learner.local_unit = epochs, and the "
                    f"local steps that {learner.local_steps} epoch(s) take are known only at run "
                    "time; set constants.E to the local steps of a round"
                )
        elif steps and learner.local_steps != self.E:
            lines.append(
                f"constants.E = {self.E} differs from learner.local_steps = "
                f"{learner.local_steps}: the bound (and the rank and O^t chosen from it) uses "
                "constants.E; leave it out to use learner.local_steps"
            )
        return lines


@dataclass
class ControllerConfig:
    """How rank r, sparsification O^t and shares b_k^t are chosen (registry name)."""

    name: str = option("tsfa", choices=CONTROLLERS, doc="a controller registry name")
    V: float = option(1.0e-4, ge=0.0, doc="Lyapunov penalty weight")
    d_th_s: float = option(
        1.0,
        gt=0.0,
        doc="average upload-delay threshold D_th (event-driven modes: the time-average "
        "compute + upload latency per update)",
    )
    o_min: float = option(0.05, gt=0.0, lt=1.0, doc="minimum sparsification ratio O_min")
    r_max: int = option(
        64, ge=1, le=MAX_RANK, doc="largest rank considered (TSFA) / r_max of the bound"
    )
    rank: int = option(
        8, ge=1, doc="rank for osfa, fixed and energy_min; the global rank r for sketch"
    )
    k_min: int = option(
        1, ge=1, doc="sketch: smallest per-client sketch size k_i (<= controller.rank)"
    )
    sparsification: float = option(
        1.0,
        gt=0.0,
        le=1.0,
        doc="O for the fixed and energy_min controllers",
        applies=_ratio_reaches_messages,
    )
    method: str = option("exact", choices=("exact", "cvxpy"), doc="per-slot solver")
    bits_choices: list[int] | None = option(
        None,
        doc="tsfa/osfa online step: the quantiser's bits per sent LoRA value b it chooses each "
        "round with O^t or r^t (each in [2, 16], or payload.bits_per_value: unquantised; "
        "docs/solvers.md); null: the quantize section's b every round",
        applies=_controller_reads("bits_choices"),
    )
    bandwidth: str = option(
        "equal_delay",
        choices=("equal_delay", "minmax"),
        doc="share rule (fixed controller)",
        applies=_controller_reads("bandwidth"),
    )
    offline_channel: str = option(
        "mean_snr",
        choices=("mean_snr", "expected_rate"),  # optim.offline.OFFLINE_CHANNELS
        doc="TSFA offline stage plans with log2(1 + mean SNR) (the paper), or with "
        "E[1/log2(1 + SNR)] under Rayleigh fading above the outage cut-off (docs/solvers.md)",
    )
    energy_budget_j: float | None = option(
        None,
        gt=0.0,
        doc="time-average energy per device per round (event-driven modes: per aggregation; "
        "compute + transmit); a virtual queue per device joins the online stage (osfa, tsfa); "
        "null: no budget",
        applies=_controller_keeps_budget,
    )
    energy_weight: float = option(
        1.0,
        gt=0.0,
        doc="omega: the energy queues' weight in the Lyapunov function, L = Q^2/2 + omega "
        "sum_k Z_k^2/2 [Q in s, Z in J]; the online stage prices omega Z_k E_k (docs/solvers.md, "
        "'The energy queues' weight'); 1: the SI exchange 1 s = 1 J",
        applies=_controller_keeps_budget,
    )
    energy_queue: str = option(
        "every_round",
        choices=("every_round", "at_participation", "signed"),  # optim.ENERGY_QUEUE_RULES
        doc="when a device's energy queue Z_k moves: every_round, Z_k <- max(Z_k + E_k - "
        "budget, 0) each round (event-driven modes: each aggregation) | at_participation, "
        "only in the rounds it spends energy, with the budget of every round since its last "
        "move, so idle rounds' budget is banked (docs/solvers.md, 'Queues updated at "
        "participation') | signed, Z_k <- Z_k + E_k - budget each round with no max, so "
        "unspent budget is credit the step spends at price 0 and the time-average energy "
        "follows the budget (docs/solvers.md, 'The signed queue'); needs energy_budget_j",
        applies=_controller_keeps_budget,
    )
    energy_price: float = option(
        0.0,
        ge=0.0,
        doc="mu: a price on every scheduled device's energy in the online step besides its "
        "queue's, (omega Z_k + mu) E_k: the drift-plus-penalty of the penalty gamma(O) + "
        "(mu / V) sum_k E_k (docs/solvers.md, 'The energy queues' weight'); 0: the queues alone",
        applies=_controller_keeps_budget,
    )
    tx_power_fraction: float | None = option(
        None,
        gt=0.0,
        le=1.0,
        doc="fixed controller: every scheduled client transmits at this fraction of its "
        "power-control power P_max,k (channel.power_control), its SNR scaled alike; null: "
        "P_max,k (docs/simulator.md)",
        applies=_controller_reads("tx_power_fraction"),
    )
    cpu_freq_hz: float | None = option(
        None,
        gt=0.0,
        doc="fixed controller: every scheduled client computes at this clock, in "
        "[devices.energy.cpu_freq_min_hz, devices.energy.cpu_freq_hz] (model: cmos): compute "
        "time x f_max / f, energy kappa f^2 cycles; null: f_max",
        applies=_controller_reads("cpu_freq_hz"),
    )
    radio: str = option(
        "fixed",
        choices=("fixed", "joint"),
        doc="tsfa/osfa online stage: fixed (P3 at full power and clock, the paper) | joint "
        "(ratio, transmit power, CPU clock, shares and round time by optim.solve_joint_step; "
        "needs channel.noise_bandwidth: share and devices.energy.model: cmos)",
        applies=_controller_reads("radio"),
    )
    round_time_s: float = option(
        1.0,
        gt=0.0,
        doc="energy_min controller: completion-time limit T per round, compute + upload [s] "
        "(a round that cannot meet it takes its least time and counts a solver_fallback)",
        applies=_controller_reads("round_time_s"),
    )
    energy_scheme: str = option(
        "joint",
        choices=ENERGY_MIN_METHODS,
        doc="energy_min controller: joint (power, clock and shares, Yang et al.) | "
        "equal_bandwidth | max_power | max_frequency (the paper's baselines)",
        applies=_controller_reads("energy_scheme"),
    )
    offline_outage_prob: float = option(
        0.01,
        gt=0.0,
        lt=1.0,
        doc="expected_rate without faults.outage_snr_db: plan over each client's fading "
        "states above this quantile of its SNR",
    )


@dataclass
class SelectionConfig:
    """Which K of N clients are scheduled each round (``optim.select_clients``)."""

    method: str = option(
        "uniform", choices=SELECTION_METHODS, doc="an optim.SELECTION_METHODS name"
    )
    available_only: bool = option(
        False,
        doc="schedule only clients available this round (false: unavailable clients can be "
        "scheduled and are recorded as unavailable; event-driven: dispatch only clients "
        "available then)",
    )


@dataclass
class PayloadConfig:
    """Uplink payload accounting."""

    bits_per_value: int = option(32, ge=1, le=64, doc="v: bits per transmitted value")
    index_overhead: bool = option(
        False, doc="add index bits of sparse payloads to the upload (the paper does not)"
    )


@dataclass
class AlgorithmConfig:
    """The federated algorithm (``wirelessfl.algorithms``); its settings: ``strategy.<name>``."""

    MOVED_KEYS: ClassVar[dict[str, str]] = {
        **{
            key: f"use strategy.<algorithm>.{key} (an algorithm's settings are its table of "
            "the strategy section)"
            for key in ("sketch_ratio", "ratio_choices", "ratio_by_class", "zeta")
        },
        "sparsifier": "use compression.sparsifier (the compression stage is a section of its own)",
    }

    name: str = option("soft", choices=ALGORITHMS, doc="an algorithm registry name")


@dataclass
class CompressionConfig:
    """The compression stage on any algorithm's shared LoRA tensors (a null key: the
    algorithm's own; ``wirelessfl.algorithms.compression``, docs/algorithms/compression.md)."""

    sparsifier: str | None = option(
        None,
        choices=SPARSIFIERS,
        doc="soft (eq. 3 importance) | topk | random | structured | none | a registered one; "
        "null: the algorithm's own (soft for soft, topk for fedit_topk, none for the others)",
    )
    ratio: float | None = option(
        None,
        gt=0.0,
        le=1.0,
        doc="fraction of each layer's LoRA values sent; null: the controller's O^t (fedit_topk's "
        "own: 0.5)",
        applies=_stage_active,
    )
    error_feedback: bool | None = option(
        None,
        doc="keep unsent values for the next round (eqs. 4-7); null: the algorithm's own (true; "
        "false for fedit_topk)",
        applies=_stage_active,
    )
    importance: str = option(
        "update",
        choices=("update", "factors"),
        doc="soft sparsifier: eq. (3) weights from the update (u = m + Delta) | the local factors",
        applies=_stage_weighs_importance,
    )


def _quantizes(config: Mapping[str, Any]) -> bool:
    """Whether the run quantises: ``quantize.bits`` set, or the controller choosing b."""
    chooses = (config.get("controller") or {}).get("bits_choices")
    return (config.get("quantize") or {}).get("bits") is not None or bool(chooses)


@dataclass
class QuantizeConfig:
    """The quantiser stage on the LoRA values each client sends, after the compression stage
    (``wirelessfl.algorithms.quantization``, docs/algorithms/quantization.md)."""

    bits: int | None = option(
        None,
        ge=2,
        le=16,
        doc="b: bits per sent LoRA value, 1 sign + b - 1 level bits (QSGD stochastic "
        "rounding, s = 2^(b-1) - 1 levels), below payload.bits_per_value; null: no quantiser",
    )
    block_size: int | None = option(
        None,
        ge=1,
        doc="sent values per 32-bit scale (the block's largest magnitude), in each layer's "
        "flat order; null: one scale per layer",
        applies=_quantizes,
    )
    error_feedback: bool = option(
        False,
        doc="keep the quantisation residual in the client's error memory (added to its next "
        "update, with the sparsifier's unsent values)",
        applies=_quantizes,
    )


@dataclass
class ModelShapeConfig:
    """Model geometry used by the surrogate learner for payload and compute sizes."""

    layer_shapes: list[list[int]] = option(
        default_factory=lambda: [[768, 768]] * 24,
        doc="(d, l) per adapted layer; default: ViT-Base query+value, 12 blocks",
    )
    layer_ranks: list[int | None] | None = option(
        None,
        doc="a fixed LoRA rank per adapted layer, aligned with layer_shapes (null entries: the "
        "controller's rank), as learner.rank_pattern fixes them in real training; null: none",
    )
    base_params: int = option(86_000_000, ge=0, doc="frozen parameters (for FLOPs)")
    batch_size: int = option(16, ge=1, doc="local batch size (for FLOPs)")
    seq_len: int = option(197, ge=1, doc="tokens per sample (for FLOPs)")

    def validate(self, prefix: str) -> None:
        key = f"{prefix}.layer_shapes"
        shapes = self.layer_shapes
        if not shapes:
            raise ConfigError(f"{key}: expected at least one [d, l] pair, got []")
        if len(shapes) > MAX_LAYERS:
            raise ConfigError(f"{key}: at most {MAX_LAYERS:,} adapted layers, got {len(shapes):,}")
        for i, pair in enumerate(shapes):
            if len(pair) != 2:
                raise ConfigError(
                    f"{key}[{i}]: expected a pair [d, l] of layer sizes, got {show(pair)}"
                )
            for side in pair:
                if not 1 <= side <= MAX_LAYER_SIDE:
                    raise ConfigError(
                        f"{key}[{i}]: layer sizes must be integers in [1, {MAX_LAYER_SIDE:,}], "
                        f"got {show(pair)}"
                    )
        if self.layer_ranks is not None:
            _check_layer_ranks(self.layer_ranks, len(shapes), f"{prefix}.layer_ranks")


@dataclass
class LearnerConfig:
    """The learning side: a surrogate (network-only) or real federated LoRA training."""

    #: Keys that used to be here: one line saying where they went (read by ``schema.build``).
    MOVED_KEYS: ClassVar[dict[str, str]] = {
        "zeta": "moved to strategy.zeta: eq. (2)'s orthogonality regularizer is a setting of "
        "the algorithm (null, the default: SOFT trains with it, the baselines without)",
    }

    kind: str = option(
        "surrogate",
        choices=LEARNERS,
        doc="surrogate (network-only) | lora (real training) | flower (Flower clients; "
        "docs/flower.md)",
    )
    # surrogate
    initial_loss: float = option(2.3, gt=0.0, doc="surrogate: loss at round 0")
    progress_rate: float = option(0.02, gt=0.0, le=1.0, doc="surrogate: progress per round")
    bound_half: float = option(
        1.0e4, gt=0.0, doc="surrogate: bound gamma at which the loss floor is half the start"
    )
    n_classes: int = option(10, ge=2, doc="surrogate: classes (chance accuracy)")
    shape: ModelShapeConfig = field(default_factory=ModelShapeConfig)
    # real training (kind = lora)
    model: str = option(
        "tiny_mlp", choices=MODELS, prefixes=(HUB_PREFIX,), doc="model registry name (kind=lora)"
    )
    dataset: str = option(
        "digits", choices=DATASETS, prefixes=(HUB_PREFIX,), doc="dataset name (kind=lora)"
    )
    dataset_options: dict[str, object] = option(default_factory=dict, doc="loader options")
    partition: str = option("iid", choices=PARTITIONERS, doc="partitioner registry name")
    partition_options: dict[str, object] = option(default_factory=dict, doc="partitioner options")
    target_modules: list[str] | None = option(None, doc="LoRA targets (null: model default)")
    model_options: dict[str, object] = option(
        default_factory=dict,
        doc="options of the model's builder (hub: dtype float32|bfloat16|float16, revision, "
        "trust_remote_code, attn_implementation, cache_dir, answers, ...; docs/models.md)",
    )
    lora_alpha: float = option(16.0, gt=0.0, doc="LoRA alpha (scaling alpha/r)")
    lora_dropout: float = option(0.0, ge=0.0, lt=1.0, doc="dropout on the LoRA input (peft)")
    use_rslora: bool = option(False, doc="rank-stabilised LoRA: scaling alpha/sqrt(r) (peft)")
    use_dora: bool = option(
        False,
        doc="DoRA (peft use_dora): a trained magnitude per output feature of each adapted "
        "layer, sent dense with the head; sequential trainer only",
    )
    layers_to_transform: list[int] | None = option(
        None,
        doc="adapt only the target modules in these blocks (peft layers_to_transform: the "
        "block index is the number in the module's path); null: every block",
    )
    rank_pattern: dict[str, object] | None = option(
        None,
        doc="a fixed LoRA rank per matched target module, e.g. {fc1: 8} (peft rank_pattern: a "
        "key matches a module named by it or ending in '.key', or a regex); the other adapted "
        "layers train at the controller's rank; null: none",
    )
    lora_bias: str = option(
        "none",
        choices=("none", "all", "lora_only"),
        doc="biases that train and are sent dense: none | all (every bias) | lora_only (those "
        "of the LoRA targets) (peft's bias)",
    )
    modules_to_save: list[str] | None = option(
        None, doc="more modules trained in full and sent dense, besides the task head (peft)"
    )
    init_lora_weights: bool | str = option(
        True,
        doc="LoRA init (peft): true (kaiming A, B = 0) | gaussian (gaussian A, B = 0) | false "
        "(random A and B: the run starts away from the base model)",
    )
    local_steps: int = option(5, ge=1, doc="E local iterations")
    local_unit: str = option("steps", choices=("steps", "epochs"), doc="E counts steps or epochs")
    batch_size: int = option(16, ge=1, doc="local batch size")
    optimizer: str = option("sgd", choices=("sgd", "adam"), doc="local optimizer")
    lr: float = option(0.05, gt=0.0, doc="local learning rate")
    keep_optimizer_state: bool = option(False, doc="keep Adam moments between a client's rounds")
    eval_batch_size: int = option(256, ge=1, doc="evaluation batch size")
    head: str = option(
        "train",
        choices=("train", "frozen"),
        doc="train: the task head trains and is sent dense; frozen: it keeps its seeded random "
        "init, only LoRA trains and is sent",
    )
    trainer: str = option(
        "auto",
        choices=("auto", "sequential", "batched"),
        doc="auto: batched on CUDA, sequential (the peft reference) on the CPU",
    )
    device: str = option("auto", choices=("auto", "cpu", "cuda"), doc="torch device")
    executor: str = option(
        "local",
        choices=("local", "ray"),
        doc="where a round's clients train: local (this process) | ray (Ray actors, same "
        "results; docs/scale-out.md)",
    )
    ray_address: str | None = option(
        None,
        doc="executor=ray: the cluster, host:port or ray://host:port (null: RAY_ADDRESS, else a "
        "local Ray instance started by the run)",
    )
    ray_workers: int | None = option(
        None,
        ge=1,
        le=MAX_RAY_WORKERS,
        doc="executor=ray: training actors (null: one per GPU of the cluster; without GPUs its "
        "CPUs / torch threads per process; at most n_scheduled)",
    )

    # Flower clients (kind = flower)
    client_fn: str | None = option(
        None,
        doc="flower: 'module:attribute' naming a flwr ClientApp, a client_fn(context) -> Client "
        "or a client_fn(client_id) -> NumPyClient (docs/flower.md)",
    )
    initial_parameters: str | None = option(
        None,
        doc="flower: the initial global parameters, 'module:attribute' (a list of numpy arrays "
        "or an ArrayRecord) or a .npz file (null: client 0's get_parameters)",
    )
    run_config: dict[str, object] = option(
        default_factory=dict, doc="flower: the clients' context.run_config (numbers, text, bools)"
    )
    train_config: dict[str, object] = option(
        default_factory=dict,
        doc="flower: the train message's config record (fit's config) besides server-round",
    )
    evaluate_config: dict[str, object] = option(
        default_factory=dict,
        doc="flower: the evaluate message's config record (evaluate's config) besides server-round",
    )
    client_flops: float = option(
        0.0, ge=0.0, doc="flower: FLOPs of a client's fit, unless its metrics report 'flops'"
    )

    def validate(self, prefix: str) -> None:
        _check_option_names(self.dataset_options, f"{prefix}.dataset_options")
        _check_option_names(self.partition_options, f"{prefix}.partition_options")
        _check_option_names(self.model_options, f"{prefix}.model_options")
        if self.init_lora_weights not in LORA_INITS:
            raise ConfigError(
                f"{prefix}.init_lora_weights: must be true, false or 'gaussian', got "
                f"{show(self.init_lora_weights)} (peft's pissa, olora, orthogonal, eva, corda, "
                "loftq and mica change the base weights or need data; the rank truncation of "
                "lower-rank clients and export's base_model.json assume an unchanged base)"
            )
        for key in ("run_config", "train_config", "evaluate_config"):
            _check_flower_values(getattr(self, key), f"{prefix}.{key}")
        if self.rank_pattern is not None:
            _check_rank_pattern(self.rank_pattern, self.kind, f"{prefix}.rank_pattern")
        if self.executor != "local" and self.kind != "lora":
            raise ConfigError(
                f"{prefix}.executor: {self.executor!r} farms out real training, and "
                f"{prefix}.kind {self.kind!r} has none; use executor: local"
            )
        for key in ("ray_address", "ray_workers"):
            if getattr(self, key) is not None and self.executor != "ray":
                raise ConfigError(
                    f"{prefix}.{key}: used only with {prefix}.executor: ray (it is "
                    f"{self.executor!r}); remove it or set executor: ray"
                )


@dataclass
class FaultsConfig:
    """Simulated faults, each off by default."""

    dropout_prob: float = option(
        0.0, ge=0.0, lt=1.0, doc="P(scheduled client drops) per round (event-driven: per dispatch)"
    )
    outage_snr_db: float | None = option(
        None,
        ge=-MAX_DB,
        le=MAX_DB,
        doc="uploads below this SNR fail (the client gets no bandwidth)",
    )
    deadline_s: float | None = option(
        None,
        gt=0.0,
        doc="server aggregates what arrived this long after the broadcast (event-driven: an "
        "update still in flight this long after its dispatch is cut)",
    )
    redistribute_unused: bool = option(
        False, doc="give dropped clients' shares to the others (pro rata)"
    )


def _read_by_mode(key: str) -> Callable[[Mapping[str, Any]], bool]:
    """The ``applies`` rule of the ``server`` key ``key``: the run's mode reads it (its
    ``READS``, ``wirelessfl.servers.base.ServerMode``)."""

    def reads(config: Mapping[str, Any]) -> bool:
        mode = (config.get("server") or {}).get("mode", "sync")
        return mode in SERVER_MODES and key in SERVER_MODES.load(mode).READS

    return reads


@dataclass
class ServerConfig:
    """How the server runs its rounds: synchronous rounds, or one of the event-driven modes
    (FedAsync, FedBuff, semi-synchronous; docs/simulator.md, "Asynchronous rounds")."""

    mode: str = option(
        "sync",
        choices=SERVER_MODES,
        doc="sync (rounds of K clients) | async (FedAsync: mix each arrival) | buffered "
        "(FedBuff: aggregate every buffer_size arrivals) | semi_sync (aggregate every "
        "deadline_s, late updates carried over) | a registered server mode",
    )
    concurrency: int | None = option(
        None,
        ge=1,
        le=MAX_CLIENTS,
        doc="clients training at once in the event-driven modes (null: n_scheduled)",
        applies=_read_by_mode("concurrency"),
    )
    dispatch: str = option(
        "random",
        choices=("random", "controller"),
        doc="who starts when a slot frees: random (uniform among the eligible clients: the "
        "idle ones, the available ones with selection.available_only) | controller (the "
        "eligible client of least per-dispatch drift-plus-penalty; tsfa, osfa)",
        applies=_read_by_mode("dispatch"),
    )
    alpha: float = option(
        0.6,
        gt=0.0,
        le=1.0,
        doc="async: FedAsync's mixing weight alpha",
        applies=_read_by_mode("alpha"),
    )
    staleness: str = option(
        "polynomial",
        choices=STALENESS,
        doc="s(tau) weighting a stale update: constant (1) | polynomial ((tau + 1)^-a; a = 0.5 "
        "is FedBuff's 1/sqrt(1 + tau)) | hinge (1 for tau <= b, else 1 / (a (tau - b) + 1)) "
        "| a registered staleness function",
        applies=_read_by_mode("staleness"),
    )
    staleness_a: float = option(
        0.5, ge=0.0, doc="a of the polynomial and hinge staleness functions"
    )
    staleness_b: float = option(4.0, ge=0.0, doc="b of the hinge staleness function")
    buffer_size: int = option(
        10,
        ge=1,
        doc="buffered: FedBuff's M, arrivals per aggregation",
        applies=_read_by_mode("buffer_size"),
    )
    server_lr: float = option(
        1.0,
        gt=0.0,
        doc="buffered and semi_sync: FedBuff's server learning rate eta_g",
        applies=_read_by_mode("server_lr"),
    )
    deadline_s: float | None = option(
        None,
        gt=0.0,
        doc="semi_sync: virtual time between aggregations (required there, refused elsewhere)",
    )

    @property
    def event_driven(self) -> bool:
        """Whether the run is one of the event-driven modes (``wirelessfl.sim.async_engine``)."""
        return bool(SERVER_MODES.load(self.mode).EVENT_DRIVEN)

    def validate(self, prefix: str) -> None:
        reads = "deadline_s" in SERVER_MODES.load(self.mode).READS
        if reads != (self.deadline_s is not None):
            readers = [
                m for m in SERVER_MODES.names() if "deadline_s" in SERVER_MODES.load(m).READS
            ]
            raise ConfigError(
                f"{prefix}.deadline_s: {' and '.join(readers)} aggregates every deadline_s (and "
                f"only it reads it); mode is {self.mode!r}, deadline_s is {show(self.deadline_s)}"
            )


@dataclass
class OutputConfig:
    """What the results folder records."""

    events: bool = option(True, doc="write events.csv (one row per event)")
    clients: bool = option(False, doc="write clients.csv (one row per client per round)")
    checkpoint_every: int = option(
        0, ge=0, doc="checkpoint at least every this many rounds (0: by wall time only)"
    )
    checkpoint_interval_s: float = option(
        2.0, gt=0.0, doc="checkpoint when this much wall time passed since the last one"
    )
    tensorboard: bool = option(
        False, doc="write every numeric rounds.csv column as TensorBoard scalars to tensorboard/"
    )
    tensorboard_dir: str | None = option(
        None,
        doc="output.tensorboard: a shared log folder instead of <run>/tensorboard; the run "
        "writes into <dir>/<run folder's name> (a relative dir is taken from the run folder)",
    )

    def validate(self, prefix: str) -> None:
        if self.tensorboard_dir is not None and not self.tensorboard:
            raise ConfigError(
                f"{prefix}.tensorboard_dir: used only with {prefix}.tensorboard: true; set it "
                "or remove tensorboard_dir"
            )
        if self.tensorboard_dir is not None and not self.tensorboard_dir.strip():
            raise ConfigError(f"{prefix}.tensorboard_dir: expected a folder path, got ''")


@dataclass
class Scenario:
    """A complete run description (see the shipped ``wirelessfl/scenarios/*.yaml``)."""

    name: str = option("scenario", doc="label")
    seed: int = option(0, ge=0, le=2**63 - 1, doc="run seed (all streams derive from it)")
    n_clients: int = option(100, ge=1, le=MAX_CLIENTS, doc="N")
    n_scheduled: int = option(10, ge=1, doc="K scheduled per round")
    rounds: int = option(1000, ge=1, le=MAX_ROUNDS, doc="T")
    eval_every: int = option(10, ge=1, doc="evaluate every this many rounds (and the last)")
    eval_initial: bool | None = option(
        None,
        doc="also evaluate the global state before round 0 (virtual time 0), into meta.json's "
        "initial_evaluation; null: when eval_every > 1",
    )
    channel: ChannelConfig = field(default_factory=ChannelConfig)
    devices: DevicesConfig = field(default_factory=DevicesConfig)
    mobility: MobilityConfig = field(default_factory=MobilityConfig)
    availability: AvailabilityConfig = field(default_factory=AvailabilityConfig)
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    constants: ConstantsConfig = field(default_factory=ConstantsConfig)
    selection: SelectionConfig = field(default_factory=SelectionConfig)
    payload: PayloadConfig = field(default_factory=PayloadConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    compression: CompressionConfig = field(default_factory=CompressionConfig)
    quantize: QuantizeConfig = field(default_factory=QuantizeConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    strategy: Any = settings_option(
        "algorithm",
        ALGORITHMS,
        doc="the algorithms' settings, a table per algorithm (strategy.<name>.<key>); keys "
        "directly under strategy are the running algorithm's",
        others="strategy_tables",
    )
    strategy_tables: dict[str, Any] = hidden_option(
        doc="the settings tables of the algorithms that do not run (validated, kept, written back)"
    )
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    faults: FaultsConfig = field(default_factory=FaultsConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    plugins: list[str] = option(
        default_factory=list,
        doc="modules or .py files (relative to the scenario file) imported before the scenario "
        "is validated, to register plug-ins; --plugin adds more; runs list them resolved",
    )

    @property
    def evaluates_initial(self) -> bool:
        """Whether the run evaluates the global state before round 0 (``eval_initial``; null:
        when ``eval_every`` > 1, where the first evaluated round is not round 0)."""
        return self.eval_every > 1 if self.eval_initial is None else bool(self.eval_initial)

    def validate(self, prefix: str) -> None:
        values = self.n_clients * self.channel.block_rounds
        if values * FADING_BYTES_PER_VALUE > FADING_BLOCK_BUDGET:
            raise ConfigError(
                f"n_clients x channel.block_rounds = {self.n_clients:,} x "
                f"{self.channel.block_rounds:,} = {values:,} values "
                f"({_gib(values * FADING_BYTES_PER_VALUE)} at ~{FADING_BYTES_PER_VALUE} bytes "
                f"each) exceeds the {_gib(FADING_BLOCK_BUDGET)} limit on one fading block; "
                "lower channel.block_rounds or n_clients"
            )
        if self.n_scheduled > self.n_clients:
            raise ConfigError(
                f"n_scheduled: must be <= n_clients ({self.n_clients}), got {self.n_scheduled}"
            )
        if self.controller.rank > self.controller.r_max:
            raise ConfigError(
                f"controller.rank: must be <= controller.r_max ({self.controller.r_max}), "
                f"got {self.controller.rank}"
            )
        if self.controller.name == "sketch" and self.controller.k_min > self.controller.rank:
            raise ConfigError(
                f"controller.k_min: must be <= controller.rank ({self.controller.rank}), "
                f"got {self.controller.k_min}"
            )
        n_listed = len(self.devices.per_client_flops_per_s)
        if self.devices.kind == "listed" and n_listed != self.n_clients:
            raise ConfigError(
                f"devices.per_client_flops_per_s: has {n_listed:,} values for n_clients = "
                f"{self.n_clients:,} (devices.kind: listed gives one FLOP/s per client)"
            )
        bits = self.quantize.bits
        if bits is not None and bits >= self.payload.bits_per_value:
            raise ConfigError(
                f"quantize.bits: must be below payload.bits_per_value "
                f"({self.payload.bits_per_value}), got {bits}"
            )
        self._validate_wireless()
        self._validate_server()
        UPLINKS.load(self.channel.uplink).check_scenario(self)  # the uplink's own refusals
        self._validate_fixed_ranks()
        self._validate_stages()
        self._validate_privacy()
        for warning in self.constants.resolve(self.learner):
            _warn_once(warning)
        resolve = getattr(self.strategy, "resolve", None)  # settings that depend on others
        if callable(resolve):
            resolve(self)

    def _validate_fixed_ranks(self) -> None:
        """Layers of a fixed rank (``learner.rank_pattern``, ``learner.shape.layer_ranks``) with
        an algorithm whose cost model cannot keep them at it: its one line, at load."""
        lc = self.learner
        key, given = "learner.rank_pattern", lc.rank_pattern
        if lc.kind == "surrogate":
            key, given = "learner.shape.layer_ranks", lc.shape.layer_ranks
        if not given or all(rank is None for rank in given):
            return
        cost = ALGORITHMS.load(self.algorithm.name).CostModel
        if not cost.FIXED_RANKS:
            raise ConfigError(cost.fixed_ranks_refusal(self.algorithm.name, key))

    def _validate_stages(self) -> None:
        """A compression or quantiser stage the algorithm's message cannot take (its cost
        model's ``stage_refusal``): its one line, at load, before any model is built."""
        cost = ALGORITHMS.load(self.algorithm.name).CostModel
        problem = cost.stage_refusal(self.algorithm.name, self)
        if problem is not None:
            raise ConfigError(problem)

    def _validate_privacy(self) -> None:
        """What the DP mechanisms need (docs/privacy.md): real training; for client-level DP
        an aggregate that is a weighted sum of single updates (any server mode); for
        DP-SGD the sequential trainer. Anything else: its one line, at load."""
        pv, algorithm = self.privacy, self.algorithm.name
        if not pv.active:
            return
        key = "privacy.mode" if pv.client_level else "privacy.dp_sgd"
        if self.learner.kind != "lora":
            raise ConfigError(
                f"{key}: needs learner.kind: lora (real training: the noise acts on real "
                f"updates), got {self.learner.kind!r}"
            )
        if pv.dp_sgd and self.learner.trainer == "batched":
            raise ConfigError(
                "privacy.dp_sgd: the batched trainer stacks clients in one step and does not "
                "keep exact per-sample gradients; set learner.trainer: sequential (or auto on "
                "the CPU)"
            )
        cost = ALGORITHMS.load(algorithm).CostModel
        if pv.dp_sgd and not cost.RUNTIME_TRAINER:
            raise ConfigError(
                f"privacy.dp_sgd: algorithm {algorithm!r} trains with trainers of its own, which "
                "take no DP-SGD; use an algorithm trained by the runtime's trainers (fedit, "
                "ffa_lora, soft, fslora, hetlora, ...) or dp_sgd: false"
            )
        if not pv.client_level:
            return
        self._validate_adjacency()
        per_aggregation = updates_per_aggregation(self)
        sigma_b = pv.count_noise if pv.count_noise is not None else per_aggregation / 20.0
        s_b = count_sensitivity(pv.adjacency)
        if pv.adaptive_clipping and sigma_b / s_b <= pv.noise_multiplier:
            need = "2 sigma_b > z" if s_b == 0.5 else "sigma_b > z under adjacency: replace"
            raise ConfigError(
                f"privacy.count_noise: adaptive clipping spends part of z on the noised count, "
                f"which needs {need}; sigma_b = {sigma_b:g} (null: {per_aggregation} / 20, "
                "the updates an aggregation takes), z = "
                f"{pv.noise_multiplier:g}; raise privacy.count_noise"
            )
        if pv.mode == "local" and self.compression.importance == "factors":
            raise ConfigError(
                "compression.importance: factors picks the sparsity mask from the unnoised "
                "local factors, which privacy.mode: local does not cover; use importance: "
                "update (the mask then comes from the noised update)"
            )
        if not ALGORITHMS.load(algorithm).CostModel.SINGLE_UPDATES:
            raise ConfigError(
                f"privacy.mode: {pv.mode} clips and noises a weighted sum of single updates, and "
                f"algorithm {algorithm!r} does not aggregate one; use an algorithm whose "
                "CostModel.SINGLE_UPDATES (fedit, fedit_topk, ffa_lora, soft) or privacy.mode: "
                "none"
            )

    def _validate_adjacency(self) -> None:
        """``privacy.adjacency: add_remove`` where one client absent removes its own term and
        nothing else: central mode, synchronous rounds, a fixed-denominator aggregate
        (docs/privacy.md, "Adjacency"); one line otherwise."""
        pv = self.privacy
        if pv.adjacency != "add_remove":
            return
        other = "or privacy.adjacency: zero_out | replace"
        if pv.mode == "local":
            raise ConfigError(
                "privacy.adjacency: add_remove: in local mode each device's release is its own "
                "and who sends is public; use privacy.adjacency: zero_out | replace"
            )
        if self.server.event_driven:
            raise ConfigError(
                f"privacy.adjacency: add_remove: with server.mode: {self.server.mode} which "
                "updates an aggregation takes depends on every client in flight, so one client "
                f"absent moves more than its own term; use server.mode: sync, {other}"
            )
        rule = getattr(self.strategy, "aggregation", "weighted_mean")
        if not has_fixed_denominator(rule):
            raise ConfigError(
                f"privacy.adjacency: add_remove needs a fixed denominator, and "
                f"strategy.aggregation: {rule} normalises over the arrived clients (one client "
                "absent moves every weight: up to 2 w_k C in all); use strategy.aggregation: "
                f"unbiased (McMahan et al.'s estimator), {other}"
            )

    def _validate_server(self) -> None:
        """The event-driven modes: the concurrency and FedBuff's buffer fit N; what they do not
        model yet is refused in one line (docs/simulator.md, "Asynchronous rounds")."""
        sv = self.server
        if not sv.event_driven:
            return
        if sv.concurrency is not None and sv.concurrency > self.n_clients:
            raise ConfigError(
                f"server.concurrency: must be <= n_clients ({self.n_clients:,}), got "
                f"{sv.concurrency:,}"
            )
        SERVER_MODES.load(sv.mode).check_scenario(self)  # the mode's own refusals
        if not ALGORITHMS.load(self.algorithm.name).CostModel.SINGLE_UPDATES:
            raise ConfigError(
                f"server.mode: {sv.mode} adds single weighted updates, and algorithm "
                f"{self.algorithm.name!r} does not aggregate single weighted updates; use "
                "server.mode: sync, or an algorithm whose CostModel.SINGLE_UPDATES (fedit, "
                "fedit_topk, ffa_lora, soft)"
            )
        controller = CONTROLLERS.load(self.controller.name)
        if sv.dispatch == "controller" and not controller.DISPATCH_OBJECTIVE:
            raise ConfigError(
                "server.dispatch: controller starts the idle client of least per-dispatch "
                f"drift-plus-penalty, and controller {self.controller.name!r} has none; use "
                "controller.name: tsfa or osfa, or server.dispatch: random"
            )
        refused = {  # key -> why the event-driven modes do not read it
            "faults.redistribute_unused": (
                self.faults.redistribute_unused,
                "the shared band already divides the whole band among the uploads on the air, "
                "so no share idles",
            ),
            "selection.method": (
                self.selection.method != "uniform",
                "a slot that frees takes one client drawn by server.dispatch, not K of N",
            ),
            "channel.noise_bandwidth": (
                self.channel.noise_bandwidth != "band",
                "the shared band's upload times are closed-form for a rate linear in the share, "
                "and noise on the share makes it b B log2(1 + SNR / b)",
            ),
        }
        for key, (given, why) in refused.items():
            if given:
                raise ConfigError(
                    f"{key}: not read with server.mode: {sv.mode} ({why}); remove it or use "
                    "server.mode: sync"
                )

    def _validate_bits_choices(self) -> None:
        """``controller.bits_choices``: b in [2, 16] or v, a controller that chooses b, a
        synchronous server and the fixed radio (docs/solvers.md)."""
        ctl, key, v = self.controller, "controller.bits_choices", self.payload.bits_per_value
        if ctl.bits_choices is None:
            return
        if not ctl.bits_choices:
            raise ConfigError(f"{key}: give at least one b, or null for the quantize section's")
        for b in ctl.bits_choices:
            if isinstance(b, bool) or not isinstance(b, int) or not (2 <= b <= 16 or b == v):
                raise ConfigError(
                    f"{key}: each b is an integer in [2, 16] or payload.bits_per_value ({v}, "
                    f"unquantised), got {show(b)}"
                )
        if not CONTROLLERS.load(ctl.name).CHOOSES_BITS:
            raise ConfigError(
                f"{key}: the {ctl.name!r} controller does not choose b; use tsfa or osfa, or "
                "set quantize.bits for a fixed b"
            )
        if self.server.event_driven:
            raise ConfigError(
                f"{key}: b is chosen per synchronous round, not per dispatch (server.mode: "
                f"{self.server.mode}); set quantize.bits for a fixed b, or use server.mode: sync"
            )
        if ctl.radio == "joint":
            raise ConfigError(
                f"{key}: b is chosen by the P3 step of controller.radio: fixed, not by the joint "
                "step; set quantize.bits for a fixed b, or use radio: fixed"
            )

    def _validate_radio_decisions(self) -> None:
        """``controller.tx_power_fraction`` and ``controller.cpu_freq_hz``: a controller that
        reads them, a clock in the devices' range (model ``cmos``), a synchronous server."""
        ctl = self.controller
        given = {
            key: value
            for key, value in (
                ("controller.tx_power_fraction", ctl.tx_power_fraction),
                ("controller.cpu_freq_hz", ctl.cpu_freq_hz),
            )
            if value is not None
        }
        if not given:
            return
        key = next(iter(given))
        if not CONTROLLERS.load(ctl.name).FIXED_RADIO_DECISIONS:
            raise ConfigError(
                f"{key}: a fixed power or clock for every client is the fixed controller's, "
                f"and {ctl.name!r} does not read it; use controller.name: fixed or remove {key}"
            )
        if self.server.event_driven:
            raise ConfigError(
                f"{key}: not read with server.mode: {self.server.mode} (the fixed controller's "
                "power and clock are read per synchronous round; a dispatch decides them with "
                "controller.radio: joint); "
                f"remove it or use server.mode: sync"
            )
        if ctl.cpu_freq_hz is None:
            return
        named = list(self.devices.classes) if self.devices.kind == "classes" else []
        spans = [self.devices.energy.cpu_hz_range(c) for c in named or [None]]
        if spans[0] is None:
            raise ConfigError(
                "controller.cpu_freq_hz: a clock needs devices.energy.model: cmos (the energy "
                f"of a clock), got {self.devices.energy.model}; set it, or remove cpu_freq_hz"
            )
        # every device's range must hold the one clock: [the highest f_min, the lowest f_max]
        low, high = max(s[0] for s in spans), min(s[1] for s in spans)  # type: ignore[index]
        if not low <= ctl.cpu_freq_hz <= high:
            raise ConfigError(
                f"controller.cpu_freq_hz: must be in [{low:g}, {high:g}] "
                "(devices.energy.cpu_freq_min_hz, cpu_freq_hz: the range every device class "
                "shares), got "
                f"{ctl.cpu_freq_hz:g}"
            )

    def _validate_noise_bandwidth(self) -> None:
        """``channel.noise_bandwidth`` must be a rule the controller plans with under its
        settings (``Controller.noise_bandwidths``: e.g. ``controller.radio: joint`` plans with
        the rate on the share only)."""
        rule, name = self.channel.noise_bandwidth, self.controller.name
        if self.server.event_driven and rule == "band":
            return  # the engine's rate (share is refused there); (D3) plans with it too
        controller = CONTROLLERS.load(name)
        accepts = controller.noise_bandwidths(self.controller)
        if rule in accepts:
            return
        if accepts != controller.NOISE_BANDWIDTHS:  # a setting changed the rate it plans with
            wanted = " or ".join(sorted(accepts))
            raise ConfigError(
                f"channel.noise_bandwidth: {rule} is not the rate controller {name!r} plans with "
                f"under these settings ({controller.noise_bandwidth_reason(self.controller)}); "
                f"use channel.noise_bandwidth: {wanted}"
            )
        accepted = [n for n in CONTROLLERS.names() if rule in CONTROLLERS.load(n).NOISE_BANDWIDTHS]
        if rule == "band":
            raise ConfigError(
                f"channel.noise_bandwidth: band makes the rate b B log2(1 + SNR), and controller "
                f"{name!r} plans with b B log2(1 + SNR / b) (noise over the share); use "
                f"channel.noise_bandwidth: share, or controller.name: {' or '.join(accepted)}"
            )
        joint = replace(self.controller, radio="joint")
        radio = ", controller.radio: joint" if rule in controller.noise_bandwidths(joint) else ""
        raise ConfigError(
            f"channel.noise_bandwidth: {rule} makes the rate b B log2(1 + SNR / b), and "
            f"controller {name!r} plans with a delay linear in the bits and in 1 / b (noise over "
            f"the whole band); use controller.name: {' or '.join(accepted) or '(none)'}{radio}, "
            "or channel.noise_bandwidth: band"
        )

    def _validate_wireless(self) -> None:
        """Cross-section checks of mobility, power, availability, energy and fading."""
        ch, classes = self.channel, self.devices.kind == "classes"
        if self.mobility.moves and not ch.geometric:
            given = "mean_snr_db" if ch.mean_snr_db is not None else "snr_trace"
            raise ConfigError(
                f"mobility.model: {self.mobility.model!r} moves clients in a geometric cell, and "
                f"channel.{given} gives the SNRs directly; remove channel.{given} or use static"
            )
        needs_classes = {
            "channel.tx_power_dbm_by_class": ch.power_control == "per_class",
            "availability.p_on_to_off": self.availability.model == "markov"
            and self.availability.per_class,
            "devices.energy.joules_per_flop": self.devices.energy.model == "per_flop"
            and isinstance(self.devices.energy.joules_per_flop, dict),
            **{
                f"devices.energy.{key}": isinstance(getattr(self.devices.energy, key), dict)
                for key in CLOCK_KEYS
            },
        }
        for key, needed in needs_classes.items():
            if needed and not classes:
                raise ConfigError(
                    f"{key}: per device class needs devices.kind: classes (it is "
                    f"{self.devices.kind!r}); give one number instead"
                )
        if ch.power_control == "per_class":
            missing = sorted(set(self.devices.classes) - set(ch.tx_power_dbm_by_class))
            if missing:
                raise ConfigError(
                    f"channel.tx_power_dbm_by_class: no power for device class {missing[0]!r} "
                    f"of devices.classes; give every class a dBm value"
                )
        for key in CLOCK_KEYS:
            value = getattr(self.devices.energy, key)
            per_class = isinstance(value, dict) and classes
            missing = sorted(set(self.devices.classes) - set(value)) if per_class else []
            if missing:
                raise ConfigError(
                    f"devices.energy.{key}: no clock for device class {missing[0]!r} of "
                    "devices.classes; give every class one, or one number"
                )
        for key in ("p_on_to_off", "p_off_to_on"):
            value = getattr(self.availability, key)
            if self.availability.model == "markov" and isinstance(value, dict):
                missing = sorted(set(self.devices.classes) - set(value))
                if missing:
                    raise ConfigError(
                        f"availability.{key}: no probability for device class {missing[0]!r} "
                        "of devices.classes; give every class one, or one number"
                    )
        self._validate_radio_decisions()
        self._validate_bits_choices()
        self._validate_noise_bandwidth()
        budget = self.controller.energy_budget_j
        if budget is None and self.controller.energy_queue != "every_round":
            raise ConfigError(
                f"controller.energy_queue: {self.controller.energy_queue} moves the energy "
                "queues, which need controller.energy_budget_j; set a budget or use every_round"
            )
        if budget is not None and not CONTROLLERS.load(self.controller.name).SUPPORTS_ENERGY_BUDGET:
            raise ConfigError(
                f"controller.energy_budget_j: the {self.controller.name!r} controller has no "
                "online stage to keep it; use tsfa or osfa, or remove the budget"
            )
        fading = ch.fading
        if (
            fading.model == "gauss_markov"
            and fading.rho is None
            and fading.doppler_hz is None
            and not (self.mobility.moves and fading.slot_s is not None)
        ):
            raise ConfigError(
                "channel.fading.rho: gauss_markov needs rho in [0, 1], or doppler_hz and "
                "slot_s, or (with mobility) slot_s alone: the Doppler then follows the "
                "clients' mean speed and channel.path_loss.carrier_ghz"
            )
        if fading.model == "gauss_markov" and fading.rho is None and fading.slot_s is None:
            raise ConfigError("channel.fading.slot_s: gauss_markov with doppler_hz needs slot_s")
