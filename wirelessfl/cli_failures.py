"""How a failure reaching the command line becomes one line and an exit status.

:func:`explain` maps a user mistake, a stopped run, a resource that ran out (disk space, the
file size limit, a quota, memory), a missing or unloadable library, or an OS error about a path
to ``(exit status, line)``; anything else is a bug and keeps its traceback. The exit statuses
are listed in ``wirelessfl.cli``'s docstring.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import re
import signal
import types
from pathlib import Path
from types import TracebackType
from typing import Any

from wirelessfl.errors import ResourceError, SimulationError, UserError, folder_problem, short_path

#: libraries of the optional ``[train]`` extra (top-level import names)
OPTIONAL_LIBRARIES = frozenset(
    {
        "torch",
        "transformers",
        "peft",
        "safetensors",
        "gguf",
        "sklearn",
        "PIL",
        "datasets",
        "tokenizers",
        "huggingface_hub",
        "accelerate",
    }
)
#: wirelessfl's own packages: an ImportError inside them is a bug, shown with its traceback
OWN_PACKAGES = frozenset({"wirelessfl", "channels", "optim"})
TRAIN_EXTRA = (
    "real training (learner.kind=lora) needs the [train] extra: pip install -e '.[train]' "
    "(see README)"
)
#: errno values that mean a resource ran out while writing, with what ran out and the remedy
_EXHAUSTED = {
    errno.ENOSPC: ("out of disk space", "free some space"),
    errno.EFBIG: ("the file size limit was reached", "raise the limit (ulimit -f) or free space"),
    getattr(errno, "EDQUOT", -1): ("the disk quota is used up", "free some space in the quota"),
}
#: words in a library's load failure that point at too little memory
_MEMORY_WORDS = re.compile(r"map segment|memory|allocat", re.IGNORECASE)
#: what each command is doing, for "out of memory while ..."
_ACTIVITY = {
    "run": "running the simulation",
    "sweep": "running the sweep",
    "reproduce": "running the reproduction",
    "plot": "drawing the figure",
    "channels": "computing the channel report",
    "scenario-keys": "listing the scenario keys",
}
#: options naming a path, as messages call them
_PATH_OPTIONS = (
    ("out", "--out"),
    ("resume", "--resume"),
    ("output", "--out"),
    ("default_out", "--out (default runs/<scenario name>)"),
    ("paths", "plot"),
    ("scenario", "scenario"),
)


def _frames(tb: TracebackType | None) -> list[Any]:
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _top(module: str | None) -> str:
    return (module or "").split(".")[0]


def _importing(err: BaseException) -> list[str]:
    """The modules being imported when ``err`` was raised, outermost first."""
    names = []
    for frame in _frames(err.__traceback__):
        if frame.f_code.co_name in ("_find_and_load", "_gcd_import"):
            name = frame.f_locals.get("name")
        elif frame.f_code.co_name == "<module>":  # importlib hides its frames from ImportError
            name = frame.f_globals.get("__name__")
        else:
            continue
        if isinstance(name, str) and name != "__main__" and name not in names:
            names.append(name)
    return names


def _library_failure(err: BaseException | None) -> tuple[str, BaseException] | None:
    """The third-party library that is missing or failed to load, and the error saying so,
    found in ``err`` or the errors it was raised from or while handling (``learners`` turns a
    failed import of the training libraries into a ``UserError``); None if there is none."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        # SystemError: a C extension failing inside its import (torch under a tight
        # ``ulimit -v`` returns an error without setting one)
        if isinstance(err, ImportError | OSError | MemoryError | SystemError):
            names = _importing(err)
            if isinstance(err, ImportError) and err.name:
                names = [err.name] if isinstance(err, ModuleNotFoundError) else [*names, err.name]
            libraries = [_top(n) for n in names if _top(n) not in OWN_PACKAGES]
            if libraries:
                return libraries[0], err
        err = err.__cause__ or err.__context__
    return None


def _out_of_memory(err: BaseException) -> bool:
    """A ``MemoryError``, ENOMEM, or torch's out-of-memory errors (``RuntimeError``s)."""
    if isinstance(err, MemoryError) or (isinstance(err, OSError) and err.errno == errno.ENOMEM):
        return True
    if isinstance(err, RuntimeError):
        return type(err).__name__ == "OutOfMemoryError" or "can't allocate memory" in str(err)
    return False


def _file_being_written(err: BaseException) -> str | None:
    """``err.filename``, else the name of a file open for writing in the innermost function
    frame of the traceback that holds one (as a local or an attribute of a local): the file
    whose ``write`` failed."""
    name = getattr(err, "filename", None)
    if name:
        return os.fsdecode(name)
    for frame in reversed(_frames(err.__traceback__)):
        if frame.f_locals is frame.f_globals:  # module level: its globals are not the writer
            continue
        for value in list(frame.f_locals.values()):
            if isinstance(value, type | types.ModuleType):
                continue
            candidates = [value]
            with contextlib.suppress(TypeError):
                candidates.extend(vars(value).values())
            for c in candidates:
                if not isinstance(c, io.IOBase):
                    continue
                c_name, mode = getattr(c, "name", None), getattr(c, "mode", "")
                writing = isinstance(mode, str) and any(m in mode for m in "wax+")
                if writing and isinstance(c_name, str) and not c_name.startswith("<"):
                    return c_name
    return None


def continue_hint(args: argparse.Namespace) -> str:
    """How to continue the interrupted command, or "" if there is nothing to continue."""
    if args.command == "run":
        folder = getattr(args, "run_folder", None)
        if folder is None:
            return "continue with: wirelessfl run --resume <run folder>"
        try:
            started = (Path(folder) / "config.yaml").exists()
        except OSError:
            started = False
        if started:
            return f"continue with: wirelessfl run --resume {folder}"
        return "nothing to continue yet: run the same command again"
    if args.command in ("sweep", "reproduce"):
        return "run the same command again to resume it"
    return ""


def _user_path(filename: str | None, args: argparse.Namespace) -> str | None:
    """The option naming ``filename`` or a folder holding it, if the user gave it."""
    if not filename:
        return None
    try:
        target = os.path.abspath(filename)
        for attr, label in _PATH_OPTIONS:
            given = getattr(args, attr, None)
            for one in given if isinstance(given, list) else [given]:
                if not one:
                    continue
                one = os.path.abspath(os.fspath(one))
                if target == one or target.startswith(one.rstrip(os.sep) + os.sep):
                    return label
    except (OSError, ValueError, TypeError):
        return None
    return None


def _os_reason(err: OSError) -> str:
    """What the system said about ``err``'s path, as a phrase naming the path."""
    filename = os.fsdecode(err.filename) if err.filename else None
    if filename is None:
        return err.strerror or str(err)
    if err.errno in (errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG):
        problem = folder_problem(filename)
        if problem:
            return problem
    text = f"{short_path(filename)}: {err.strerror or err}"
    if err.filename2:
        text += f" ({short_path(os.fsdecode(err.filename2))})"
    return text


def explain(err: BaseException, args: argparse.Namespace) -> tuple[int, str] | None:
    """The exit status and line for ``err``; ``None`` for a bug (shown with its traceback)."""
    stopped = f"{args.command} stopped"
    hint = continue_hint(args)
    kept = "what was written is kept" + (f"; {hint}" if hint else "")
    failure = _library_failure(err)
    if failure is not None:
        library, failure = failure
        if isinstance(failure, ModuleNotFoundError):
            if library in OPTIONAL_LIBRARIES:
                return 2, f"error: {TRAIN_EXTRA} (missing: {failure.name})"
            return 2, f"error: the library {library} is missing: pip install -e . (see README)"
        if isinstance(failure, MemoryError):
            return 1, f"{stopped}: out of memory while loading {library}; {kept}"
        first = (str(failure).strip().splitlines() or [type(failure).__name__])[0]
        why = " (too little memory?)" if _MEMORY_WORDS.search(first) else ""
        return 1, f"{stopped}: {library} is installed but failed to load{why}: {first}; {kept}"
    if isinstance(err, UserError):
        return 2, f"error: {err}"
    if isinstance(err, SimulationError | ResourceError):
        return 1, f"{stopped}: {err}"
    if _out_of_memory(err):
        modules = _importing(err)
        doing = (
            f"loading {_top(modules[-1])}" if modules else _ACTIVITY.get(args.command, "working")
        )
        return 1, f"{stopped}: out of memory while {doing}; {kept}"
    if isinstance(err, OSError):
        if err.errno in _EXHAUSTED:
            what, remedy = _EXHAUSTED[err.errno]
            name = _file_being_written(err)
            folder = getattr(args, "run_folder", None)
            where = (
                f" while writing {short_path(name)}"
                if name
                else (f" while writing into {short_path(folder)}" if folder else "")
            )
            then = f"; {remedy}, then {hint}" if hint else f"; {remedy}"
            return 1, f"{stopped}: {what} ({err.strerror}){where}; what was written is kept{then}"
        option = _user_path(os.fsdecode(err.filename) if err.filename else None, args)
        if option is not None:
            return 2, f"error: {option}: {_os_reason(err)}"
        return 1, f"{stopped}: {_os_reason(err)}"
    return None


def ignore_sigxfsz() -> Any:
    """Ignore SIGXFSZ, so that a write past ``ulimit -f`` raises EFBIG (one line) instead of
    killing the process without a word; returns the previous handler (None if unchanged)."""
    if not hasattr(signal, "SIGXFSZ"):
        return None
    try:
        return signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    except (ValueError, OSError):  # not the main thread
        return None
