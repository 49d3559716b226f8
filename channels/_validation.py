"""Input checks shared by the channel modules (private).

Every check raises ``ValueError`` with a message that names the argument and the accepted
range, e.g. ``"bandwidth_hz must be > 0, got -1.0"``. NaN never passes a range check.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

_OPS = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


def _first_bad(arr: np.ndarray, ok: np.ndarray) -> Any:
    """The first element of ``arr`` where ``ok`` is False, as a Python scalar."""
    idx = np.flatnonzero(~np.broadcast_to(ok, arr.shape))[0]
    return arr.reshape(-1)[idx].item()


def as_float_array(
    name: str,
    value: ArrayLike,
    *,
    lower: float | None = None,
    lower_op: str = ">=",
    upper: float | None = None,
    upper_op: str = "<=",
    allow_inf: bool = False,
) -> np.ndarray:
    """``value`` as a float64 array, checked against a range.

    Input: ``value`` array-like of real numbers; ``lower``/``upper`` bounds with their
    comparison (``">"``, ``">="``, ``"<"``, ``"<="``); ``allow_inf`` lets ±inf through the
    finiteness check (bounds still apply).
    Output: float64 array (0-d for scalars); raises ``ValueError`` naming ``name``.
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number or array of them, got {value!r}") from None
    rng_txt = _range_text(lower, lower_op, upper, upper_op)
    if arr.size == 0:
        return arr
    if np.isnan(arr).any():
        raise ValueError(f"{name} must be {rng_txt}, got nan")
    if not allow_inf and not np.isfinite(arr).all():
        bad = _first_bad(arr, np.isfinite(arr))
        raise ValueError(f"{name} must be finite and {rng_txt}, got {bad}")
    if lower is not None:
        ok = _OPS[lower_op](arr, lower)
        if not ok.all():
            raise ValueError(f"{name} must be {rng_txt}, got {_first_bad(arr, ok)}")
    if upper is not None:
        ok = _OPS[upper_op](arr, upper)
        if not ok.all():
            raise ValueError(f"{name} must be {rng_txt}, got {_first_bad(arr, ok)}")
    return arr


def _range_text(lower: float | None, lower_op: str, upper: float | None, upper_op: str) -> str:
    if lower is not None and upper is not None:
        left = "[" if lower_op == ">=" else "("
        right = "]" if upper_op == "<=" else ")"
        return f"in {left}{lower:g}, {upper:g}{right}"
    if lower is not None:
        return f"{lower_op} {lower:g}"
    if upper is not None:
        return f"{upper_op} {upper:g}"
    return "a real number (not nan)"


def as_float(
    name: str,
    value: Any,
    *,
    lower: float | None = None,
    lower_op: str = ">=",
    upper: float | None = None,
    upper_op: str = "<=",
    allow_inf: bool = False,
) -> float:
    """A scalar version of :func:`as_float_array` returning a Python float."""
    arr = as_float_array(
        name,
        value,
        lower=lower,
        lower_op=lower_op,
        upper=upper,
        upper_op=upper_op,
        allow_inf=allow_inf,
    )
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    return float(arr)


def as_int(name: str, value: Any, *, lower: int | None = None, upper: int | None = None) -> int:
    """``value`` as a Python int in ``[lower, upper)``; bools and non-integral values rejected."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if lower is not None and value < lower:
        raise ValueError(f"{name} must be >= {lower}, got {value}")
    if upper is not None and value >= upper:
        raise ValueError(f"{name} must be < {upper}, got {value}")
    return value


def as_int_array(
    name: str, value: ArrayLike, *, lower: int | None = None, upper: int | None = None
) -> np.ndarray:
    """``value`` as an int64 array with every element in ``[lower, upper)``."""
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        raise ValueError(f"{name} must hold integers, got booleans")
    if not np.issubdtype(arr.dtype, np.integer):
        try:
            as_f = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must hold integers, got {value!r}") from None
        if arr.size and (not np.isfinite(as_f).all() or (as_f != np.round(as_f)).any()):
            bad = _first_bad(as_f, np.isfinite(as_f) & (as_f == np.round(as_f)))
            raise ValueError(f"{name} must hold integers, got {bad}")
        arr = as_f
    arr = arr.astype(np.int64)
    if lower is not None and arr.size and (arr < lower).any():
        raise ValueError(f"{name} must be >= {lower}, got {_first_bad(arr, arr >= lower)}")
    if upper is not None and arr.size and (arr >= upper).any():
        raise ValueError(f"{name} must be < {upper}, got {_first_bad(arr, arr < upper)}")
    return arr


def check_shares(name: str, share: ArrayLike, *, atol: float = 1e-9) -> np.ndarray:
    """Bandwidth shares: every entry in [0, 1] and the sum along the last axis <= 1 + atol."""
    arr = as_float_array(name, share, lower=0.0, upper=1.0)
    if arr.ndim >= 1 and arr.size:
        total = arr.sum(axis=-1)
        if (total > 1.0 + atol).any():
            bad = float(np.max(total))
            raise ValueError(
                f"{name} must sum to <= 1 along the last axis (tolerance {atol:g}), "
                f"got a sum of {bad!r}"
            )
    return arr


def scalar_or_array(arr: np.ndarray) -> float | np.ndarray:
    """A Python float for a 0-d array, else the array itself."""
    if arr.ndim == 0:
        return float(arr)
    return arr
