"""Trace files: client availability, client compute speed and per-round SNR.

Every reader takes ``path`` (``str`` or ``os.PathLike``), validates the whole file and returns
numpy arrays; any problem raises ``ValueError`` with one line naming the file, where in it
(line and column for CSV, client key and field for JSON, round and client for SNR arrays) and
what is accepted. Client ids are 0 .. N-1.

- :func:`read_availability_trace`: CSV ``client,start_s,end_s`` (one row per available
  interval [start_s, end_s) in virtual seconds), or FedScale's client-behaviour trace as JSON
  ``{"<client id>": {"active": [...], "inactive": [...]}}``.
- :func:`read_compute_trace`: CSV ``client,flops_per_s`` (one row per client), or FedScale's
  device-capacity trace as JSON ``{"<client id>": {"computation": <ms per sample>,
  "communication": <kbit/s>}}`` with ``flops_per_s = flops_per_sample / (computation / 1000)``.
- :func:`read_snr_trace`: ``.npy`` or header-less ``.csv`` of shape (rounds, clients) in dB;
  :func:`snr_trace_linear` gives one round as linear SNR.

FedScale (Lai et al., ICML 2022) ships both of its traces as Python pickles
(``client_behave_trace``, ``client_device_capacity``); this module never unpickles files
(unpickling runs arbitrary code). Convert them once with ``wirelessfl traces convert --from
fedscale FILE --out OUT.json`` (:mod:`channels.fedscale`: a restricted unpickler, clients
renumbered 0 .. N-1, zero-length intervals dropped).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from typing import Any

import numpy as np

from channels._validation import as_float, as_int

__all__ = [
    "read_availability_trace",
    "read_compute_trace",
    "read_snr_trace",
    "snr_trace_linear",
]

PathLike = str | os.PathLike[str]

AVAILABILITY_HEADER = ("client", "start_s", "end_s")
COMPUTE_HEADER = ("client", "flops_per_s")

_INT = re.compile(r"[0-9]+")


# -- shared helpers ------------------------------------------------------------------------
def _path(path: Any) -> str:
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise ValueError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    return os.fspath(path)


def _read_text(where: str) -> str:
    try:
        with open(where, encoding="utf-8-sig", newline="") as fh:
            return fh.read()
    except OSError as exc:
        raise ValueError(f"{where}: cannot read the file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not UTF-8 text (byte {exc.start}); accepted: UTF-8") from None


def _suffix(where: str, accepted: tuple[str, ...]) -> str:
    suffix = os.path.splitext(where)[1].lower()
    if suffix not in accepted:
        raise ValueError(
            f"{where}: unsupported file type {suffix or '(no extension)'!r}; accepted: "
            f"{', '.join(accepted)}"
        )
    return suffix


def _csv_rows(where: str, header: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every non-blank data row, after checking the header line."""
    text = _read_text(where)
    rows: list[tuple[int, list[str]]] = []
    reader = csv.reader(text.splitlines())
    head: list[str] | None = None
    try:
        for fields in reader:
            if not fields or all(not f.strip() for f in fields):
                continue  # blank line
            if head is None:
                head = [f.strip() for f in fields]
                if tuple(head) != header:
                    raise ValueError(
                        f"{where}: line {reader.line_num}: header must be exactly "
                        f"{','.join(header)!r}, got {','.join(head)!r}"
                    )
                continue
            if len(fields) != len(header):
                raise ValueError(
                    f"{where}: line {reader.line_num}: expected {len(header)} fields "
                    f"({','.join(header)}), got {len(fields)}"
                )
            rows.append((reader.line_num, [f.strip() for f in fields]))
    except csv.Error as exc:
        raise ValueError(f"{where}: line {reader.line_num}: malformed CSV: {exc}") from None
    if head is None:
        raise ValueError(f"{where}: empty file; expected the header line {','.join(header)!r}")
    return rows


def _client_field(where: str, line: int, text: str, n_clients: int) -> int:
    if not _INT.fullmatch(text):
        raise ValueError(
            f"{where}: line {line}, column 'client': expected an integer id in 0..{n_clients - 1}"
            f", got {text!r}"
        )
    k = int(text)
    if k >= n_clients:
        raise ValueError(
            f"{where}: line {line}, column 'client': id {k} is out of range; accepted: "
            f"0..{n_clients - 1} (n_clients={n_clients})"
        )
    return k


def _float_field(where: str, line: int, column: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(
            f"{where}: line {line}, column {column!r}: expected a number, got {text!r}"
        ) from None


def _load_json(where: str) -> dict[str, Any]:
    text = _read_text(where)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{where}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(data, dict) or not data:
        got = "an empty object" if isinstance(data, dict) else f"a JSON {type(data).__name__}"
        raise ValueError(
            f'{where}: expected a non-empty JSON object {{"<client id>": {{...}}, ...}}, got {got}'
        )
    return data


def _json_client(where: str, key: str, n_clients: int) -> int:
    if not _INT.fullmatch(key):
        raise ValueError(
            f"{where}: client key {key!r}: expected an integer id in 0..{n_clients - 1} "
            "(renumber FedScale's ids when converting)"
        )
    k = int(key)
    if k >= n_clients:
        raise ValueError(
            f"{where}: client key {key!r}: id out of range; accepted: 0..{n_clients - 1} "
            f"(n_clients={n_clients})"
        )
    return k


def _json_number(where: str, key: str, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(
            f"{where}: client {key!r}, field {field}: expected a number, got {value!r}"
        )
    return float(value)


def _check_n(where: str, n_clients: Any) -> int:
    try:
        return as_int("n_clients", n_clients, lower=1)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


# -- availability ----------------------------------------------------------------------------
def read_availability_trace(path: PathLike, n_clients: int) -> list[np.ndarray]:
    """Per-client availability intervals from a trace file.

    Formats (chosen by the extension):

    - ``.csv``: header ``client,start_s,end_s``, then one row per interval in which the client
      is available, [start_s, end_s) in virtual seconds: ``client`` an integer in 0..N-1,
      ``start_s`` finite and >= 0, ``end_s`` > ``start_s`` (``inf`` allowed: available from
      start_s on). A client may have many rows; clients with no row are never available.
      Blank lines are skipped; at least one interval is required.
    - ``.json``: FedScale's client-behaviour trace converted to JSON, ``{"<client id>":
      {"active": [t0, t1, ...], "inactive": [u0, u1, ...], ...}}``: the client is available
      on [active[i], inactive[i]) for each i (seconds; the lists have the same length; other
      keys such as ``finish_time`` are ignored). Clients not listed are never available.
      FedScale itself wraps time modulo ``finish_time`` and closes the intervals; here time
      is not wrapped (after the last interval a client stays off) and ends are open.

    Input: ``path``; ``n_clients`` N >= 1.
    Output: list of N float64 arrays of shape (m_k, 2) ([start_s, end_s) rows, sorted by
    start; m_k = 0 for a client that is never available).
    """
    where = _path(path)
    n = _check_n(where, n_clients)
    suffix = _suffix(where, (".csv", ".json"))
    per_client: list[list[tuple[float, float]]] = [[] for _ in range(n)]
    if suffix == ".csv":
        for line, (c, s, e) in _csv_rows(where, AVAILABILITY_HEADER):
            k = _client_field(where, line, c, n)
            start = _float_field(where, line, "start_s", s)
            end = _float_field(where, line, "end_s", e)
            if not math.isfinite(start) or start < 0.0:
                raise ValueError(
                    f"{where}: line {line}, column 'start_s': expected a finite time >= 0 [s], "
                    f"got {s!r}"
                )
            if not end > start:  # also rejects nan
                raise ValueError(
                    f"{where}: line {line}, column 'end_s': expected a time > start_s={start!r} "
                    f"(inf allowed), got {e!r}"
                )
            per_client[k].append((start, end))
    else:
        for key, entry in _load_json(where).items():
            k = _json_client(where, key, n)
            if not isinstance(entry, dict) or "active" not in entry or "inactive" not in entry:
                raise ValueError(
                    f"{where}: client {key!r}: expected an object with lists 'active' and "
                    f"'inactive', got {_short(entry)}"
                )
            active, inactive = entry["active"], entry["inactive"]
            for field, values in (("active", active), ("inactive", inactive)):
                if not isinstance(values, list):
                    raise ValueError(
                        f"{where}: client {key!r}, field {field}: expected a list of times [s], "
                        f"got {_short(values)}"
                    )
            if len(active) != len(inactive):
                raise ValueError(
                    f"{where}: client {key!r}: 'active' has {len(active)} times but 'inactive' "
                    f"has {len(inactive)}; accepted: one inactive time per active time"
                )
            for i, (a, b) in enumerate(zip(active, inactive, strict=True)):
                start = _json_number(where, key, f"active[{i}]", a)
                end = _json_number(where, key, f"inactive[{i}]", b)
                if not math.isfinite(start) or start < 0.0:
                    raise ValueError(
                        f"{where}: client {key!r}, field active[{i}]: expected a finite time "
                        f">= 0 [s], got {a!r}"
                    )
                if not end > start:
                    raise ValueError(
                        f"{where}: client {key!r}, field inactive[{i}]: expected a time > "
                        f"active[{i}]={a!r}, got {b!r}"
                    )
                per_client[k].append((start, end))
    if not any(per_client):
        raise ValueError(
            f"{where}: no availability interval; accepted: at least one "
            + ("row after the header" if suffix == ".csv" else "active/inactive pair")
        )
    out = []
    for rows in per_client:
        arr = np.array(rows, dtype=np.float64).reshape(-1, 2)
        out.append(arr[np.argsort(arr[:, 0], kind="stable")])
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- compute -----------------------------------------------------------------------------------
def read_compute_trace(
    path: PathLike, n_clients: int, flops_per_sample: float | None = None
) -> np.ndarray:
    """Per-client compute speed [FLOP/s] from a trace file.

    Formats (chosen by the extension):

    - ``.csv``: header ``client,flops_per_s``, then exactly one row per client 0..N-1 (any
      order) with a finite speed > 0 [FLOP/s]. ``flops_per_sample`` is not used.
    - ``.json``: FedScale's device-capacity trace converted to JSON, ``{"<client id>":
      {"computation": <ms per sample>, "communication": <kbit/s>}}``, one entry per client
      0..N-1; ``computation`` finite > 0, ``communication`` ignored. Converted as
      flops_per_s = flops_per_sample / (computation / 1000). FedScale's ``computation`` is the
      measured *inference* latency per sample of its reference model (its simulator
      multiplies it by 3 for a training sample), so ``flops_per_sample`` (required here) is
      the FLOPs the device performs in ``computation`` ms: the reference model's forward
      FLOPs per sample (one training sample's FLOPs / 3).

    Input: ``path``; ``n_clients`` N >= 1; ``flops_per_sample`` > 0 (JSON only).
    Output: float64 (N,) [FLOP/s], every value finite and > 0.
    """
    where = _path(path)
    n = _check_n(where, n_clients)
    suffix = _suffix(where, (".csv", ".json"))
    speed = np.full(n, np.nan)
    seen_at: dict[int, str] = {}
    if suffix == ".csv":
        for line, (c, v) in _csv_rows(where, COMPUTE_HEADER):
            k = _client_field(where, line, c, n)
            if k in seen_at:
                raise ValueError(
                    f"{where}: line {line}, column 'client': client {k} already given on "
                    f"{seen_at[k]}; accepted: one row per client"
                )
            value = _float_field(where, line, "flops_per_s", v)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(
                    f"{where}: line {line}, column 'flops_per_s': expected a finite speed > 0 "
                    f"[FLOP/s], got {v!r}"
                )
            speed[k] = value
            seen_at[k] = f"line {line}"
    else:
        if flops_per_sample is None:
            raise ValueError(
                f"{where}: FedScale device-capacity JSON needs flops_per_sample (> 0, the "
                "forward FLOPs per sample of FedScale's reference model) to turn ms/sample "
                "into FLOP/s"
            )
        try:
            fps = as_float("flops_per_sample", flops_per_sample, lower=0.0, lower_op=">")
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        for key, entry in _load_json(where).items():
            k = _json_client(where, key, n)
            if not isinstance(entry, dict) or "computation" not in entry:
                raise ValueError(
                    f"{where}: client {key!r}: expected an object with 'computation' "
                    f"(ms per sample), got {_short(entry)}"
                )
            ms = _json_number(where, key, "computation", entry["computation"])
            if not (math.isfinite(ms) and ms > 0.0):
                raise ValueError(
                    f"{where}: client {key!r}, field computation: expected a finite latency "
                    f"> 0 [ms per sample], got {entry['computation']!r}"
                )
            value = fps / (ms / 1000.0)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(
                    f"{where}: client {key!r}, field computation: {ms!r} ms per sample gives "
                    f"{value!r} FLOP/s; accepted: a finite speed > 0"
                )
            speed[k] = value
            seen_at[k] = f"key {key!r}"
    if len(seen_at) != n:
        missing = np.flatnonzero(np.isnan(speed))
        shown = ", ".join(str(int(m)) for m in missing[:5]) + (", ..." if missing.size > 5 else "")
        raise ValueError(
            f"{where}: no speed for {missing.size} of {n} clients ({shown}); accepted: exactly "
            f"one entry per client 0..{n - 1}"
        )
    return speed


# -- SNR ---------------------------------------------------------------------------------------
def read_snr_trace(path: PathLike, n_clients: int) -> np.ndarray:
    """Per-round, per-client SNR [dB] from a trace file.

    Formats (chosen by the extension):

    - ``.npy``: a 2-D real array (integer or float dtype; no pickles) of shape
      (rounds, clients).
    - ``.csv``: no header; one line per round, N comma-separated numbers per line (client
      0 first); blank lines are skipped.

    Every value must be finite; rounds >= 1; exactly N columns.

    Input: ``path``; ``n_clients`` N >= 1.
    Output: float64 (rounds, N) [dB]; row t is round t.
    """
    where = _path(path)
    n = _check_n(where, n_clients)
    suffix = _suffix(where, (".npy", ".csv"))
    if suffix == ".npy":
        try:
            raw = np.load(where, allow_pickle=False)
        except OSError as exc:
            raise ValueError(f"{where}: cannot read the file: {exc.strerror or exc}") from None
        except ValueError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"{where}: not a plain .npy array ({first})") from None
        if not isinstance(raw, np.ndarray):
            raise ValueError(f"{where}: expected one .npy array, got {type(raw).__name__}")
        if raw.dtype == np.bool_ or not (
            np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)
        ):
            raise ValueError(
                f"{where}: dtype {raw.dtype} is not accepted; accepted: real numbers (float or int)"
            )
        if raw.ndim != 2:
            raise ValueError(
                f"{where}: expected a 2-D array (rounds, clients), got shape {raw.shape}"
            )
        if raw.shape[0] == 0:
            raise ValueError(f"{where}: empty trace (0 rounds); accepted: rounds >= 1")
        if raw.shape[1] != n:
            raise ValueError(
                f"{where}: {raw.shape[1]} columns, expected n_clients={n} (shape (rounds, {n}))"
            )
        trace = raw.astype(np.float64)
        bad = ~np.isfinite(trace)
        if bad.any():
            r, c = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"{where}: round {r} (row), client {c} (column): expected a finite SNR [dB], "
                f"got {trace[r, c]!r}"
            )
        return trace
    rows = []
    for line, text in enumerate(_read_text(where).splitlines(), start=1):
        if not text.strip():
            continue
        fields = text.split(",")
        if len(fields) != n:
            raise ValueError(
                f"{where}: line {line}: {len(fields)} values, expected n_clients={n} "
                "(comma-separated, no header)"
            )
        try:
            row = np.array([float(f) for f in fields], dtype=np.float64)
        except ValueError:
            j = next(j for j, f in enumerate(fields) if not _is_float(f))
            raise ValueError(
                f"{where}: line {line}, column {j + 1} (client {j}): expected a number "
                f"[dB] (no header line), got {fields[j].strip()!r}"
            ) from None
        if not np.isfinite(row).all():
            j = int(np.flatnonzero(~np.isfinite(row))[0])
            raise ValueError(
                f"{where}: line {line}, column {j + 1} (client {j}): expected a finite SNR "
                f"[dB], got {fields[j].strip()!r}"
            )
        rows.append(row)
    if not rows:
        raise ValueError(f"{where}: empty file; accepted: one line of {n} values per round")
    return np.vstack(rows)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def snr_trace_linear(trace_db: np.ndarray, round_index: int) -> np.ndarray:
    """One round of an SNR trace as linear SNR, 10^(dB/10).

    Input: ``trace_db`` float (rounds, N) [dB] (from :func:`read_snr_trace`); ``round_index``
    in ``[0, rounds)``.
    Output: float64 (N,) linear SNR. A round beyond the trace raises ``ValueError`` naming the
    trace length (traces are not wrapped or extended).
    """
    trace = np.asarray(trace_db, dtype=np.float64)
    if trace.ndim != 2 or trace.shape[0] == 0:
        raise ValueError(f"trace_db must be a 2-D (rounds, clients) array, got shape {trace.shape}")
    t = as_int("round_index", round_index, lower=0)
    if t >= trace.shape[0]:
        raise ValueError(
            f"round_index {t} is beyond the SNR trace, which has {trace.shape[0]} rounds "
            f"(0..{trace.shape[0] - 1}); use a longer trace or fewer rounds"
        )
    return np.power(10.0, trace[t] / 10.0)
