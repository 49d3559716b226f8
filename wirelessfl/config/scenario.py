"""The scenario: everything that defines a run, as validated dataclasses.

Every key, its default and its accepted range is listed by ``wirelessfl scenario-keys``
(generated from this module with :func:`wirelessfl.config.schema.describe`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from wirelessfl.config.cells import CellsConfig, refuse_with_cells
from wirelessfl.config.channel import ChannelConfig
from wirelessfl.config.controller import ControllerSettings
from wirelessfl.config.learner import PEFT_SETTINGS, LearnerSettings, check_other_kinds
from wirelessfl.config.limits import (
    FADING_BLOCK_BUDGET,
    FADING_BYTES_PER_VALUE,
    MAX_CLIENTS,
    MAX_ROUNDS,
)
from wirelessfl.config.privacy import (
    PrivacyConfig,
    count_sensitivity,
    has_fixed_denominator,
    updates_per_aggregation,
)
from wirelessfl.config.schema import (
    chosen_section,
    field_names,
    hidden_option,
    option,
    settings_option,
    show,
)
from wirelessfl.config.sections import (
    AlgorithmConfig,
    CompressionConfig,
    ConstantsConfig,
    DevicesConfig,
    FaultsConfig,
    OutputConfig,
    PayloadConfig,
    QuantizeConfig,
    SelectionConfig,
    warn_once,
)
from wirelessfl.config.server import ServerConfig
from wirelessfl.config.wireless import (
    CLOCK_KEYS,
    AvailabilityConfig,
    MobilityConfig,
)
from wirelessfl.errors import ConfigError
from wirelessfl.registries import (
    ALGORITHMS,
    CONTROLLERS,
    LEARNERS,
    SERVER_MODES,
    UPLINKS,
)

#: the scenario, and the sections other modules take from here (defined in their own modules)
__all__ = [
    "PEFT_SETTINGS",
    "ControllerSettings",
    "LearnerSettings",
    "PayloadConfig",
    "Scenario",
    "ServerConfig",
]


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.3g} GiB"


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
    cells: CellsConfig = field(default_factory=CellsConfig)
    devices: DevicesConfig = field(default_factory=DevicesConfig)
    mobility: MobilityConfig = field(default_factory=MobilityConfig)
    availability: AvailabilityConfig = field(default_factory=AvailabilityConfig)
    controller: ControllerSettings = chosen_section(CONTROLLERS, ControllerSettings)
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
    learner: LearnerSettings = chosen_section(LEARNERS, LearnerSettings, by="kind")
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
        # the uplink's own refusals first: a combination that cannot work is named before the
        # prerequisites of one of its parts
        check_other_kinds(self.learner)
        UPLINKS.load(self.channel.uplink).check_scenario(self)
        self._validate_wireless()
        refuse_with_cells(self)
        self._validate_server()
        self._validate_fixed_ranks()
        self._validate_stages()
        self._validate_privacy()
        for warning in self.constants.resolve(self.learner):
            warn_once(warning)
        resolve = getattr(self.strategy, "resolve", None)  # settings that depend on others
        if callable(resolve):
            resolve(self)

    def _validate_fixed_ranks(self) -> None:
        """Layers of a fixed rank (``learner.rank_pattern``, ``learner.shape.layer_ranks``) with
        an algorithm whose cost model cannot keep them at it: its one line, at load."""
        lc = self.learner
        key, given = "learner.rank_pattern", lc.given("rank_pattern")
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
        if pv.dp_sgd and self.learner.given("trainer") == "batched":
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
        choices = ctl.given("bits_choices")
        if choices is None:
            return
        if not choices:
            raise ConfigError(f"{key}: give at least one b, or null for the quantize section's")
        for b in choices:
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
        if ctl.given("radio") == "joint":
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
                ("controller.tx_power_fraction", ctl.given("tx_power_fraction")),
                ("controller.cpu_freq_hz", ctl.given("cpu_freq_hz")),
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
        cpu_freq_hz = given.get("controller.cpu_freq_hz")
        if cpu_freq_hz is None:
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
        if not low <= cpu_freq_hz <= high:
            raise ConfigError(
                f"controller.cpu_freq_hz: must be in [{low:g}, {high:g}] "
                "(devices.energy.cpu_freq_min_hz, cpu_freq_hz: the range every device class "
                "shares), got "
                f"{cpu_freq_hz:g}"
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
        radio = ""
        if "radio" in field_names(type(self.controller)):
            joint = replace(self.controller, radio="joint")
            radio = (
                ", controller.radio: joint" if rule in controller.noise_bandwidths(joint) else ""
            )
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
        budget = self.controller.given("energy_budget_j")
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
