"""Append-only CSV tables that a checkpoint can vouch for: rows, bytes and a running SHA-256.

A table is written in whole rounds (one ``write`` per checkpoint) and flushed by
:meth:`TableWriter.flush`, which returns the :class:`TableMark` the checkpoint records. A resume
hands that mark back: the writer checks the file's first ``n_bytes`` against it (so a table cut
or edited inside the checkpointed rounds is refused, never silently shortened), cuts whatever
follows (rows of rounds after the checkpoint, a partial last line) and appends from there.
Floats are written with 17 significant digits, so they read back bit for bit.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError
from wirelessfl.results.files import hash_prefix


class DamagedTableError(UserError):
    """A table no longer holds what its checkpoint recorded (one line, names the file)."""


@dataclass(frozen=True)
class TableMark:
    """What a checkpoint covers of one table: data rows, bytes (header included), SHA-256."""

    rows: int
    n_bytes: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "bytes": self.n_bytes, "sha256": self.sha256}

    @classmethod
    def from_json(cls, data: Any) -> TableMark:
        """Parse a mark; ``ValueError`` if it is malformed."""
        if not isinstance(data, Mapping):
            raise ValueError("a table mark must be a mapping")
        rows, n_bytes, sha = data.get("rows"), data.get("bytes"), data.get("sha256")
        if not (type(rows) is int and type(n_bytes) is int and isinstance(sha, str)):
            raise ValueError(f"malformed table mark {dict(data)!r}")
        if rows < 0 or n_bytes < 1:
            raise ValueError(f"malformed table mark {dict(data)!r}")
        return cls(rows, n_bytes, sha)


def cell_text(value: Any) -> str:
    """One CSV cell: ints as is, floats with 17 digits (``nan``, ``inf``), text quoted if needed."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is float and value == value and value not in (math.inf, -math.inf):
        return repr(value)
    if isinstance(value, float):
        value = float(value)  # numpy scalars repr as "np.float64(...)"
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, bool):
        return str(int(value))
    if hasattr(value, "item"):  # numpy scalar
        return cell_text(value.item())
    text = str(value)
    if any(c in text for c in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def verify_table(path: Path, columns: Sequence[str], mark: TableMark) -> hashlib._Hash:
    """Check that ``path`` starts with what ``mark`` recorded; the SHA-256 hasher of that part.

    Raises ``DamagedTableError`` (one line) if the file is missing, has other columns, was cut
    inside the marked rows, or differs from them. Reads the file; changes nothing.
    """
    if not path.is_file():
        raise DamagedTableError(
            f"{path.name} is missing (the checkpoint covers {mark.rows} of its rows)"
        )
    with open(path, "rb") as fh:
        first = fh.readline()
    if first != (",".join(columns) + "\n").encode("utf-8"):
        header = first.decode("utf-8", "replace").rstrip("\r\n").split(",")
        missing = [name for name in columns if name not in header]
        lacking = f"it has no column {', '.join(missing)}; " if missing else ""
        raise DamagedTableError(
            f"{path.name}: its columns differ from the ones this run writes ({lacking}was it "
            "written by another version of wirelessfl?); continue it with that version"
        )
    if path.stat().st_size < mark.n_bytes:
        complete = max(path.read_bytes().count(b"\n") - 1, 0)
        raise DamagedTableError(
            f"{path.name} holds {complete} complete rows but the checkpoint covers "
            f"{mark.rows} (the file was cut)"
        )
    hasher = hash_prefix(path, mark.n_bytes)
    if hasher.hexdigest() != mark.sha256:
        raise DamagedTableError(
            f"{path.name} differs from what the checkpoint recorded in its first "
            f"{mark.rows} rows (it was edited or damaged)"
        )
    return hasher


class TableWriter:
    """One append-only table of a run folder (see the module docstring).

    Args:
        path: the CSV file.
        columns: the header.
        mark: None to start the table (header only, replacing any file of that name); a
            checkpoint's mark to continue it after the rows it covers (``DamagedTableError``
            if the file disagrees; see :func:`verify_table`).
        verified: the hasher :func:`verify_table` returned for this mark, if already checked.
    """

    def __init__(
        self,
        path: Path,
        columns: Sequence[str],
        *,
        mark: TableMark | None = None,
        verified: hashlib._Hash | None = None,
    ):
        self.path = path
        self.columns = list(columns)
        if mark is None:
            self._fh = open(path, "wb")  # noqa: SIM115 - kept open for the run
            self._hasher = hashlib.sha256()
            self.rows, self.n_bytes = 0, 0
            self._write((",".join(self.columns) + "\n").encode("utf-8"), 0)
            self._fh.flush()  # a table on disk always has its header
            return
        self._hasher = verified or verify_table(path, self.columns, mark)
        os.truncate(path, mark.n_bytes)  # rows after the checkpoint, a partial last line
        self._fh = open(path, "ab")  # noqa: SIM115 - kept open for the run
        self.rows, self.n_bytes = mark.rows, mark.n_bytes

    def _write(self, data: bytes, n_rows: int) -> None:
        self._fh.write(data)
        self._hasher.update(data)
        self.rows += n_rows
        self.n_bytes += len(data)

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append rows (dicts keyed by column; a missing key is an empty cell)."""
        self.append_lines(
            [",".join(cell_text(row.get(c, "")) for c in self.columns) for row in rows]
        )

    def append_lines(self, lines: list[str]) -> None:
        """Append preformatted CSV lines (columns in this table's order)."""
        if lines:
            self._write(("\n".join(lines) + "\n").encode("utf-8"), len(lines))

    def flush(self) -> TableMark:
        """Hand everything written to the operating system; the mark a checkpoint records."""
        self._fh.flush()
        return TableMark(self.rows, self.n_bytes, self._hasher.hexdigest())

    def close(self) -> None:
        self._fh.close()
