"""``wirelessfl`` command line: run scenarios, report the channel, list scenario keys.

Every failure a user can cause or meet prints one line on stderr, never a traceback: a user
mistake as ``wirelessfl: error: ...``, a run or resource failure as ``wirelessfl: COMMAND
stopped: ...`` (naming the file or option and, where there is something to continue, how).
A traceback means a bug in wirelessfl.

Exit status:
  0    success
  1    stopped: a run could not continue (non-finite values, a sweep worker died), or the
       machine ran out of something (disk space, the file size limit, a disk quota, memory, an
       installed library that fails to load), or the system refused a path the user did not
       give; what was written is kept and the message says how to continue
  2    user error: a bad option value, scenario key or scenario file, a path given on the
       command line that cannot be used, or a missing optional extra (argparse's usage
       errors exit 2 too)
  130  interrupted (Ctrl-C); the message says how to continue
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import math
import os
import re
import signal
import sys
import types
from pathlib import Path
from types import TracebackType
from typing import Any

from wirelessfl import __version__
from wirelessfl.errors import (
    ResourceError,
    SimulationError,
    UserError,
    folder_problem,
    int_in_range,
    path_text,
    positive_float,
    short_path,
)
from wirelessfl.plots.command import add_plot_command
from wirelessfl.study.command import add_sweep_command
from wirelessfl.study.reproduce import add_reproduce_command

#: the exit status table of the docstring, shown at the end of ``wirelessfl --help``
EXIT_STATUS = "exit status:" + (__doc__ or "").partition("Exit status:")[2]

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
    ("output", "-o"),
    ("default_out", "--out (default runs/<scenario name>)"),
    ("path", "plot"),
    ("scenario", "scenario"),
)


def _default_out(name: str) -> Path:
    """``runs/<name>``, or ``runs/<name>-2`` (``-3``, ...) if that is taken (not new or empty:
    a run folder must be, see ``Run``)."""
    parts = Path(name).parts
    if not name.strip() or not parts or ".." in parts or Path(name).is_absolute():
        raise UserError(
            f"name: {name!r} cannot be a folder under runs/ (the default --out); "
            "give --out DIR or a plain name"
        )
    base = Path("runs") / name
    out, n = base, 1
    while True:
        problem = folder_problem(out)
        if problem:
            raise UserError(
                f"name: the default results folder runs/<name> cannot be used: {problem}; "
                "give --out DIR or a shorter name"
            )
        try:
            if not out.exists() or (out.is_dir() and not any(out.iterdir())):
                return out
        except OSError as err:
            raise UserError(
                f"name: the default results folder {short_path(out)} cannot be used: "
                f"{err.strerror}; give --out DIR"
            ) from None
        n += 1
        out = base.with_name(f"{base.name}-{n}")


def _fmt(x: float, unit: str = "") -> str:
    if x != x:  # NaN
        return "n/a"
    return f"{x:.4g}{unit}"


def _summary(result) -> str:
    r = result.rounds
    cfg = result.config
    d_th = cfg.get("controller", {}).get("d_th_s", math.nan)
    evaluated = r.dropna(subset=["accuracy"])
    final_acc = float(evaluated["accuracy"].iloc[-1]) if len(evaluated) else math.nan
    first_acc = float(evaluated["accuracy"].iloc[0]) if len(evaluated) else math.nan
    lines = [
        f"run            {result.path}",
        f"rounds         {len(r)}   (rank {int(r['rank'].iloc[-1]) if len(r) else 'n/a'})",
        f"virtual time   {_fmt(float(r['t_end_s'].iloc[-1]) if len(r) else math.nan, ' s')}",
        f"mean D^t       {_fmt(float(r['delay_s'].mean()), ' s')}   (D_th {_fmt(d_th, ' s')})",
        f"final queue    {_fmt(float(r['queue_after'].iloc[-1]) if len(r) else math.nan)}",
        f"mean O^t       {_fmt(float(r['sparsification'].mean()))}",
        f"uplink         {_fmt(float(r['bits_up'].sum()) / 8e6, ' MB')} "
        f"({int(r['n_arrived'].sum())} uploads arrived of {int(r['n_scheduled'].sum())} scheduled)",
        f"loss           {_fmt(float(r['loss'].iloc[0]))} -> {_fmt(float(r['loss'].iloc[-1]))}",
        f"accuracy       {_fmt(first_acc)} -> {_fmt(final_acc)}",
        f"wall time      {_fmt(float(r['wall_s'].sum()), ' s')}",
        f"load with      wirelessfl.results.load({str(result.path)!r})",
    ]
    return "\n".join(lines)


def _cmd_run(args: argparse.Namespace) -> int:
    if args.resume is not None:
        extra = [
            what
            for what, given in (
                ("a scenario", args.scenario),
                ("--set", args.set),
                ("--out", args.out),
            )
            if given
        ]
        if extra:
            raise UserError(
                f"--resume: give only the run folder (its config.yaml is used), not "
                f"{' or '.join(extra)}"
            )
        args.run_folder = Path(args.resume)
        problem = folder_problem(args.run_folder)
        if problem:
            raise UserError(f"--resume: {problem}")
        from wirelessfl.sim.runner import Run

        run = Run.resume_from(args.resume)
    else:
        from wirelessfl.config import load_scenario

        scenario = load_scenario(args.scenario, args.set)
        if args.out is not None:
            out = Path(args.out)
            problem = folder_problem(out)
            if problem:
                raise UserError(f"--out: {problem}")
        else:
            out = _default_out(scenario.name)
            args.default_out = str(out)
        args.run_folder = out
        from wirelessfl.sim.runner import Run

        run = Run(scenario, out)
    args.run_folder = Path(run.out)
    if args.calibrate:
        from wirelessfl.study.calibrate import calibrate_run

        return calibrate_run(run, progress=not args.quiet)
    result = run.execute(progress=not args.quiet)
    print(_summary(result))
    return 0


def _cmd_channels(args: argparse.Namespace) -> int:
    import numpy as np

    from channels import channel_report
    from wirelessfl.config import load_scenario
    from wirelessfl.sim.setup import build_cell

    scenario = load_scenario(args.scenario, args.set)
    cell = build_cell(scenario)
    rep = channel_report(cell, bandwidth_hz=scenario.channel.bandwidth_hz, bits=args.bits)
    n = cell.n_clients
    show = np.arange(n) if n <= args.max_rows else np.linspace(0, n - 1, args.max_rows).astype(int)
    print(
        f"cell: N={n}, B={scenario.channel.bandwidth_hz:.3g} Hz, payload {args.bits:.3g} bits, "
        f"equal shares 1/N"
    )
    keys = list(rep)
    widths = [max(len(k), 10) for k in keys]
    print("  ".join(f"{k:>{w}}" for k, w in zip(keys, widths, strict=True)))
    for i in show:
        print("  ".join(f"{float(rep[k][i]):>{w}.4g}" for k, w in zip(keys, widths, strict=True)))
    return 0


def _cmd_keys(args: argparse.Namespace) -> int:
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.config.schema import describe

    for key, default, doc in describe(Scenario):
        print(f"{key:36} {default:>14}  {doc}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wirelessfl",
        description="Co-simulator for federated LoRA fine-tuning over wireless networks.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"wirelessfl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="simulate a scenario into a results folder")
    run.add_argument("scenario", nargs="?", help="scenario file or shipped name (default: default)")
    run.add_argument("--out", type=path_text, help="results folder (default: runs/<scenario name>)")
    run.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a key, e.g. rounds=50"
    )
    run.add_argument("--resume", type=path_text, metavar="DIR", help="continue a killed run in DIR")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--calibrate",
        action="store_true",
        help="run a short pilot and print BoundConstants estimated from it",
    )
    run.set_defaults(func=_cmd_run)

    ch = sub.add_parser("channels", help="per-client mean SNR, ergodic rate and upload delay")
    ch.add_argument("scenario", nargs="?", help="scenario file or shipped name")
    ch.add_argument("--set", action="append", metavar="KEY=VALUE")
    ch.add_argument(
        "--bits", type=positive_float, default=1e6, help="payload size [bits], > 0 (default 1e6)"
    )
    ch.add_argument(
        "--max-rows", type=int_in_range(1), default=20, help="clients to print, >= 1 (default 20)"
    )
    ch.set_defaults(func=_cmd_channels)

    keys = sub.add_parser("scenario-keys", help="every scenario key with default and range")
    keys.set_defaults(func=_cmd_keys)
    add_sweep_command(sub)
    add_plot_command(sub)
    add_reproduce_command(sub)
    return parser


# -- one line for every failure ----------------------------------------------------------------
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
        if isinstance(err, ImportError | OSError | MemoryError):
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


def _continue_hint(args: argparse.Namespace) -> str:
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
            if not given:
                continue
            given = os.path.abspath(os.fspath(given))
            if target == given or target.startswith(given.rstrip(os.sep) + os.sep):
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


def _explain(err: BaseException, args: argparse.Namespace) -> tuple[int, str] | None:
    """The exit status and line for ``err``; ``None`` for a bug (shown with its traceback)."""
    stopped = f"{args.command} stopped"
    hint = _continue_hint(args)
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


def _ignore_sigxfsz() -> Any:
    """Ignore SIGXFSZ, so that a write past ``ulimit -f`` raises EFBIG (one line) instead of
    killing the process without a word; returns the previous handler (None if unchanged)."""
    if not hasattr(signal, "SIGXFSZ"):
        return None
    try:
        return signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    except (ValueError, OSError):  # not the main thread
        return None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    previous = _ignore_sigxfsz()
    try:
        return int(args.func(args))
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        hint = _continue_hint(args)
        print(f"wirelessfl: interrupted{f'; {hint}' if hint else ''}", file=sys.stderr)
        return 130
    except Exception as err:
        explained = _explain(err, args)
        if explained is None:
            raise
        code, line = explained
        print(f"wirelessfl: {line}", file=sys.stderr)
        return code
    finally:
        if previous is not None:
            signal.signal(signal.SIGXFSZ, previous)


if __name__ == "__main__":
    sys.exit(main())
