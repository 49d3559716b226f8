"""Errors a user can cause: shown as one line by the CLI, never as a traceback.

Also the few helpers that turn what the operating system says about a path into that one line
(``folder_problem``, ``file_problem``, ``short_path``) and the argparse ``type=`` checks of
option values (``int_in_range``, ``positive_float``, ``path_text``), shared by the commands.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path


class UserError(ValueError):
    """A mistake in what the user asked for (a scenario key, a path, a name)."""


class ConfigError(UserError):
    """A scenario value that fails validation; the message names the key and the accepted range."""


class SimulationError(RuntimeError):
    """A run that cannot continue (non-finite loss, update or draw); state on disk is intact."""


class ResourceError(RuntimeError):
    """The machine ran out of something a run needs (disk space, a file size limit, memory, a
    library that will not load); what was written is kept and the run can be continued."""


#: errno values meaning that a resource ran out while writing (disk space, ``ulimit -f``, quota)
RESOURCE_ERRNOS = frozenset(
    e for e in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", None)) if e is not None
)

#: a path component longer than this many bytes is shown shortened in messages
_SHOW = 60


def short_path(path: str | os.PathLike[str]) -> str:
    """``path`` for a one-line message: each over-long component shortened to ``ab…yz (N
    characters)``, so a 300-character name does not flood the terminal."""
    parts = []
    for part in str(path).split(os.sep):
        if len(part) > _SHOW:
            part = f"{part[:20]}…{part[-8:]} ({len(part)} characters)"
        parts.append(part)
    return os.sep.join(parts)


def _name_max(path: Path) -> int:
    """The longest file name (bytes) the file system holding ``path`` (or its parent) allows."""
    for candidate in (path, *path.parents):
        try:
            return int(os.pathconf(candidate, "PC_NAME_MAX"))
        except (OSError, ValueError, AttributeError):
            continue
    return 255


def _length_problem(path: Path) -> str | None:
    text = os.fspath(path)
    if not text:
        return "the path is empty"
    if "\0" in text:
        return "the path contains a NUL character"
    try:
        encoded = os.fsencode(text)
    except UnicodeError:
        return f"{short_path(text)} cannot be encoded for the file system"
    if len(encoded) >= 4096:
        return f"the path is {len(encoded)} bytes long (the system allows fewer than 4096)"
    limit = _name_max(path.parent)
    for part in path.parts:
        if len(os.fsencode(part)) > limit:
            return (
                f"the name {short_path(part)} is longer than the {limit} bytes "
                "the file system allows"
            )
    return None


def folder_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be, or be created as, a folder; ``None`` when nothing stands in the
    way that can be seen without writing (a full disk shows only when writing).

    The answer is one phrase naming the offending part, e.g. ``/tmp/x is a file, not a
    folder`` or ``the name aaaa… (300 characters) is longer than the 255 bytes the file system
    allows``.
    """
    path = Path(path)
    problem = _length_problem(path)
    if problem:
        return problem
    here = path
    while True:
        try:
            mode = os.stat(here).st_mode
        except (FileNotFoundError, NotADirectoryError):
            if here.parent == here:
                return None
            here = here.parent
            continue
        except OSError as err:
            return f"{short_path(here)}: {err.strerror or err}"
        if not stat.S_ISDIR(mode):
            return f"{short_path(here)} is a file, not a folder"
        if here != path and not os.access(here, os.W_OK | os.X_OK):
            return f"cannot create a folder in {short_path(here)}: permission denied"
        return None


def held_names(folder: Path, ignore: tuple[str, ...] = ()) -> str:
    """What ``folder`` holds (but the names in ``ignore``), for a one-line refusal: ``""`` if
    it is empty, else its first three names (sorted) and ``...`` if there are more."""
    held = sorted(p.name for p in folder.iterdir() if p.name not in ignore)
    return ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why a file cannot be written at ``path`` (its folder is created if missing); ``None``
    when nothing stands in the way that can be seen without writing."""
    path = Path(path)
    problem = _length_problem(path)
    if problem:
        return problem
    if path.is_dir():
        return f"{short_path(path)} is a folder, not a file name"
    return folder_problem(path.parent)


def int_in_range(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type=``: an integer from ``low`` to ``high`` (no upper end if None); a
    value outside gets argparse's one-line error naming the option and the accepted range."""
    accepted = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {accepted}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {accepted}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


def positive_float(text: str) -> float:
    """An argparse ``type=``: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def path_text(text: str) -> str:
    """An argparse ``type=``: a non-empty path (an empty one would mean the current folder)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return text
