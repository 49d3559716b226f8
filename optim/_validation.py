"""Argument checks shared by the ``optim`` modules.

Every check raises :class:`ValueError` whose message names the argument, the accepted range and
the value received, so that a configuration mistake reads as one clear line.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "check_int",
    "check_real",
    "check_snr",
    "check_nonneg_array",
]


def check_int(name: str, value: object, *, low: int, high: int | None = None) -> int:
    """Return ``value`` as ``int`` if it is an integer in [low, high] (high None: no cap)."""
    if type(value) is not int and (
        isinstance(value, bool) or not isinstance(value, numbers.Integral)
    ):
        raise ValueError(f"{name} must be an integer in {_int_range(low, high)}; got {value!r}")
    v = int(value)
    if v < low or (high is not None and v > high):
        raise ValueError(f"{name} must be an integer in {_int_range(low, high)}; got {v}")
    return v


def _int_range(low: int, high: int | None) -> str:
    return f"[{low}, {high}]" if high is not None else f"[{low}, inf)"


def check_real(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` inside the given interval.

    ``low``/``high`` of ``None`` mean unbounded on that side; ``*_open`` excludes the end point.
    """
    if type(value) is float or type(value) is int:  # fast path for the common types
        v = float(value)
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"{name} must be a real number in {_range(low, high, low_open, high_open)}"
            f"; got {value!r}"
        )
    else:
        v = float(value)
    bad = not math.isfinite(v)
    if low is not None:
        bad = bad or (v <= low if low_open else v < low)
    if high is not None:
        bad = bad or (v >= high if high_open else v > high)
    if bad:
        raise ValueError(
            f"{name} must be a finite number in {_range(low, high, low_open, high_open)}; got {v!r}"
        )
    return v


def _range(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    left = "(" if (low_open or low is None) else "["
    right = ")" if (high_open or high is None) else "]"
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return f"{left}{lo}, {hi}{right}"


def check_snr(
    name: str, snr: ArrayLike, *, length: int | None = None, strictly_positive: bool = True
) -> NDArray[np.float64]:
    """Validate a 1-D array of linear SNRs and return it as ``float64``.

    Raises if it is not 1-D, is empty, has the wrong ``length``, holds NaN/inf, or holds values
    ``<= 0`` (``strictly_positive=True``) / ``< 0`` (``strictly_positive=False``).
    """
    arr = np.asarray(snr, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D array of linear SNRs; got shape {arr.shape}"
        )
    if (length is None or arr.size == length) and (
        (arr.min() > 0.0 if strictly_positive else arr.min() >= 0.0) and arr.max() < math.inf
    ):
        return arr  # fast path (NaN fails every comparison); the checks below name the fault
    if length is not None and arr.size != length:
        raise ValueError(f"{name} must have length {length}; got length {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN/inf); got {arr[~np.isfinite(arr)][:3]}")
    if strictly_positive:
        if np.any(arr <= 0.0):
            bad = np.flatnonzero(arr <= 0.0)
            raise ValueError(
                f"{name} must be > 0 for every scheduled client (a zero SNR means an infinite "
                f"upload delay: filter outage clients before calling); got {arr[bad[0]]!r} at "
                f"index {int(bad[0])}"
            )
    elif np.any(arr < 0.0):
        bad = np.flatnonzero(arr < 0.0)
        raise ValueError(f"{name} must be >= 0; got {arr[bad[0]]!r} at index {int(bad[0])}")
    return arr


def check_nonneg_array(
    name: str, values: ArrayLike, *, length: int | None = None
) -> NDArray[np.float64]:
    """Validate a 1-D array of finite, non-negative numbers (e.g. bits, seconds)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got shape {arr.shape}")
    if length is not None and arr.size != length:
        raise ValueError(f"{name} must have length {length}; got length {arr.size}")
    if not (arr.min() >= 0.0 and arr.max() < math.inf):  # NaN fails both comparisons
        bad = arr[~(np.isfinite(arr) & (arr >= 0.0))][0]
        raise ValueError(f"{name} must hold finite values >= 0; got {bad!r}")
    return arr
