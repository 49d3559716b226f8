"""``wirelessfl reproduce FIGURE [--full]``: the papers' figures and claims as named sweeps.

Each reproduction is a shipped scenario (``wirelessfl/scenarios/``) plus one or more grids;
results go to one study folder per sweep under ``OUT/FIGURE/``, figures and a ``summary.csv``
next to them.
The default scale finishes on a 2-core CPU in minutes per run (each scenario file states its
scale); ``--full`` switches to the paper's N = 100, K = 10 and more rounds. Finished runs are
skipped and unfinished ones resumed, as for any sweep. What each figure shows against the
paper's claim is discussed in ``docs/results.md``.

Where the reproduction names a reference method, every run is compared with the reference run
at the same seed and context (:mod:`wirelessfl.study.paired`, docs/statistics.md):
``summary.csv`` gains ``reference_run`` and ``<metric>_vs_reference`` per run, and
``paired.csv`` holds one row per (metric, method, context) with the mean paired difference,
its 95 % t-interval and the verdict. Both are recomputed from the finished runs every time.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError, folder_problem, int_in_range, path_text
from wirelessfl.plugins import add_plugin_argument
from wirelessfl.study.command import parse_seeds
from wirelessfl.study.executor import add_executor_arguments
from wirelessfl.study.reproductions import REPRODUCTIONS
from wirelessfl.study.sweep import MAX_JOBS, MAX_SEEDS, MIN_JOBS

#: a reproduction's table longer than this is named, not printed (its csv holds it)
MAX_PRINTED_ROWS = 60


def reproduce(
    figure: str,
    *,
    out_dir: str | Path,
    full: bool = False,
    jobs: int = 1,
    progress: bool = False,
    overrides: list[str] | None = None,
    seeds: int | list[int] | None = None,
    target_accuracy: float | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    plugins: Sequence[str] = (),
) -> dict[str, Any]:
    """Run (or finish) one reproduction; returns its studies, summary table, paired table and
    figure paths.

    ``summary.csv`` holds each run's index row plus, where the reproduction states a target
    accuracy (or ``target_accuracy`` overrides it), ``target_accuracy``, ``time_to_target_s``
    (virtual seconds) and ``bits_to_target`` (uplink bits) to first reach it, and the
    reproduction's own columns where it has some (``Reproduction.run_columns``: the async-*
    ones add ``results.columns.STUDY_UPDATE_COLUMNS``, the energy-min-* ones
    ``STUDY_ENERGY_COLUMNS``), and the reproduction's own tables (``Reproduction.tables``,
    from the summary, and ``run_tables``, from the runs; each written to ``<name>.csv``; the
    result's ``tables``, name -> table). Where it names a
    reference method (``Reproduction.reference``), ``summary.csv`` also holds
    ``reference_run`` and ``<metric>_vs_reference`` and ``paired.csv`` the paired differences
    per (metric, method, context) (:func:`~wirelessfl.study.paired.paired_differences`; the
    result's ``paired``, None without a reference, and ``paired_problem``, why no table was
    made). ``executor`` and ``ray_address`` say where the runs go, as for
    :func:`~wirelessfl.study.sweep.run_sweep`, and ``plugins`` are imported by every run
    (``--plugin``).
    """
    import pandas as pd

    from wirelessfl.config.loader import SCENARIO_DIR
    from wirelessfl.results.runs import as_runs
    from wirelessfl.study.sweep import run_sweep

    if figure not in REPRODUCTIONS:
        raise UserError(
            f"reproduce: unknown figure {figure!r} (accepted: {', '.join(REPRODUCTIONS)}, all)"
        )
    spec = REPRODUCTIONS[figure]
    seeds = spec.seeds if seeds is None else seeds
    from wirelessfl.study.folder import make_folder

    out = Path(out_dir) / (f"{figure}-full" if full else figure)
    problem = folder_problem(out)
    if problem:
        raise UserError(f"--out: {problem}")
    make_folder(out, "--out")
    sweeps = (spec.full_sweeps or spec.sweeps) if full else spec.sweeps
    runs, studies = [], {}
    for name, grid in sweeps.items():
        study = run_sweep(
            SCENARIO_DIR / spec.scenario,
            grid=grid,
            seeds=seeds,
            out_dir=out / name,
            jobs=jobs,
            progress=progress,
            overrides=[*(spec.full if full else []), *(overrides or [])] or None,
            executor=executor,
            ray_address=ray_address,
            plugins=plugins,
        )
        studies[name] = study
        runs.extend(as_runs(study))
    table = pd.concat(
        [s.index.assign(sweep=name) for name, s in studies.items()], ignore_index=True
    )
    target = spec.target_accuracy if target_accuracy is None else target_accuracy
    if target is not None:
        table = _with_time_to_target(table, out, target)
    if spec.run_columns is not None:
        table = _with_run_columns(table, out, spec.run_columns, target)
    paired, problem = None, None
    if spec.reference is not None:
        table, paired, problem = _with_paired(table, out, spec.reference, sweeps, full)
    table.to_csv(out / "summary.csv", index=False)
    tables = spec.tables(table) if spec.tables else {}
    if spec.run_tables is not None:
        tables.update(spec.run_tables(runs))
    for name, frame in tables.items():
        frame.to_csv(out / f"{name}.csv", index=False)
    figures = spec.draw(out, runs) if spec.draw else []
    return {
        "folder": out,
        "summary": table,
        "paired": paired,
        "paired_problem": problem,
        "tables": tables,
        "figures": figures,
        "claim": spec.claim,
    }


def unit_fraction(text: str) -> float:
    """An argparse type: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected an accuracy in (0, 1], got {text!r}")
    return value


def _with_time_to_target(table, out: Path, target: float):
    """``table`` (one row per run, columns ``sweep`` and ``run``) with the time-to-target."""
    import pandas as pd

    from wirelessfl.results.store import load
    from wirelessfl.results.summary import time_to_target

    rows = []
    for sweep, run in zip(table["sweep"], table["run"], strict=True):
        folder = out / sweep / run
        if not (folder / "rounds.csv").is_file():
            rows.append(time_to_target(None, target))
            continue
        result = load(folder)  # the zero-shot evaluation counts (0 s when it meets the target)
        rows.append(time_to_target(result.rounds, target, initial_accuracy=result.initial_accuracy))
    return pd.concat([table.assign(target_accuracy=target), pd.DataFrame(rows)], axis=1)


def _with_run_columns(table, out: Path, columns, target: float | None):
    """``table`` with the reproduction's own per-run columns (``Reproduction.run_columns``);
    NaN for a run with no ``rounds.csv``."""
    import pandas as pd

    from wirelessfl.results.store import load

    rows = []
    for sweep, run in zip(table["sweep"], table["run"], strict=True):
        folder = out / sweep / run
        rows.append(columns(load(folder), target) if (folder / "rounds.csv").is_file() else {})
    return pd.concat([table, pd.DataFrame(rows, index=table.index)], axis=1)


def _with_final_test_loss(table, out: Path):
    """``table`` with ``final_test_loss``: each run's last evaluated ``test_loss``."""
    import pandas as pd

    values = []
    for sweep, run in zip(table["sweep"], table["run"], strict=True):
        path = out / sweep / run / "rounds.csv"
        rounds = pd.read_csv(path) if path.is_file() else None
        losses = (
            rounds["test_loss"].dropna()
            if rounds is not None and "test_loss" in rounds
            else pd.Series(dtype=float)
        )
        values.append(float(losses.iloc[-1]) if len(losses) else math.nan)
    return table.assign(final_test_loss=values)


def _with_paired(table, out: Path, reference, sweeps: dict[str, dict], full: bool):
    """``table`` with the per-run paired columns, the paired table (written to
    ``paired.csv``) and None; or ``table`` unchanged, None and why no table could be made."""
    from wirelessfl.study.paired import (
        paired_differences,
        paired_table_text,
        per_run_differences,
    )

    if "final_test_loss" in reference.metrics:
        table = _with_final_test_loss(table, out)
    metrics = [m for m in reference.metrics if m in table.columns]
    stale = out / "paired.csv"
    if not metrics:
        stale.unlink(missing_ok=True)
        return table, None, f"no column {', '.join(reference.metrics)} to compare"
    method_keys = reference.method_keys
    grid_keys = list(dict.fromkeys(k for grid in sweeps.values() for k in grid))
    context_keys = [k for k in grid_keys if k not in method_keys and k in table.columns]
    # a grid value None reads back from index.csv as NaN, which pairing takes for "this sweep
    # does not set the key" (matches any value): mark the sweeps' explicit None as "null"
    marked = table.copy()
    for name, grid in sweeps.items():
        for key, values in grid.items():
            if key in marked.columns and any(v is None for v in values):
                rows = (marked["sweep"] == name) & marked[key].isna()
                marked[key] = marked[key].astype(object).where(~rows, "null")
    options = {"metrics": metrics, "context_keys": context_keys}
    try:
        paired = paired_differences(marked, method_keys, reference.at(full), **options)
        per_run = per_run_differences(marked, method_keys, reference.at(full), **options)
    except ValueError as err:
        stale.unlink(missing_ok=True)
        return table, None, str(err)
    added = ["reference_run", *(f"{m}_vs_reference" for m in metrics)]
    table = table.assign(**{c: per_run[c].to_numpy() for c in added})
    paired_table_text(paired).to_csv(out / "paired.csv", index=False)
    return table, paired, None


def _cmd_reproduce(args: argparse.Namespace) -> int:
    figures = list(REPRODUCTIONS) if args.figure == "all" else [args.figure]
    seeds = None if args.seeds is None else parse_seeds(args.seeds)
    for figure in figures:
        result = reproduce(
            figure,
            out_dir=args.out,
            full=args.full,
            jobs=args.jobs,
            progress=not args.quiet,
            seeds=seeds,
            overrides=args.set,
            target_accuracy=args.target,
            executor=args.executor,
            ray_address=args.ray_address,
            plugins=args.plugin or (),
        )
        cols = [
            c
            for c in result["summary"].columns
            if c
            in (
                "run",
                "final_accuracy",
                "mean_delay_s",
                "mean_sparsification",
                "rank",
                "time_to_target_s",
                "bits_to_target",
                "updates_to_target",
                "mean_staleness",
                "final_test_loss",
                "final_accuracy_vs_reference",
                "round_energy_j",
                "fallback_rounds",
                "round_energy_j_vs_reference",
            )
        ]
        print(f"{figure}: {result['claim']}")
        print(result["summary"][["sweep", *cols]].to_string(index=False))
        if result["paired"] is not None:
            label = REPRODUCTIONS[figure].reference.label
            against = result["paired"].reference.iloc[0] if len(result["paired"]) else ""
            against = f"{label} ({against})" if label and against else label or against
            print(
                f"paired differences against {against}, 95 % t-interval "
                f"(paired.csv in {result['folder']}):"
            )
            print(_paired_text(result["paired"]))
        elif result["paired_problem"]:
            print(f"paired differences: none ({result['paired_problem']})")
        for name, frame in result["tables"].items():
            if len(frame) > MAX_PRINTED_ROWS:
                print(f"{name}: {len(frame)} rows in {result['folder'] / (name + '.csv')}")
                continue
            print(f"{name} ({name}.csv in {result['folder']}):")
            print(frame.drop(columns=["diffs"], errors="ignore").to_string(index=False))
        for path in result["figures"]:
            print(f"figure     {path}")
    return 0


def _paired_text(paired) -> str:
    """The paired table for the terminal: metric, method, context, n, mean, interval, verdict."""
    shown = paired.assign(
        interval=[
            f"[{lo:.4g}, {hi:.4g}]" for lo, hi in zip(paired.ci_low, paired.ci_high, strict=True)
        ],
        mean_diff=[f"{m:.4g}" for m in paired.mean_diff],
    )
    cols = ["metric", "method", "context", "n", "mean_diff", "interval", "verdict", "reason"]
    if not shown["context"].astype(bool).any():
        cols.remove("context")
    return shown[cols].to_string(index=False)


def add_reproduce_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``wirelessfl reproduce``."""
    p = subparsers.add_parser(
        "reproduce",
        help="re-run a figure of SOFT/TSFA's section V, a claim of FSLoRA, FLoRAL or H2Tune, "
        "the comparison of the server modes (async-*) or Yang et al.'s energy against T and K "
        "(energy-min-*)",
    )
    p.add_argument("figure", choices=[*REPRODUCTIONS, "all"])
    p.add_argument("--full", action="store_true", help="the paper's N = 100, K = 10 scale")
    p.add_argument(
        "--out",
        type=path_text,
        default="runs/reproduce",
        help="parent folder of the studies (default: runs/reproduce)",
    )
    p.add_argument(
        "--jobs",
        type=int_in_range(MIN_JOBS, MAX_JOBS),
        default=1,
        help=f"runs in parallel, {MIN_JOBS} to {MAX_JOBS} (default 1)",
    )
    p.add_argument(
        "--seeds",
        metavar="N|S1,S2,...",
        help=f"seeds per grid point (mean and spread): a number, 1 to {MAX_SEEDS} (the "
        "scenario's seed and the next ones), or a list of distinct seeds (default: the "
        "figure's, 3 for fslora-*, else 1)",
    )
    add_executor_arguments(p)
    add_plugin_argument(p)
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override for every run")
    p.add_argument(
        "--target",
        type=unit_fraction,
        help="accuracy whose time-to-target goes into summary.csv (default: the figure's)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=_cmd_reproduce)
    return p
