"""Client energy per round: local compute (two models) plus uplink transmission.

Compute energy models (registry :data:`COMPUTE_ENERGY_MODELS`, factory
:func:`make_compute_energy`); each has ``energy_j(flops, client_class) -> (N,) [J]``:

- ``"per_flop"`` (:class:`PerFlopEnergy`): E = FLOPs · e_flop, with e_flop [J/FLOP] one number
  or one per device class (default :data:`DEVICE_CLASS_JOULES_PER_FLOP`).
- ``"cmos"`` (:class:`CmosEnergy`): the classic dynamic-power CMOS model of the mobile-edge
  computing literature, E = κ · f² · cycles with cycles = FLOPs / flops_per_cycle, κ the
  effective switched capacitance [J/(cycle·Hz²)] (typically 1e-28), f the CPU clock [Hz]
  (Mao et al., "A survey on mobile edge computing: the communication perspective", IEEE
  Commun. Surveys Tuts. 2017, eq. 3; Yang et al., "Energy efficient federated learning over
  wireless communication networks", IEEE TWC 2021, arXiv:1911.02417, eq. 5). The compute
  TIME is not changed: it stays FLOPs / flops_per_s of the device profile
  (:func:`channels.compute.compute_delay_s`). f · flops_per_cycle is the peak FLOP/s the
  model implies; it need not equal the profile's sustained ``flops_per_s`` (which includes the
  utilisation), and when it is larger the model charges the energy of the useful cycles only.
  A controller that decides the clock per round passes it as ``cpu_hz``; the compute time then
  scales as 1 / f (:func:`channels.radio_decisions.compute_delay_at_clock_s`).

Transmission: :func:`transmit_energy_j` (E = P · t) with each client's power from a
power-control model of :mod:`channels.power_control` (``fractional`` by
:func:`fractional_power_control_dbm`).

:data:`DEVICE_CLASS_JOULES_PER_FLOP` gives order-of-magnitude energies per *sustained*
training FLOP: the device's power under a sustained training load divided by its sustained
FLOP/s of :data:`channels.compute.DEVICE_CLASSES`. They are defaults for simulation, not
measurements; override them with your own numbers.

========================  ==========  ====================================================
class                     J/FLOP      basis (sustained FLOP/s of DEVICE_CLASSES, power)
========================  ==========  ====================================================
``low_end_phone``         2e-10       1e10 FLOP/s at ≈ 2 W SoC power (≈ 5 GFLOP/s per W)
``flagship_phone``        5e-11       1e11 FLOP/s at ≈ 5 W thermally sustained SoC power
                                      (≈ 20 GFLOP/s per W; phone SoCs: 5-20 GFLOP/s per W)
``laptop_cpu``            2e-10       2e11 FLOP/s at ≈ 40 W package power (8-core x86
                                      under AVX2 load)
``edge_gpu_jetson``       2e-11       Jetson Orin NX 16 GB: 1e12 FLOP/s at its 10-25 W
                                      power modes (NVIDIA datasheet), ≈ 20 W
``desktop_gpu``           1.5e-11     RTX 4090: 3e13 FLOP/s sustained at ≈ 450 W board
                                      power (NVIDIA TGP)
========================  ==========  ====================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array, scalar_or_array
from channels.registry import Registry

__all__ = [
    "COMPUTE_ENERGY_MODELS",
    "DEVICE_CLASS_JOULES_PER_FLOP",
    "CmosEnergy",
    "ComputeEnergyModel",
    "PerFlopEnergy",
    "fractional_power_control_dbm",
    "make_compute_energy",
    "per_client_values",
    "transmit_energy_j",
]

#: Energy per sustained training FLOP per device class [J/FLOP] (see the module docstring).
DEVICE_CLASS_JOULES_PER_FLOP: dict[str, float] = {
    "low_end_phone": 2.0e-10,
    "flagship_phone": 5.0e-11,
    "laptop_cpu": 2.0e-10,
    "edge_gpu_jetson": 2.0e-11,
    "desktop_gpu": 1.5e-11,
}


@runtime_checkable
class ComputeEnergyModel(Protocol):
    """What the simulator needs from a compute energy model."""

    def energy_j(self, flops: np.ndarray, client_class: Sequence[str] | None) -> np.ndarray: ...


def _flops(flops: ArrayLike) -> np.ndarray:
    arr = as_float_array("flops", flops, lower=0.0)
    if arr.ndim != 1:
        raise ValueError(f"flops must be a 1-D array (one value per client), got shape {arr.shape}")
    return arr


def _per_class_param(name: str, value: Any, *, lower_op: str = ">") -> float | dict[str, float]:
    """A scalar > 0 (or >= 0), or a mapping {device class: value}, validated."""
    if isinstance(value, Mapping):
        if not value:
            raise ValueError(f"{name} must be a number or a non-empty mapping {{class: value}}")
        out: dict[str, float] = {}
        for cls, v in value.items():
            if not isinstance(cls, str) or not cls:
                raise ValueError(f"{name} keys must be device class names, got {cls!r}")
            out[cls] = as_float(f"{name}[{cls!r}]", v, lower=0.0, lower_op=lower_op)
        return out
    return as_float(name, value, lower=0.0, lower_op=lower_op)


def per_client_values(
    name: str, value: float | dict[str, float], client_class: Sequence[str] | None, n: int
) -> np.ndarray:
    """(n,) values of a per-class parameter for the given clients."""
    if not isinstance(value, dict):
        return np.full(n, value)
    if client_class is None:
        raise ValueError(
            f"{name} is given per device class: pass client_class (one class per client) "
            "or give one number"
        )
    if isinstance(client_class, str) or len(client_class) != n:
        got = "a string" if isinstance(client_class, str) else f"{len(client_class)} classes"
        raise ValueError(f"client_class must hold one class per client ({n}), got {got}")
    missing = sorted({c for c in client_class if c not in value})
    if missing:
        raise ValueError(
            f"{name} has no value for device class {missing[0]!r}; known: {{{', '.join(value)}}}"
        )
    return np.array([value[c] for c in client_class], dtype=np.float64)


class PerFlopEnergy:
    """E_k = FLOPs_k · e_flop,k [J].

    Args:
        joules_per_flop: e_flop [J/FLOP], one number > 0 for every client or a mapping
            {device class: J/FLOP}; ``None`` (default): :data:`DEVICE_CLASS_JOULES_PER_FLOP`.
    """

    def __init__(self, joules_per_flop: float | Mapping[str, float] | None = None) -> None:
        value = DEVICE_CLASS_JOULES_PER_FLOP if joules_per_flop is None else joules_per_flop
        self.joules_per_flop = _per_class_param("joules_per_flop", value)

    def energy_j(self, flops: np.ndarray, client_class: Sequence[str] | None) -> np.ndarray:
        """Per-client compute energy.

        Input: ``flops`` (N,) >= 0 [FLOP]; ``client_class`` (N,) device class names, or
        ``None`` (allowed when ``joules_per_flop`` is one number).
        Output: float64 (N,) [J].
        """
        f = _flops(flops)
        e = per_client_values("joules_per_flop", self.joules_per_flop, client_class, f.size)
        return f * e

    def __repr__(self) -> str:
        return f"PerFlopEnergy(joules_per_flop={self.joules_per_flop!r})"


class CmosEnergy:
    """E_k = κ_k · f_k² · FLOPs_k / flops_per_cycle_k [J] (dynamic CMOS power, see the module).

    Each argument is one number for every client or a mapping {device class: value}.

    Args:
        kappa: effective switched capacitance κ [J/(cycle·Hz²)] = [W·s³], > 0 (default 1e-28).
        cpu_freq_hz: clock f [Hz], > 0 (default 2e9).
        flops_per_cycle: FLOPs retired per cycle, > 0 (default 8: 4-wide FP32 FMA).

    With the defaults one FLOP costs 1e-28 · (2e9)² / 8 = 5e-11 J. Only the energy comes from
    this model; the compute time stays FLOPs / flops_per_s of the device profile.
    """

    def __init__(
        self,
        kappa: float | Mapping[str, float] = 1.0e-28,
        cpu_freq_hz: float | Mapping[str, float] = 2.0e9,
        flops_per_cycle: float | Mapping[str, float] = 8.0,
    ) -> None:
        self.kappa = _per_class_param("kappa", kappa)
        self.cpu_freq_hz = _per_class_param("cpu_freq_hz", cpu_freq_hz)
        self.flops_per_cycle = _per_class_param("flops_per_cycle", flops_per_cycle)

    def energy_j(
        self,
        flops: np.ndarray,
        client_class: Sequence[str] | None,
        cpu_hz: np.ndarray | None = None,
    ) -> np.ndarray:
        """Per-client compute energy.

        Input: ``flops`` (N,) >= 0 [FLOP]; ``client_class`` (N,) device class names, or
        ``None`` (allowed when every parameter is one number); ``cpu_hz`` (N,) > 0 [Hz]: the
        clock each client runs at this round (a controller's decision), ``None``: ``cpu_freq_hz``.
        Output: float64 (N,) [J].
        """
        f = _flops(flops)
        n = f.size
        kappa = per_client_values("kappa", self.kappa, client_class, n)
        freq = per_client_values("cpu_freq_hz", self.cpu_freq_hz, client_class, n)
        if cpu_hz is not None:
            freq = as_float_array("cpu_hz", cpu_hz, lower=0.0, lower_op=">").reshape(n)
        per_cycle = per_client_values("flops_per_cycle", self.flops_per_cycle, client_class, n)
        return kappa * freq * freq * (f / per_cycle)

    def __repr__(self) -> str:
        return (
            f"CmosEnergy(kappa={self.kappa!r}, cpu_freq_hz={self.cpu_freq_hz!r}, "
            f"flops_per_cycle={self.flops_per_cycle!r})"
        )


#: Compute energy models by name; a new model is one class with ``energy_j`` plus one line here
#: (or a ``register`` call, or an entry point of the group ``channels.compute_energy_models``).
COMPUTE_ENERGY_MODELS: Registry[type] = Registry(
    "compute energy model",
    {"per_flop": PerFlopEnergy, "cmos": CmosEnergy},
    entry_point_group="channels.compute_energy_models",
)


def make_compute_energy(name: str, **params: Any) -> ComputeEnergyModel:
    """Build a compute energy model by registry name.

    Input: ``name`` in :data:`COMPUTE_ENERGY_MODELS`; ``params`` passed to its constructor.
    Output: the model instance. Unknown names and keywords raise a one-line ``ValueError``.
    """
    return COMPUTE_ENERGY_MODELS.build(name, **params)


def transmit_energy_j(tx_power_w: ArrayLike, upload_s: ArrayLike) -> float | np.ndarray:
    """Uplink energy E = P · t [J] (broadcasting).

    Input: ``tx_power_w`` P >= 0 finite [W]; ``upload_s`` t >= 0 [s], +inf allowed (a client
    that never finishes).
    Output: [J], broadcast shape (float for scalars); exactly 0 where t = 0 or P = 0, +inf where
    t = inf and P > 0.
    """
    p = as_float_array("tx_power_w", tx_power_w, lower=0.0)
    t = as_float_array("upload_s", upload_s, lower=0.0, allow_inf=True)
    with np.errstate(invalid="ignore"):
        e = p * t
    return scalar_or_array(np.where((p == 0.0) | (t == 0.0), 0.0, e))


def fractional_power_control_dbm(
    path_loss_db: ArrayLike, *, p_max_dbm: float, p0_dbm: float, alpha: float
) -> float | np.ndarray:
    """Open-loop fractional uplink power control, P = min(P_max, P0 + α · PL) [dBm].

    3GPP TS 38.213 §7.1.1 (PUSCH power) without the bandwidth term 10 log10(2^μ M_RB), the
    MCS term Δ_TF and the closed-loop correction f: a client compensates the fraction α of its
    path loss, capped at its maximum power.
    Input: ``path_loss_db`` PL [dB] (a loss: positive for attenuation), any shape;
    ``p_max_dbm`` P_max [dBm]; ``p0_dbm`` target received power P0 [dBm]; ``alpha`` α in [0, 1]
    (0: every client at P0; 1: full compensation).
    Output: [dBm], the shape of ``path_loss_db`` (float for scalars).
    """
    pl = as_float_array("path_loss_db", path_loss_db)
    p_max = as_float("p_max_dbm", p_max_dbm)
    p0 = as_float("p0_dbm", p0_dbm)
    a = as_float("alpha", alpha, lower=0.0, upper=1.0)
    return scalar_or_array(np.minimum(p_max, p0 + a * pl))
