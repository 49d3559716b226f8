"""``wirelessfl`` command line: run scenarios, report the channel, list scenario keys.

User mistakes (a bad scenario key, a missing file) print one line and exit with status 2;
a run that cannot continue prints one line and exits with status 1. No tracebacks for either.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from wirelessfl import __version__
from wirelessfl.errors import SimulationError, UserError
from wirelessfl.plots.command import add_plot_command
from wirelessfl.study.command import add_sweep_command
from wirelessfl.study.reproduce import add_reproduce_command


def _default_out(name: str) -> Path:
    base = Path("runs") / name
    out, n = base, 1
    while (out / "rounds.csv").exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


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
    from wirelessfl.config import load_scenario
    from wirelessfl.sim.runner import Run

    if args.resume:
        if args.scenario or args.set:
            raise UserError("--resume: give only the run folder (its config.yaml is used)")
        run = Run.resume_from(args.resume)
    else:
        scenario = load_scenario(args.scenario, args.set)
        out = Path(args.out) if args.out else _default_out(scenario.name)
        run = Run(scenario, out)
    if args.calibrate:
        from wirelessfl.study.calibrate import calibrate_run

        return calibrate_run(run, progress=not args.quiet)
    try:
        result = run.execute(progress=not args.quiet)
    except KeyboardInterrupt:
        print(
            f"wirelessfl: interrupted; continue with: wirelessfl run --resume {run.out}",
            file=sys.stderr,
        )
        return 130
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
    )
    parser.add_argument("--version", action="version", version=f"wirelessfl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="simulate a scenario into a results folder")
    run.add_argument("scenario", nargs="?", help="scenario file or shipped name (default: default)")
    run.add_argument("--out", help="results folder (default: runs/<scenario name>)")
    run.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a key, e.g. rounds=50"
    )
    run.add_argument("--resume", metavar="DIR", help="continue a killed run in DIR")
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
    ch.add_argument("--bits", type=float, default=1e6, help="payload size [bits]")
    ch.add_argument("--max-rows", type=int, default=20, help="clients to print")
    ch.set_defaults(func=_cmd_channels)

    keys = sub.add_parser("scenario-keys", help="every scenario key with default and range")
    keys.set_defaults(func=_cmd_keys)
    add_sweep_command(sub)
    add_plot_command(sub)
    add_reproduce_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args))
    except UserError as err:
        print(f"wirelessfl: error: {err}", file=sys.stderr)
        return 2
    except SimulationError as err:
        print(f"wirelessfl: run stopped: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "wirelessfl: interrupted; continue with: wirelessfl run --resume DIR", file=sys.stderr
        )
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
