"""Large-scale path-loss models: 3GPP TR 38.901 UMi-Street Canyon and UMa, and the single slope.

Source: 3GPP TR 38.901 v17.0.0, "Study on channel model for frequencies from 0.5 to 100 GHz",
Table 7.4.1-1 (path loss, shadow-fading σ_SF) and Table 7.4.2-1 (LoS probability).

Units: distances and heights in metres, carrier frequency ``carrier_ghz`` in GHz (the path-loss
equations use f_c in GHz, the breakpoint distance uses f_c in Hz), path loss and σ_SF in dB,
gains dimensionless linear *power* gains.

Decisions beyond the standard (see also the simulator documentation):

- ``carrier_ghz`` must lie in the standard's range [0.5, 100] GHz.
- d2D below 10 m (the standard's lower validity bound) is clipped to 10 m; d2D above 5 km
  (the upper bound) is rejected.
- UMa is restricted to h_UT <= 13 m, where the standard's effective environment height h_E is
  1 m with probability 1 (C(d2D, h_UT) = 0), so h_E = 1 m exactly and the path loss is
  deterministic given the LoS state. UMi always uses h_E = 1 m.
- A client's LoS state is ``los_uniform < P_LoS(d2D)`` with one uniform drawn once per client by
  the caller: when the client moves, its state changes consistently (a client in LoS stays in
  LoS while P_LoS grows).
- Shadowing is ``σ_SF(los)·z`` with one standard normal ``z`` per client, entering as a *gain*:
  gain = 10^((σ_SF·z − PL)/10), the same sign as :func:`channels.pathloss.shadowing_power_gain`
  (z > 0 is a stronger channel). The standard's SF is a zero-mean normal in dB, so the sign is
  a convention only.

A new model is one :class:`PathLossModel` subclass plus one line in :data:`PATH_LOSS_MODELS`
(or a ``register`` call, or an entry point of the group ``channels.path_loss_models``).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array, scalar_or_array
from channels.registry import Registry

__all__ = [
    "PATH_LOSS_MODELS",
    "PathLossModel",
    "SingleSlope",
    "UMa",
    "UMi",
    "breakpoint_distance_m",
    "make_path_loss",
    "uma_los_probability",
    "uma_path_loss_db",
    "umi_los_probability",
    "umi_path_loss_db",
]

SPEED_OF_LIGHT_M_S = 3.0e8  # c as TR 38.901 uses it (7.4.1, note 1)
CARRIER_GHZ_RANGE = (0.5, 100.0)  # TR 38.901 title / scope: 0.5 to 100 GHz
MIN_DISTANCE_2D_M = 10.0  # Table 7.4.1-1: 10 m <= d2D; shorter distances are clipped to this
MAX_DISTANCE_2D_M = 5000.0  # Table 7.4.1-1: d2D <= 5 km; longer distances are rejected
H_E_M = 1.0  # effective environment height (Table 7.4.1-1 note 1; UMa note 1 with h_UT <= 13 m)
UMI_H_UT_RANGE_M = (1.5, 22.5)  # Table 7.4.1-1, UMi: 1.5 m <= h_UT <= 22.5 m
UMA_H_UT_RANGE_M = (1.5, 13.0)  # ours: UMa h_UT <= 13 m so that h_E = 1 m exactly
UMA_LOS_H_UT_RANGE_M = (1.5, 23.0)  # Table 7.4.2-1, UMa: C'(h_UT) defined for h_UT <= 23 m

# Shadow-fading standard deviations σ_SF [dB], Table 7.4.1-1.
UMI_SIGMA_SF_LOS_DB = 4.0
UMI_SIGMA_SF_NLOS_DB = 7.82
UMA_SIGMA_SF_LOS_DB = 4.0
UMA_SIGMA_SF_NLOS_DB = 6.0


# -- input checks ----------------------------------------------------------------------------
def _carrier_ghz(value: Any) -> float:
    lo, hi = CARRIER_GHZ_RANGE
    return as_float("carrier_ghz", value, lower=lo, upper=hi)


def _h_bs_m(value: Any) -> float:
    # h'_BS = h_BS - h_E must be > 0 for the breakpoint distance.
    return as_float("h_bs_m", value, lower=H_E_M, lower_op=">")


def _h_ut_m(value: Any, rng: tuple[float, float]) -> float:
    return as_float("h_ut_m", value, lower=rng[0], upper=rng[1])


def _distance_2d_m(value: ArrayLike) -> np.ndarray:
    """d2D in [0, 5 km] as float64, then clipped below at 10 m."""
    d = as_float_array("distance_2d_m", value, lower=0.0, upper=MAX_DISTANCE_2D_M)
    return np.maximum(d, MIN_DISTANCE_2D_M)


def _los_mask(value: ArrayLike, shape: tuple[int, ...]) -> np.ndarray:
    los = np.asarray(value)
    if los.dtype != np.bool_:
        raise ValueError(f"los must be a bool array (True = LoS), got dtype {los.dtype}")
    try:
        return np.broadcast_to(los, shape)
    except ValueError:
        raise ValueError(
            f"los must have the shape of distance_2d_m {shape}, got {los.shape}"
        ) from None


# -- geometry --------------------------------------------------------------------------------
def _distance_3d_m(d2d_m: np.ndarray, h_bs_m: float, h_ut_m: float) -> np.ndarray:
    # d3D = sqrt(d2D² + (h_BS − h_UT)²), TR 38.901 Figure 7.4.1-1.
    return np.sqrt(d2d_m * d2d_m + (h_bs_m - h_ut_m) ** 2)


def breakpoint_distance_m(
    *, carrier_ghz: float, h_bs_m: float, h_ut_m: float, h_e_m: float = H_E_M
) -> float:
    """Breakpoint distance d'_BP = 4·h'_BS·h'_UT·f_c/c [m] (Table 7.4.1-1, note 1).

    Input: ``carrier_ghz`` in [0.5, 100] [GHz] (converted to Hz here); ``h_bs_m``, ``h_ut_m``
    antenna heights [m]; ``h_e_m`` effective environment height [m] (1 m for UMi, and for UMa
    with h_UT <= 13 m), with h' = h − h_E > 0 for both antennas.
    Output: d'_BP [m], a Python float.
    """
    fc_ghz = _carrier_ghz(carrier_ghz)
    h_e = as_float("h_e_m", h_e_m, lower=0.0)
    h_bs = as_float("h_bs_m", h_bs_m, lower=h_e, lower_op=">")
    h_ut = as_float("h_ut_m", h_ut_m, lower=h_e, lower_op=">")
    return 4.0 * (h_bs - h_e) * (h_ut - h_e) * (fc_ghz * 1e9) / SPEED_OF_LIGHT_M_S


def _two_slope_los_db(
    d2d_m: np.ndarray,
    *,
    fc_ghz: float,
    h_bs_m: float,
    h_ut_m: float,
    intercept_db: float,
    slope1: float,
    bp_coeff: float,
) -> np.ndarray:
    """LoS path loss of Table 7.4.1-1 (UMi and UMa share the form) [dB].

    PL1 = A + slope1·log10(d3D) + 20·log10(f_c)                      for d2D <= d'_BP
    PL2 = A + 40·log10(d3D) + 20·log10(f_c) − bp·log10(d'_BP² + (h_BS − h_UT)²) for d2D > d'_BP
    With bp = 40 − slope1 / 2 (both models), PL1 = PL2 at d2D = d'_BP exactly.
    """
    d3d = _distance_3d_m(d2d_m, h_bs_m, h_ut_m)
    d_bp = breakpoint_distance_m(carrier_ghz=fc_ghz, h_bs_m=h_bs_m, h_ut_m=h_ut_m)
    log_fc = 20.0 * math.log10(fc_ghz)
    pl1 = intercept_db + slope1 * np.log10(d3d) + log_fc
    pl2 = (
        intercept_db
        + 40.0 * np.log10(d3d)
        + log_fc
        - bp_coeff * math.log10(d_bp * d_bp + (h_bs_m - h_ut_m) ** 2)
    )
    return np.where(d2d_m <= d_bp, pl1, pl2)


# -- UMi-Street Canyon -----------------------------------------------------------------------
def _umi_db(d2d_m: np.ndarray, fc_ghz: float, h_bs_m: float, h_ut_m: float, los: np.ndarray):
    # Table 7.4.1-1, UMi-Street Canyon, LoS: PL1 = 32.4 + 21 log10(d3D) + 20 log10(fc),
    # PL2 = 32.4 + 40 log10(d3D) + 20 log10(fc) − 9.5 log10(d'BP² + (hBS − hUT)²).
    pl_los = _two_slope_los_db(
        d2d_m,
        fc_ghz=fc_ghz,
        h_bs_m=h_bs_m,
        h_ut_m=h_ut_m,
        intercept_db=32.4,
        slope1=21.0,
        bp_coeff=9.5,
    )
    # NLoS: PL'_NLOS = 35.3 log10(d3D) + 22.4 + 21.3 log10(fc) − 0.3 (hUT − 1.5),
    # PL_NLOS = max(PL_LOS, PL'_NLOS).
    d3d = _distance_3d_m(d2d_m, h_bs_m, h_ut_m)
    pl_nlos_prime = 35.3 * np.log10(d3d) + 22.4 + 21.3 * math.log10(fc_ghz) - 0.3 * (h_ut_m - 1.5)
    return np.where(los, pl_los, np.maximum(pl_los, pl_nlos_prime))


def umi_path_loss_db(
    distance_2d_m: ArrayLike,
    *,
    carrier_ghz: float,
    h_bs_m: float = 10.0,
    h_ut_m: float = 1.5,
    los: ArrayLike,
) -> float | np.ndarray:
    """UMi-Street Canyon path loss PL [dB] (TR 38.901 Table 7.4.1-1), without shadowing.

    Input: ``distance_2d_m`` d2D in [0, 5000] [m], any shape (values below 10 m are clipped to
    10 m); ``carrier_ghz`` f_c in [0.5, 100] [GHz]; ``h_bs_m`` > 1 [m] (standard: 10 m);
    ``h_ut_m`` in [1.5, 22.5] [m]; ``los`` bool, the shape of ``distance_2d_m`` (or
    broadcastable to it), True for LoS.
    Output: float64 PL [dB], the shape of ``distance_2d_m`` (a float for a scalar).
    """
    fc = _carrier_ghz(carrier_ghz)
    h_bs = _h_bs_m(h_bs_m)
    h_ut = _h_ut_m(h_ut_m, UMI_H_UT_RANGE_M)
    d = _distance_2d_m(distance_2d_m)
    mask = _los_mask(los, d.shape)
    return scalar_or_array(_umi_db(d, fc, h_bs, h_ut, mask))


def umi_los_probability(distance_2d_m: ArrayLike) -> float | np.ndarray:
    """UMi-Street Canyon LoS probability (TR 38.901 Table 7.4.2-1).

    P_LoS = 1 for d2D <= 18 m, else 18/d2D + exp(−d2D/36)·(1 − 18/d2D).
    Input: ``distance_2d_m`` d2D >= 0 [m], any shape.
    Output: float64 probability in (0, 1], same shape (a float for a scalar).
    """
    d = as_float_array("distance_2d_m", distance_2d_m, lower=0.0)
    return scalar_or_array(_umi_p_los(d))


def _umi_p_los(d: np.ndarray) -> np.ndarray:
    dd = np.maximum(d, 18.0)  # the far branch only where d2D > 18 m; avoids 18/0
    far = 18.0 / dd + np.exp(-dd / 36.0) * (1.0 - 18.0 / dd)
    return np.where(d <= 18.0, 1.0, far)


# -- UMa -------------------------------------------------------------------------------------
def _uma_db(d2d_m: np.ndarray, fc_ghz: float, h_bs_m: float, h_ut_m: float, los: np.ndarray):
    # Table 7.4.1-1, UMa, LoS: PL1 = 28.0 + 22 log10(d3D) + 20 log10(fc),
    # PL2 = 28.0 + 40 log10(d3D) + 20 log10(fc) − 9 log10(d'BP² + (hBS − hUT)²).
    pl_los = _two_slope_los_db(
        d2d_m,
        fc_ghz=fc_ghz,
        h_bs_m=h_bs_m,
        h_ut_m=h_ut_m,
        intercept_db=28.0,
        slope1=22.0,
        bp_coeff=9.0,
    )
    # NLoS: PL'_NLOS = 13.54 + 39.08 log10(d3D) + 20 log10(fc) − 0.6 (hUT − 1.5),
    # PL_NLOS = max(PL_LOS, PL'_NLOS).
    d3d = _distance_3d_m(d2d_m, h_bs_m, h_ut_m)
    pl_nlos_prime = 13.54 + 39.08 * np.log10(d3d) + 20.0 * math.log10(fc_ghz) - 0.6 * (h_ut_m - 1.5)
    return np.where(los, pl_los, np.maximum(pl_los, pl_nlos_prime))


def uma_path_loss_db(
    distance_2d_m: ArrayLike,
    *,
    carrier_ghz: float,
    h_bs_m: float = 25.0,
    h_ut_m: float = 1.5,
    los: ArrayLike,
) -> float | np.ndarray:
    """UMa path loss PL [dB] (TR 38.901 Table 7.4.1-1), without shadowing.

    Input: ``distance_2d_m`` d2D in [0, 5000] [m], any shape (values below 10 m are clipped to
    10 m); ``carrier_ghz`` f_c in [0.5, 100] [GHz]; ``h_bs_m`` > 1 [m] (standard: 25 m);
    ``h_ut_m`` in [1.5, 13] [m] (restricted so that h_E = 1 m exactly); ``los`` bool, the shape
    of ``distance_2d_m`` (or broadcastable to it), True for LoS.
    Output: float64 PL [dB], the shape of ``distance_2d_m`` (a float for a scalar).
    """
    fc = _carrier_ghz(carrier_ghz)
    h_bs = _h_bs_m(h_bs_m)
    h_ut = _h_ut_m(h_ut_m, UMA_H_UT_RANGE_M)
    d = _distance_2d_m(distance_2d_m)
    mask = _los_mask(los, d.shape)
    return scalar_or_array(_uma_db(d, fc, h_bs, h_ut, mask))


def uma_los_probability(distance_2d_m: ArrayLike, h_ut_m: float = 1.5) -> float | np.ndarray:
    """UMa LoS probability (TR 38.901 Table 7.4.2-1).

    P_LoS = 1 for d2D <= 18 m, else
    [18/d2D + exp(−d2D/63)·(1 − 18/d2D)]·(1 + C'(h_UT)·5/4·(d2D/100)³·exp(−d2D/150)),
    C'(h_UT) = 0 for h_UT <= 13 m, ((h_UT − 13)/10)^1.5 for 13 m < h_UT <= 23 m.
    Input: ``distance_2d_m`` d2D >= 0 [m], any shape; ``h_ut_m`` in [1.5, 23] [m].
    Output: float64 probability in (0, 1], same shape (a float for a scalar).
    """
    d = as_float_array("distance_2d_m", distance_2d_m, lower=0.0)
    h_ut = _h_ut_m(h_ut_m, UMA_LOS_H_UT_RANGE_M)
    return scalar_or_array(_uma_p_los(d, h_ut))


def _uma_p_los(d: np.ndarray, h_ut_m: float) -> np.ndarray:
    c_prime = 0.0 if h_ut_m <= 13.0 else ((h_ut_m - 13.0) / 10.0) ** 1.5
    dd = np.maximum(d, 18.0)
    far = (18.0 / dd + np.exp(-dd / 63.0) * (1.0 - 18.0 / dd)) * (
        1.0 + c_prime * 1.25 * (dd / 100.0) ** 3 * np.exp(-dd / 150.0)
    )
    return np.where(d <= 18.0, 1.0, far)


# -- models ----------------------------------------------------------------------------------
class PathLossModel(abc.ABC):
    """A large-scale model: LoS probability, path loss and shadowing σ per LoS state.

    Subclasses implement :meth:`los_probability`, :meth:`path_loss_db` and
    :meth:`shadowing_sigma_db`; :meth:`power_gain` combines them with the caller's per-client
    random draws, so the model itself holds no random state.
    """

    @abc.abstractmethod
    def los_probability(self, distance_2d_m: ArrayLike) -> np.ndarray:
        """P_LoS(d2D): ``distance_2d_m`` [m], any shape -> float64 in [0, 1], same shape."""

    @abc.abstractmethod
    def path_loss_db(self, distance_2d_m: ArrayLike, los: ArrayLike) -> np.ndarray:
        """PL [dB] without shadowing: ``distance_2d_m`` [m] and bool ``los`` of one shape ->
        float64 [dB], same shape."""

    @abc.abstractmethod
    def shadowing_sigma_db(self, los: ArrayLike) -> np.ndarray:
        """σ_SF [dB] per LoS state: bool ``los``, any shape -> float64 [dB], same shape."""

    def power_gain(
        self, distance_2d_m: np.ndarray, los_uniform: np.ndarray, shadow_z: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Large-scale power gains and LoS states of N clients.

        Input (all the same shape, typically (N,)): ``distance_2d_m`` d2D [m];
        ``los_uniform`` in [0, 1), one U[0, 1) draw per client (LoS iff
        ``los_uniform < P_LoS(d2D)``: drawn once per client, so its state changes
        consistently when it moves); ``shadow_z`` one N(0, 1) draw per client.
        Output: ``(gain, los)``: float64 gain = 10^((σ_SF(los)·z − PL(d2D, los))/10)
        (dimensionless linear power gain) and bool ``los``, both of the input shape.
        """
        d = as_float_array("distance_2d_m", distance_2d_m, lower=0.0)
        u = as_float_array("los_uniform", los_uniform, lower=0.0, upper=1.0, upper_op="<")
        z = as_float_array("shadow_z", shadow_z)
        for name, arr in (("los_uniform", u), ("shadow_z", z)):
            if arr.shape != d.shape:
                raise ValueError(
                    f"{name} must have the shape of distance_2d_m {d.shape}, got {arr.shape}"
                )
        los = u < np.asarray(self.los_probability(d))
        pl_db = np.asarray(self.path_loss_db(d, los), dtype=np.float64)
        sigma_db = np.asarray(self.shadowing_sigma_db(los), dtype=np.float64)
        gain = np.power(10.0, (sigma_db * z - pl_db) / 10.0)
        return gain, los


def _set(obj: Any, **values: Any) -> None:
    """Store validated values on a frozen dataclass instance (from ``__post_init__``)."""
    for name, value in values.items():
        object.__setattr__(obj, name, value)


@dataclass(frozen=True)
class _Urban3gpp(PathLossModel):
    """The shape UMi and UMa share: f_c, heights, a path-loss function and σ_SF by LoS state."""

    carrier_ghz: float
    h_bs_m: float
    h_ut_m: float = 1.5

    H_UT_RANGE_M: ClassVar[tuple[float, float]]
    SIGMA_SF_DB: ClassVar[tuple[float, float]]  # (LoS, NLoS)
    PATH_LOSS_DB: ClassVar[Callable[..., Any]]

    def __post_init__(self) -> None:
        _set(
            self,
            carrier_ghz=_carrier_ghz(self.carrier_ghz),
            h_bs_m=_h_bs_m(self.h_bs_m),
            h_ut_m=_h_ut_m(self.h_ut_m, self.H_UT_RANGE_M),
        )

    def path_loss_db(self, distance_2d_m: ArrayLike, los: ArrayLike) -> np.ndarray:
        """PL [dB] (Table 7.4.1-1), as a float64 array."""
        pl = type(self).PATH_LOSS_DB(
            distance_2d_m,
            carrier_ghz=self.carrier_ghz,
            h_bs_m=self.h_bs_m,
            h_ut_m=self.h_ut_m,
            los=los,
        )
        return np.asarray(pl, dtype=np.float64)

    def shadowing_sigma_db(self, los: ArrayLike) -> np.ndarray:
        """σ_SF [dB] by LoS state (Table 7.4.1-1), the shape of ``los``."""
        mask = _los_mask(los, np.shape(los))
        return np.where(mask, *self.SIGMA_SF_DB)


@dataclass(frozen=True)
class UMi(_Urban3gpp):
    """3GPP TR 38.901 UMi-Street Canyon (Tables 7.4.1-1 and 7.4.2-1).

    Fields: ``carrier_ghz`` f_c in [0.5, 100] [GHz]; ``h_bs_m`` > 1 [m] (standard: 10 m);
    ``h_ut_m`` in [1.5, 22.5] [m]. σ_SF = 4 dB (LoS), 7.82 dB (NLoS). d2D below 10 m is
    clipped to 10 m, above 5 km rejected.
    """

    carrier_ghz: float
    h_bs_m: float = 10.0
    h_ut_m: float = 1.5

    H_UT_RANGE_M = UMI_H_UT_RANGE_M
    SIGMA_SF_DB = (UMI_SIGMA_SF_LOS_DB, UMI_SIGMA_SF_NLOS_DB)
    PATH_LOSS_DB = staticmethod(umi_path_loss_db)

    def los_probability(self, distance_2d_m: ArrayLike) -> np.ndarray:
        """P_LoS(d2D) of UMi: ``distance_2d_m`` [m] -> float64 array, same shape."""
        return np.asarray(umi_los_probability(distance_2d_m), dtype=np.float64)


@dataclass(frozen=True)
class UMa(_Urban3gpp):
    """3GPP TR 38.901 UMa (Tables 7.4.1-1 and 7.4.2-1), with h_UT <= 13 m so h_E = 1 m.

    Fields: ``carrier_ghz`` f_c in [0.5, 100] [GHz]; ``h_bs_m`` > 1 [m] (standard: 25 m);
    ``h_ut_m`` in [1.5, 13] [m]. σ_SF = 4 dB (LoS), 6 dB (NLoS). d2D below 10 m is clipped
    to 10 m, above 5 km rejected.
    """

    carrier_ghz: float
    h_bs_m: float = 25.0
    h_ut_m: float = 1.5

    H_UT_RANGE_M = UMA_H_UT_RANGE_M
    SIGMA_SF_DB = (UMA_SIGMA_SF_LOS_DB, UMA_SIGMA_SF_NLOS_DB)
    PATH_LOSS_DB = staticmethod(uma_path_loss_db)

    def los_probability(self, distance_2d_m: ArrayLike) -> np.ndarray:
        """P_LoS(d2D) of UMa at this h_UT: ``distance_2d_m`` [m] -> float64 array."""
        return np.asarray(uma_los_probability(distance_2d_m, self.h_ut_m), dtype=np.float64)


@dataclass(frozen=True, init=False, repr=False)
class SingleSlope(PathLossModel):
    """The paper's model: power gain 10^(G_ref/10)·d^(−2γ)·10^(σ·z/10), always LoS.

    ``SingleSlope(exponent, reference_gain_db=0.0, shadowing_sigma_db=0.0)``: ``exponent``
    γ >= 0, the paper's *amplitude* exponent (h = s·q^{-γ}, power falls as d^{-2γ}; see
    :mod:`channels.pathloss`); ``reference_gain_db`` G_ref [dB] (the power gain at 1 m, any
    sign); ``shadowing_sigma_db`` σ >= 0 [dB], stored as the field ``sigma_db`` because
    ``shadowing_sigma_db(los)`` is the :class:`PathLossModel` method. Distances d > 0 [m], not
    clipped; PL = −G_ref + 20·γ·log10(d) [dB].
    """

    exponent: float
    reference_gain_db: float
    sigma_db: float

    def __init__(
        self, exponent: float, reference_gain_db: float = 0.0, shadowing_sigma_db: float = 0.0
    ) -> None:
        _set(
            self,
            exponent=as_float("exponent", exponent, lower=0.0),
            reference_gain_db=as_float("reference_gain_db", reference_gain_db),
            sigma_db=as_float("shadowing_sigma_db", shadowing_sigma_db, lower=0.0),
        )

    def __repr__(self) -> str:
        return (
            f"SingleSlope(exponent={self.exponent!r}, "
            f"reference_gain_db={self.reference_gain_db!r}, shadowing_sigma_db={self.sigma_db!r})"
        )

    def los_probability(self, distance_2d_m: ArrayLike) -> np.ndarray:
        """1 everywhere (no LoS/NLoS distinction), the shape of ``distance_2d_m``."""
        d = as_float_array("distance_2d_m", distance_2d_m, lower=0.0, lower_op=">")
        return np.ones(d.shape)

    def path_loss_db(self, distance_2d_m: ArrayLike, los: ArrayLike) -> np.ndarray:
        """PL = −G_ref + 20·γ·log10(d) [dB]; ``los`` is checked and ignored."""
        d = as_float_array("distance_2d_m", distance_2d_m, lower=0.0, lower_op=">")
        _los_mask(los, d.shape)
        return 20.0 * self.exponent * np.log10(d) - self.reference_gain_db

    def shadowing_sigma_db(self, los: ArrayLike) -> np.ndarray:
        """σ [dB] for every entry of ``los`` (float64, the shape of ``los``)."""
        mask = _los_mask(los, np.shape(los))
        return np.full(mask.shape, self.sigma_db)

    def power_gain(
        self, distance_2d_m: np.ndarray, los_uniform: np.ndarray, shadow_z: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`PathLossModel.power_gain` (same checks, LoS always True), with the gain
        computed as the product 10^(G_ref/10)·d^(−2γ)·10^(σ·z/10), the form
        :class:`channels.cell.Cell` uses, rather than through PL in dB."""
        _, los = super().power_gain(distance_2d_m, los_uniform, shadow_z)
        d = np.asarray(distance_2d_m, dtype=np.float64)
        z = np.asarray(shadow_z, dtype=np.float64)
        gain = (
            10.0 ** (self.reference_gain_db / 10.0)
            * np.power(d, -2.0 * self.exponent)
            * np.power(10.0, self.sigma_db * z / 10.0)
        )
        return gain, los


#: Path-loss models by name; a new model is one :class:`PathLossModel` subclass plus one line
#: here (or a ``register`` call, or an entry point of the group ``channels.path_loss_models``).
PATH_LOSS_MODELS: Registry[type] = Registry(
    "path-loss model",
    {
        "single_slope": "channels.pathloss_3gpp:SingleSlope",
        "3gpp_umi": "channels.pathloss_3gpp:UMi",
        "3gpp_uma": "channels.pathloss_3gpp:UMa",
    },
    entry_point_group="channels.path_loss_models",
)


def make_path_loss(name: str, **params: Any) -> PathLossModel:
    """Build a path-loss model by registry name.

    Input: ``name`` in :data:`PATH_LOSS_MODELS`; ``params`` its constructor's keywords (e.g.
    ``carrier_ghz=3.5, h_ut_m=1.5`` for ``"3gpp_umi"``).
    Output: the model instance. An unknown name, an unknown or missing keyword, or a bad
    value raises a one-line ``ValueError`` (names and keywords listed).
    """
    return PATH_LOSS_MODELS.build(name, **params)
