"""``wirelessfl sweep SCENARIO --grid KEY=V1,V2 [--seeds N] [--jobs J]``: a sweep from the shell."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from wirelessfl.errors import SimulationError, UserError, path_text
from wirelessfl.plugins import add_plugin_argument
from wirelessfl.results.study import INDEX_FILE, StudyResult
from wirelessfl.study.executor import add_executor_arguments
from wirelessfl.study.grid import parse_grid
from wirelessfl.study.sweep import MAX_JOBS, MAX_SEEDS, MIN_JOBS, run_sweep


def parse_seeds(text: str) -> int | list[int]:
    """``--seeds``: a count (``3``) or a list of distinct seeds (``0,1,5``)."""
    accepted = f"a count from 1 to {MAX_SEEDS} or a list of distinct seeds >= 0 like 0,1,5"
    try:
        seeds = [int(s) for s in text.split(",")] if "," in text else int(text)
    except ValueError:
        raise UserError(f"--seeds: expected {accepted}, got {text!r}") from None
    if isinstance(seeds, int):
        ok = 1 <= seeds <= MAX_SEEDS
    else:
        ok = 0 < len(seeds) <= MAX_SEEDS and min(seeds) >= 0 and len(set(seeds)) == len(seeds)
    if not ok:
        raise UserError(f"--seeds: expected {accepted}, got {text!r}")
    return seeds


def _study_summary(study: StudyResult) -> str:
    index = study.index
    counts = index["status"].value_counts()
    what = ", ".join(f"{int(n)} {status}" for status, n in counts.items())
    show = ["run", "finished", "final_accuracy", "mean_delay_s", "mean_sparsification"]
    table = index[show].assign(
        total_MB_up=index["total_bits_up"] / 8e6,
        energy_J=index["device_energy_j"],  # per device per round
        budget_J=index["energy_budget_j"],
        budget_met=index["budget_met_share"],
    )
    lines = [
        f"study      {study.path}   ({len(index)} runs: {what})",
        table.to_string(index=False, float_format=lambda x: f"{x:.4g}"),
        "energy_J: per device per round; budget_met: share of the devices whose time-average "
        "energy per round kept to budget_J",
        f"index      {study.path / INDEX_FILE}",
        f"load with  wirelessfl.study.load_study({str(study.path)!r})",
    ]
    return "\n".join(lines)


def _cmd_sweep(args: argparse.Namespace) -> int:
    grid = parse_grid(args.grid or [])
    seeds = parse_seeds(args.seeds)
    out = Path(args.out) if args.out else Path("runs") / f"sweep-{Path(args.scenario).stem}"
    try:
        study = run_sweep(
            args.scenario,
            grid=grid,
            seeds=seeds,
            out_dir=out,
            jobs=args.jobs,
            progress=not args.quiet,
            overrides=args.set or [],
            executor=args.executor,
            ray_address=args.ray_address,
            plugins=args.plugin or (),
        )
    except KeyboardInterrupt:
        print(
            "wirelessfl: sweep interrupted; run the same command again to resume it",
            file=sys.stderr,
        )
        return 130
    print(_study_summary(study))
    if study.failed:
        name, message = next(iter(study.failed.items()))
        raise SimulationError(
            f"{len(study.failed)} of {len(study.index)} runs stopped (first: {name}: {message}); "
            "the same command resumes them"
        )
    return 0


def add_sweep_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``wirelessfl sweep`` on an ``add_subparsers()`` object."""
    p = subparsers.add_parser(
        "sweep",
        help="run a scenario over a grid of keys and seeds into a study folder",
        description="Run SCENARIO for every combination of --grid values and every seed, one run "
        "folder each, plus an index.csv. Running the same command again skips finished runs and "
        "resumes killed ones.",
    )
    p.add_argument("scenario", type=path_text, help="scenario file or shipped name")
    p.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2,...",
        help="a key and its values, parsed like --set values (repeat for more keys)",
    )
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a key in every run"
    )
    p.add_argument(
        "--seeds",
        default="1",
        metavar="N|S1,S2,...",
        help=f"number of seeds, 1 to {MAX_SEEDS} (the scenario's seed and the next ones), or a "
        "list of distinct seeds (default: 1)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="J",
        help=f"runs in parallel, {MIN_JOBS} to {MAX_JOBS} (default 1)",
    )
    add_executor_arguments(p)
    add_plugin_argument(p)
    p.add_argument("--out", type=path_text, help="study folder (default: runs/sweep-<scenario>)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=_cmd_sweep)
    return p
