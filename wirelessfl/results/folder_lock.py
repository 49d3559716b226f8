"""One process owns a run folder: an advisory OS lock on ``<folder>/.lock``, held while a run
writes the folder (``wirelessfl run``, ``--resume``, a sweep's runs) or ``export`` reads it.

A second process that wants the folder is refused at once with one line naming the holder's
pid. The lock is the operating system's (``flock``), so it ends with the process that holds
it however that process ends: a ``.lock`` file left by a killed run blocks nothing. On systems
without ``fcntl`` (Windows) no lock is taken.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path

from wirelessfl.errors import UserError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

LOCK_FILE = ".lock"


class FolderInUseError(UserError):
    """The folder is held by another live process."""


class FolderLock:
    """The lock on ``folder`` for this process; ``release()`` (or garbage collection) ends it."""

    def __init__(self, folder: str | os.PathLike[str], *, what: str):
        """Take the lock at once, or raise ``FolderInUseError``: ``what`` names the command or
        option in the one-line refusal (e.g. ``--resume``)."""
        self.folder = Path(folder)
        self._fd: int | None = None
        if fcntl is None:
            return
        path = self.folder / LOCK_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except (PermissionError, OSError) as err:
            if not os.access(self.folder, os.W_OK) and not os.access(path, os.F_OK):
                return  # a read-only folder no run can write: nothing to guard
            if not isinstance(err, PermissionError):
                raise UserError(f"{what}: cannot lock {path}: {err.strerror or err}") from None
            fd = os.open(path, os.O_RDONLY)  # flock needs no write access
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_pid(fd)
            os.close(fd)
            raise FolderInUseError(
                f"{what}: {self.folder} is in use by process {holder} (a run or export still "
                "holds it); wait for it to end, or stop that process first"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:  # opened read-only: the lock holds, the pid is not shown
            pass
        self._fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)

    def release(self) -> None:
        """End the lock (idempotent). The ``.lock`` file stays: it marks nothing by itself."""
        if self._fd is not None:
            self._finalizer()  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_pid(fd: int) -> str:
    """The pid the holder wrote into the lock file ("unknown" if unreadable)."""
    try:
        text = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return "unknown"
    return text if text.isdigit() else "unknown"
