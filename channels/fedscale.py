"""FedScale's trace pickles to the JSON trace files of :mod:`channels.traces`, safely.

FedScale (Lai et al., "FedScale: Benchmarking Model and System Performance of Federated
Learning at Scale", ICML 2022, arXiv:2105.11367) ships its client traces as Python pickles:

- ``client_behave_trace``: ``{client id: {"active": [s, ...], "inactive": [s, ...],
  "duration": ..., "finish_time": ..., "model": ...}}``, client k available on
  ``[active[i], inactive[i])``;
- ``client_device_capacity``: ``{client id: {"computation": ms per sample, "communication":
  kbit/s}}``.

Unpickling a file can run any code it names, so :func:`load_trace_pickle` uses a restricted
unpickler: only plain containers (dict, list, tuple, set), numbers, strings, booleans, None,
``collections.OrderedDict`` and numpy scalars (``numpy.int64(3)`` etc., which FedScale's files
hold) are built; a pickle naming anything else is refused before it runs. The converters
renumber the clients 0 .. N-1 in ascending order of FedScale's ids and turn numpy scalars into
plain numbers; zero-length availability intervals (``active == inactive``, which FedScale
accepts and which hold no time) are dropped and counted. Every problem is one ``ValueError``
line naming the file, the client and the field.
"""

from __future__ import annotations

import io
import json
import math
import numbers
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "CONVERTERS",
    "Conversion",
    "convert_behave_trace",
    "convert_device_trace",
    "load_trace_pickle",
    "trace_kind",
]

#: the first two bytes of a gzip file
_GZIP_MAGIC = b"\x1f\x8b"
#: (module, name) pairs the restricted unpickler builds: numpy scalars and their dtypes.
_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "dtype"),
    ("collections", "OrderedDict"),
}


#: what the unpickler raises for bytes that are no (complete) pickle
_BROKEN = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
)


class _RefusedGlobal(pickle.UnpicklingError):
    """A global the restricted unpickler does not build (its ``module.name``)."""


class _PlainUnpickler(pickle.Unpickler):
    """Builds plain data and numpy scalars only; any other global is refused unexecuted."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise _RefusedGlobal(f"{module}.{name}")


def _what_else(data: bytes) -> str | None:
    """What ``data`` is when it is plainly not a pickle (empty, gzip, JSON); None otherwise."""
    if not data:
        return "is empty (0 bytes), not a pickle"
    if data[:2] == _GZIP_MAGIC:
        return "is gzip-compressed, not a pickle; decompress it first (gunzip FILE)"
    if data.lstrip()[:1] in (b"{", b"["):
        try:
            json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return None
        return (
            "is JSON, not a pickle (traces convert reads FedScale's pickles; a JSON trace needs "
            "no conversion: give it to availability.trace or devices.trace)"
        )
    return None


def _unreadable(data: bytes, err: Exception) -> str:
    """Why the pickle in ``data`` could not be read: cut short, or its own error."""
    if data[:1] == pickle.PROTO and not data.endswith(pickle.STOP):
        return (
            f"is a truncated pickle ({len(data):,} bytes that stop before its end: an "
            "interrupted download or copy?)"
        )
    return f"is not a readable pickle ({type(err).__name__}: {err})"


def load_trace_pickle(path: str | Path) -> dict[Any, Any]:
    """The dict pickled in ``path``, built by the restricted unpickler (module docstring).

    Raises:
        ValueError: one line when the file is unreadable, empty, gzip-compressed, JSON, a
            truncated pickle or no pickle at all, names a global other than a numpy scalar's
            (refused before anything runs), or is not a non-empty dict.
    """
    where = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ValueError(f"{where}: cannot read: {err.strerror or err}") from None
    other = _what_else(data)
    if other is not None:
        raise ValueError(f"{where}: {other}")
    try:
        trace = _PlainUnpickler(io.BytesIO(data)).load()
    except _RefusedGlobal as err:
        raise ValueError(
            f"{where}: the pickle refers to {err}, which is refused (a pickle can run code); "
            "accepted: plain containers, numbers, strings and numpy scalars"
        ) from None
    except _BROKEN as err:
        raise ValueError(f"{where}: {_unreadable(data, err)}") from None
    if not isinstance(trace, dict) or not trace:
        got = "an empty dict" if isinstance(trace, dict) else type(trace).__name__
        raise ValueError(f"{where}: expected a non-empty dict keyed by client id, got {got}")
    return trace


@dataclass(frozen=True)
class Conversion:
    """A converted trace: ``data`` (JSON-ready, keys "0".."N-1"), ``clients_in_file`` (clients
    in the pickle), ``intervals`` (kept, behaviour traces) and ``dropped_zero_length``."""

    data: dict[str, dict[str, Any]]
    clients_in_file: int
    intervals: int = 0
    dropped_zero_length: int = 0


def _sorted_ids(where: str, trace: dict[Any, Any], n_clients: int | None) -> list[Any]:
    """FedScale's client ids in ascending order, the first ``n_clients`` (all with None)."""
    try:
        ids = sorted(trace, key=lambda k: (int(k), str(k)))
    except (TypeError, ValueError):
        bad = next(k for k in trace if not _is_int_like(k))
        raise ValueError(f"{where}: client id {bad!r}: expected an integer id") from None
    if n_clients is not None:
        if n_clients < 1:
            raise ValueError(f"--clients: expected at least 1, got {n_clients}")
        if n_clients > len(ids):
            raise ValueError(
                f"--clients: {n_clients} asked for, but {where} holds {len(ids)} clients"
            )
        ids = ids[:n_clients]
    return ids


def _is_int_like(key: Any) -> bool:
    try:
        int(key)
    except (TypeError, ValueError):
        return False
    return True


def _number(where: str, client: Any, field: str, value: Any) -> float:
    """``value`` as a finite float (numpy scalars included); one line otherwise."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"{where}: client {client!r}, field {field}: expected a number, got {value!r}"
        )
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{where}: client {client!r}, field {field}: expected a finite number")
    return number


def _entry(where: str, trace: dict[Any, Any], client: Any) -> dict[str, Any]:
    entry = trace[client]
    if not isinstance(entry, dict):
        raise ValueError(
            f"{where}: client {client!r}: expected a dict of fields, got {type(entry).__name__}"
        )
    return entry


def _field(where: str, entry: dict[str, Any], client: Any, field: str) -> Any:
    if field not in entry:
        raise ValueError(f"{where}: client {client!r}: no field {field!r}")
    return entry[field]


def convert_behave_trace(
    trace: dict[Any, Any], *, where: str, n_clients: int | None = None
) -> Conversion:
    """FedScale's client-behaviour trace as ``read_availability_trace``'s JSON.

    Client k of the output is the k-th smallest FedScale id; its intervals are
    ``[active[i], inactive[i])`` in seconds, sorted by start, zero-length ones dropped.
    Raises ``ValueError`` (one line) for lists of unequal length, a negative start or an
    end before its start.
    """
    out: dict[str, dict[str, Any]] = {}
    kept = dropped = 0
    for new_id, client in enumerate(_sorted_ids(where, trace, n_clients)):
        entry = _entry(where, trace, client)
        active = _field(where, entry, client, "active")
        inactive = _field(where, entry, client, "inactive")
        if not isinstance(active, list | tuple) or not isinstance(inactive, list | tuple):
            raise ValueError(f"{where}: client {client!r}: active and inactive must be lists")
        if len(active) != len(inactive):
            raise ValueError(
                f"{where}: client {client!r}: {len(active)} active times but "
                f"{len(inactive)} inactive times; expected one of each per interval"
            )
        starts, ends = [], []
        for i, (a, b) in enumerate(zip(active, inactive, strict=True)):
            start = _number(where, client, f"active[{i}]", a)
            end = _number(where, client, f"inactive[{i}]", b)
            if start < 0 or end < start:
                raise ValueError(
                    f"{where}: client {client!r}, interval {i}: [{start:g}, {end:g}) is not an "
                    "interval; accepted: 0 <= active <= inactive"
                )
            if end == start:
                dropped += 1
                continue
            starts.append(start)
            ends.append(end)
        order = sorted(range(len(starts)), key=starts.__getitem__)
        out[str(new_id)] = {
            "active": [starts[i] for i in order],
            "inactive": [ends[i] for i in order],
        }
        kept += len(starts)
    if kept == 0:
        raise ValueError(f"{where}: no interval of positive length among the converted clients")
    return Conversion(out, len(trace), intervals=kept, dropped_zero_length=dropped)


def convert_device_trace(
    trace: dict[Any, Any], *, where: str, n_clients: int | None = None
) -> Conversion:
    """FedScale's device-capacity trace as ``read_compute_trace``'s JSON: per client
    ``computation`` [ms per sample] (> 0) and ``communication`` [kbit/s] (kept, unused)."""
    out: dict[str, dict[str, Any]] = {}
    for new_id, client in enumerate(_sorted_ids(where, trace, n_clients)):
        entry = _entry(where, trace, client)
        computation = _number(
            where, client, "computation", _field(where, entry, client, "computation")
        )
        if computation <= 0:
            raise ValueError(
                f"{where}: client {client!r}, field computation: expected > 0 ms per sample, "
                f"got {computation:g}"
            )
        row = {"computation": computation}
        if "communication" in entry:
            row["communication"] = _number(where, client, "communication", entry["communication"])
        out[str(new_id)] = row
    return Conversion(out, len(trace))


#: Converter per trace kind, as ``wirelessfl traces convert --kind`` names them.
CONVERTERS = {"behave": convert_behave_trace, "device": convert_device_trace}


def trace_kind(trace: dict[Any, Any], *, where: str) -> str:
    """``"behave"`` or ``"device"``, from the fields of the first client's entry."""
    entry = next(iter(trace.values()))
    fields = set(entry) if isinstance(entry, dict) else set()
    if {"active", "inactive"} <= fields:
        return "behave"
    if "computation" in fields:
        return "device"
    raise ValueError(
        f"{where}: neither a behaviour trace (fields active, inactive) nor a device-capacity "
        f"trace (field computation): the first client has {sorted(map(str, fields))}"
    )
