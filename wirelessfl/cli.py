"""``wirelessfl`` command line: run scenarios, report the channel, list scenarios and keys.

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
import os
import signal
import sys
from pathlib import Path

from wirelessfl import __version__
from wirelessfl.cli_failures import continue_hint, explain, ignore_sigxfsz
from wirelessfl.cli_help import finish_help
from wirelessfl.cli_traces import add_traces_command
from wirelessfl.errors import (
    UserError,
    folder_problem,
    int_in_range,
    path_text,
    positive_float,
    short_path,
)
from wirelessfl.learners.export_command import add_export_command
from wirelessfl.plots.command import add_plot_command
from wirelessfl.plugins import add_plugin_argument, import_plugins, resolve_plugin
from wirelessfl.study.command import add_sweep_command
from wirelessfl.study.reproduce import add_reproduce_command

#: the exit status table of the docstring, shown at the end of ``wirelessfl --help``
EXIT_STATUS = "exit status:" + (__doc__ or "").partition("Exit status:")[2]


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


def _cmd_run(args: argparse.Namespace) -> int:
    if args.resume is not None:
        extra = [
            what
            for what, given in (
                ("a scenario", args.scenario),
                ("--out", args.out),
                ("--dry-run", args.dry_run),
                ("--plugin (the run's config.yaml lists its plug-ins)", args.plugin),
            )
            if given
        ]
        if extra:
            raise UserError(
                f"--resume: give only the run folder (its config.yaml is used) and, to extend "
                f"or shorten it, --set rounds=N; not {' or '.join(extra)}"
            )
        args.run_folder = Path(args.resume)
        problem = folder_problem(args.run_folder)
        if problem:
            raise UserError(f"--resume: {problem}")
        from wirelessfl.sim.runner import Run

        run = Run.resume_from(args.resume, rounds=_resume_rounds(args.set))
    else:
        from wirelessfl.config import load_scenario

        scenario = load_scenario(args.scenario, args.set, plugins=args.plugin or ())
        if args.dry_run:
            from wirelessfl.sim.dry_run import dry_run_text

            print(dry_run_text(scenario))
            return 0
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
    run.execute(progress=not args.quiet, load_result=False)
    from wirelessfl.results.run_summary import run_summary_text

    print(run_summary_text(run.out))
    return 0


def _resume_rounds(overrides: list[str] | None) -> int | None:
    """The N of ``--set rounds=N`` given with ``--resume`` (None without ``--set``)."""
    if not overrides:
        return None
    from wirelessfl.config.loader import apply_overrides

    changes = apply_overrides({}, overrides)
    if set(changes) != {"rounds"}:
        other = next(key for key in changes if key != "rounds")
        raise UserError(
            f"--resume: only --set rounds=N can change a run (it extends or shortens it), "
            f"not {other}; start a new run to change anything else"
        )
    rounds = changes["rounds"]
    if type(rounds) is not int:
        raise UserError(f"--set rounds: expected a whole number of rounds, got {rounds!r}")
    return rounds


def _cmd_channels(args: argparse.Namespace) -> int:
    import numpy as np

    from channels import channel_report
    from wirelessfl.config import load_scenario
    from wirelessfl.sim.setup import build_cell

    scenario = load_scenario(args.scenario, args.set, plugins=args.plugin or ())
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


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from wirelessfl.config.shipped import shipped_table

    table = shipped_table()
    width = max((len(name) for name, _ in table), default=0)
    for name, description in table:
        print(f"{name:{width}}  {description}")
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
    run.add_argument(
        "--resume",
        type=path_text,
        metavar="DIR",
        help="continue a killed run in DIR, or extend a finished one with --set rounds=N",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--calibrate",
        action="store_true",
        help="run a short pilot and print BoundConstants estimated from it",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the resolved scenario and the offline stage's choice (rank), run nothing",
    )
    add_plugin_argument(run)
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
    add_plugin_argument(ch)
    ch.set_defaults(func=_cmd_channels)

    keys = sub.add_parser("scenario-keys", help="every scenario key with default and range")
    add_plugin_argument(keys)
    keys.set_defaults(func=_cmd_keys)
    shipped = sub.add_parser("scenarios", help="the shipped scenarios, by name")
    shipped.set_defaults(func=_cmd_scenarios)
    add_sweep_command(sub)
    add_plot_command(sub)
    add_reproduce_command(sub)
    add_export_command(sub)
    add_traces_command(sub)
    finish_help(sub, EXIT_STATUS)
    return parser


def _import_cli_plugins(args: argparse.Namespace) -> None:
    """Import the ``--plugin`` modules and files before the command reads anything, and leave
    them in ``args.plugin`` resolved (files as absolute paths) for the command to record."""
    if getattr(args, "plugin", None):
        args.plugin = [resolve_plugin(p, Path.cwd(), "--plugin") for p in args.plugin]
        import_plugins(args.plugin, "--plugin")


#: address space held while a command runs and released before a failure is explained, so that
#: the one-line message can still be built when the command stopped for lack of memory (under a
#: tight ``ulimit -v`` a failed ``import torch`` leaves too little for even a ``Path``); calloc'd,
#: so its pages are never touched
_RESERVE_BYTES = 8 << 20


def _explain_or_fallback(err: Exception, args: argparse.Namespace) -> tuple[int, str] | None:
    """:func:`explain`, or the out-of-memory line without its details if explaining ran out."""
    try:
        return explain(err, args)
    except MemoryError:
        return 1, f"{args.command} stopped: out of memory; what was written is kept"


def main(argv: list[str] | None = None) -> int:
    reserve = bytearray(_RESERVE_BYTES)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    previous = ignore_sigxfsz()
    try:
        _import_cli_plugins(args)
        return int(args.func(args))
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        hint = continue_hint(args)
        print(f"wirelessfl: interrupted{f'; {hint}' if hint else ''}", file=sys.stderr)
        return 130
    except Exception as err:
        del reserve
        explained = _explain_or_fallback(err, args)
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
