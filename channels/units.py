"""Decibel and power-unit conversions.

All functions accept scalars or arrays and return a Python ``float`` for scalar input and a
float64 ``np.ndarray`` (same shape) otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float_array, scalar_or_array

__all__ = ["db_to_linear", "dbm_to_watt", "linear_to_db", "watt_to_dbm"]


def db_to_linear(x_db: ArrayLike) -> float | np.ndarray:
    """Decibels to a linear power ratio, 10^(x/10).

    Input: ``x_db`` [dB], any shape; -inf maps to 0, NaN is rejected.
    Output: linear ratio (dimensionless), same shape.
    """
    x = as_float_array("x_db", x_db, allow_inf=True)
    return scalar_or_array(np.power(10.0, x / 10.0))


def linear_to_db(x: ArrayLike) -> float | np.ndarray:
    """Linear power ratio to decibels, 10·log10(x).

    Input: ``x`` >= 0 (dimensionless), any shape; 0 maps to -inf.
    Output: [dB], same shape.
    """
    arr = as_float_array("x", x, lower=0.0, allow_inf=True)
    with np.errstate(divide="ignore"):
        return scalar_or_array(10.0 * np.log10(arr))


def dbm_to_watt(p_dbm: ArrayLike) -> float | np.ndarray:
    """Power in dBm to watts (30 dBm = 1 W, 0 dBm = 1 mW).

    Input: ``p_dbm`` [dBm], any shape; -inf maps to 0 W.
    Output: [W], same shape.
    """
    p = as_float_array("p_dbm", p_dbm, allow_inf=True)
    return scalar_or_array(np.power(10.0, (p - 30.0) / 10.0))


def watt_to_dbm(p_w: ArrayLike) -> float | np.ndarray:
    """Power in watts to dBm (1 W = 30 dBm).

    Input: ``p_w`` >= 0 [W], any shape; 0 W maps to -inf dBm.
    Output: [dBm], same shape.
    """
    p = as_float_array("p_w", p_w, lower=0.0, allow_inf=True)
    with np.errstate(divide="ignore"):
        return scalar_or_array(10.0 * np.log10(p) + 30.0)
