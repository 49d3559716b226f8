"""The scenario's sections that are no component's own: devices, the bound's constants,
selection, payload, the algorithm's name, the compression stage, the
quantiser, faults and outputs, with the ``applies`` rules that decide which of their keys label
a run's results."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from optim import SELECTION_METHODS
from wirelessfl.config.learner import LearnerSettings
from wirelessfl.config.limits import MAX_DB
from wirelessfl.config.schema import option, show
from wirelessfl.config.wireless import EnergyConfig
from wirelessfl.errors import ConfigError
from wirelessfl.registries import ALGORITHMS, SPARSIFIERS

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


def stage_follows_controller(config: Mapping[str, Any]) -> bool:
    """Whether the controller's ratio reaches the run's messages: a stage without a fixed ratio
    (otherwise O is moot: a stage that sends everything, or a fixed ``compression.ratio``)."""
    sparsifier, ratio = _stage(config)
    return sparsifier != NO_STAGE and ratio is None


def _stage_weighs_importance(config: Mapping[str, Any]) -> bool:
    """Whether the run's sparsifier computes importance weights (SOFT's eq. 3)."""
    sparsifier = _stage(config)[0]
    return sparsifier != NO_STAGE and bool(SPARSIFIERS.load(sparsifier).takes_importance)


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


def warn_once(message: str) -> None:
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

    def resolve(self, learner: LearnerSettings) -> list[str]:
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
