"""Uplink transmit power per client: fixed, per device class, or open-loop power control.

A power-control model answers ``dbm(path_loss_db, client_class)``: the (N,) transmit powers
[dBm] of clients whose large-scale loss (path loss and shadowing) is ``path_loss_db`` [dB] and
whose device classes are ``client_class`` (None when the devices have no classes).

- ``fixed`` (:class:`FixedPower`): every client at ``p_dbm``;
- ``per_class`` (:class:`PerClassPower`): each device class at its own power;
- ``fractional`` (:class:`FractionalPower`): 3GPP TS 38.213 §7.1.1 open-loop fractional power
  control, P = min(P_max, P0 + α·PL) (:func:`channels.energy.fractional_power_control_dbm`),
  without the bandwidth, MCS and closed-loop terms.

Models are entries of :data:`POWER_CONTROLS` (entry-point group
``channels.power_controls``); :func:`make_power_control` builds one by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from channels._validation import as_float
from channels.energy import fractional_power_control_dbm, per_client_values
from channels.registry import Registry
from channels.units import dbm_to_watt

__all__ = [
    "POWER_CONTROLS",
    "FixedPower",
    "FractionalPower",
    "PerClassPower",
    "PowerControl",
    "make_power_control",
]


class PowerControl(ABC):
    """Each client's transmit power from its loss and device class (see the module docstring)."""

    @abstractmethod
    def dbm(self, path_loss_db: np.ndarray, client_class: Sequence[str] | None) -> np.ndarray:
        """(N,) transmit powers [dBm]; ``path_loss_db`` (N,) [dB], ``client_class`` (N,) or
        None."""

    def watts(self, path_loss_db: np.ndarray, client_class: Sequence[str] | None) -> np.ndarray:
        """(N,) transmit powers [W] (30 dBm = 1 W)."""
        return np.asarray(dbm_to_watt(self.dbm(path_loss_db, client_class)), dtype=np.float64)


class FixedPower(PowerControl):
    """Every client at ``p_dbm`` [dBm]."""

    def __init__(self, p_dbm: float) -> None:
        self.p_dbm = as_float("p_dbm", p_dbm)

    def dbm(self, path_loss_db: np.ndarray, client_class: Sequence[str] | None) -> np.ndarray:
        return np.full(np.shape(path_loss_db), self.p_dbm)


class PerClassPower(PowerControl):
    """Each device class at its own power: ``per_class_dbm`` {class name: dBm}."""

    def __init__(self, per_class_dbm: Mapping[str, float]) -> None:
        if not isinstance(per_class_dbm, Mapping) or not per_class_dbm:
            raise ValueError("per_class_dbm must be a non-empty mapping {device class: dBm}")
        self.per_class_dbm = {
            str(c): as_float(f"per_class_dbm[{c!r}]", v) for c, v in per_class_dbm.items()
        }

    def dbm(self, path_loss_db: np.ndarray, client_class: Sequence[str] | None) -> np.ndarray:
        n = int(np.size(path_loss_db))
        return per_client_values("per_class_dbm", self.per_class_dbm, client_class, n)


class FractionalPower(PowerControl):
    """Open-loop fractional power control, min(P_max, P0 + α·PL) [dBm] (TS 38.213 §7.1.1)."""

    def __init__(self, p_max_dbm: float, p0_dbm: float, alpha: float) -> None:
        self.p_max_dbm = as_float("p_max_dbm", p_max_dbm)
        self.p0_dbm = as_float("p0_dbm", p0_dbm)
        self.alpha = as_float("alpha", alpha, lower=0.0, upper=1.0)

    def dbm(self, path_loss_db: np.ndarray, client_class: Sequence[str] | None) -> np.ndarray:
        p = fractional_power_control_dbm(
            path_loss_db, p_max_dbm=self.p_max_dbm, p0_dbm=self.p0_dbm, alpha=self.alpha
        )
        return np.asarray(p, dtype=np.float64).reshape(np.shape(path_loss_db))


#: ``channel.power_control``: name -> power-control model.
POWER_CONTROLS: Registry[type] = Registry(
    "power control",
    {
        "fixed": "channels.power_control:FixedPower",
        "per_class": "channels.power_control:PerClassPower",
        "fractional": "channels.power_control:FractionalPower",
    },
    entry_point_group="channels.power_controls",
)


def make_power_control(name: str, **params: Any) -> PowerControl:
    """Build a power-control model by registry name (one-line errors for an unknown name or
    keyword, listing the accepted ones)."""
    return POWER_CONTROLS.build(name, **params)
