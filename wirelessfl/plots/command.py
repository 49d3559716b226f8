"""``wirelessfl plot STUDY_OR_RUN... [--kind K] [--out FILE]``: one figure of the runs of one or
more run and study folders."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from wirelessfl.errors import (
    RESOURCE_ERRNOS,
    UserError,
    file_problem,
    folder_problem,
    int_in_range,
    path_text,
    short_path,
)

#: the keys of ``kinds.PLOTS``, spelled out so that registering the command stays cheap
KINDS = (
    "accuracy",
    "latency_accuracy",
    "frontier",
    "queue",
    "sparsification",
    "offline",
    "cov",
    "shares",
    "energy",
)
FORMATS = (".png", ".pdf", ".svg")
#: accepted --dpi values: below, figures are unreadable; above, a PNG needs gigabytes
DPI_RANGE = (10, 1200)


def _read_runs(paths: list[Path]) -> list:
    """The runs of run and study folders (a folder reached twice counts once); a damaged or
    foreign table is one ``UserError`` naming its folder."""
    import pandas as pd

    from wirelessfl.results.runs import as_runs

    runs: list = []
    seen: set[Path] = set()
    for path in paths:
        try:
            for run in as_runs(path, where="plot"):
                if Path(run.path).resolve() not in seen:
                    seen.add(Path(run.path).resolve())
                    runs.append(run)
        except UserError:
            raise
        except (pd.errors.EmptyDataError, pd.errors.ParserError, ValueError, KeyError) as err:
            # a table that is empty, not CSV, not UTF-8 or lacks a column wirelessfl writes
            text = (
                f"no column {err.args[0]!r}" if isinstance(err, KeyError) and err.args else str(err)
            )
            first = (text.strip().splitlines() or [type(err).__name__])[0]
            raise UserError(
                f"plot: cannot read the results in {short_path(path)} ({first}); "
                "is it a run or study folder written by wirelessfl?"
            ) from None
    return runs


def _folders(texts: list[str]) -> list[Path]:
    """The folders given, checked: each exists and is a folder."""
    paths = []
    for text in texts:
        path = Path(text)
        problem = folder_problem(path)
        if problem:
            raise UserError(f"plot: {problem}")
        if not path.is_dir():
            raise UserError(f"plot: {path} is not a folder (give run or study folders)")
        paths.append(path)
    return paths


def _cmd_plot(args: argparse.Namespace) -> int:
    paths = _folders(args.paths)
    if args.output is None and len(paths) > 1:
        raise UserError(
            f"plot: {len(paths)} folders are drawn into one figure; name its file with --out FILE"
        )
    out = Path(args.output) if args.output else paths[0] / f"{args.kind}.png"
    where = "plot --out" if args.output else "plot"
    if out.suffix.lower() not in FORMATS:
        raise UserError(f"plot --out: the file name must end in {', '.join(FORMATS)}, got {out}")
    problem = file_problem(out)
    if problem:
        raise UserError(f"{where}: cannot write the figure: {problem}")
    fig = figure_of_folders(paths, args.kind, x=args.x, by=args.by)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=args.dpi)
    except OSError as err:
        if err.errno in RESOURCE_ERRNOS:
            raise  # the command line names the resource that ran out
        raise UserError(f"{where}: cannot write {short_path(out)}: {err.strerror or err}") from None
    print(f"wrote {out}")
    return 0


def figure_of_folders(
    paths: list[Path], kind: str, *, x: str | None = None, by: str | None = None
) -> Any:
    """The figure ``wirelessfl plot PATHS --kind KIND [--x X] [--by KEY]`` draws: ``kinds.PLOTS
    [kind]`` of the runs of every run and study folder in ``paths`` together (a run reached
    twice counts once). Refusals are one-line ``UserError``s."""
    from wirelessfl.plots.kinds import PLOTS

    if kind == "shares" and (len(paths) > 1 or (Path(paths[0]) / "index.csv").exists()):
        raise UserError("plot --kind shares draws one run: give one run folder (inside a study)")
    kwargs: dict[str, Any] = {}
    if x is not None:
        if kind not in ("frontier", "queue", "sparsification", "cov"):
            raise UserError(f"plot --x: not used by --kind {kind}")
        kwargs["x"] = x
    if by is not None:
        if kind != "frontier":
            raise UserError("plot --by: only for --kind frontier")
        kwargs["by"] = by
    runs = _read_runs([Path(p) for p in paths])
    try:
        return PLOTS[kind](runs, **kwargs)
    except KeyError as err:
        columns = _missing_columns(err)
        lacking = [r for r in runs if any(c not in r.rounds.columns for c in columns)]
        if not columns or not lacking:
            raise
        names = ", ".join(c for c in columns if c not in lacking[0].rounds.columns)
        raise UserError(
            f"plot --kind {kind}: {short_path(lacking[0].path)} has no column {names} "
            "in rounds.csv (not a wirelessfl run folder, or one written by another version)"
        ) from None


def _missing_columns(err: KeyError) -> list[str]:
    """The column names a ``KeyError`` names: one name, or pandas' ``"['a', 'b'] not in
    index"``."""
    arg = err.args[0] if err.args else None
    if not isinstance(arg, str):
        return []
    if arg.startswith("[") and arg.endswith("] not in index"):
        return re.findall(r"'([^']*)'", arg)
    return [arg]


def add_plot_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``wirelessfl plot`` on an ``add_subparsers()`` object."""
    p = subparsers.add_parser(
        "plot",
        help="draw a figure of run and study folders (PNG, PDF or SVG)",
        description="Draw one figure of the runs of one or more run and study folders (a run "
        "given twice counts once). Runs differing only in seed are averaged (min-max shaded); "
        "the legend names the settings that differ and apply, the title the folders drawn.",
    )
    p.add_argument(
        "paths",
        type=path_text,
        nargs="+",
        metavar="STUDY_OR_RUN",
        help="study folders and run folders; their runs are drawn together",
    )
    p.add_argument(
        "--kind",
        choices=KINDS,
        default="accuracy",
        help="accuracy (vs round), latency_accuracy (vs virtual time), frontier (final "
        "accuracy vs --x), queue (D^t, Q^t, D_th), sparsification (O^t), offline (gamma^0(r), "
        "chosen rank), cov (Cov norm), shares (per-client bandwidth; one run), energy (per "
        "device per round vs round, cumulative vs virtual time, accuracy vs energy). "
        "Default: accuracy",
    )
    p.add_argument(
        "--x",
        help="frontier: bits (default), time, delay, d_th or a dotted config key; "
        "queue/sparsification/cov: round (default) or time",
    )
    p.add_argument("--by", metavar="KEY", help="frontier: one line per value of this config key")
    p.add_argument(
        "--out",
        "-o",
        "--output",
        dest="output",
        type=path_text,
        metavar="FILE",
        help="figure file, .png, .pdf or .svg (default: STUDY_OR_RUN/<kind>.png; needed with "
        "several folders)",
    )
    p.add_argument(
        "--dpi",
        type=int_in_range(*DPI_RANGE),
        default=150,
        help=f"resolution of PNG output, {DPI_RANGE[0]} to {DPI_RANGE[1]} (default 150)",
    )
    p.set_defaults(func=_cmd_plot)
    return p
