"""``wirelessfl plot STUDY_OR_RUN [--kind K] [--out FILE]``: one figure of a run or a study."""

from __future__ import annotations

import argparse
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


def _read_runs(path: Path) -> list:
    """The runs of a run or study folder; a damaged or foreign table is one ``UserError``."""
    import pandas as pd

    from wirelessfl.results.runs import as_runs

    try:
        return as_runs(path)
    except UserError:
        raise
    except (pd.errors.EmptyDataError, pd.errors.ParserError, ValueError, KeyError) as err:
        # a table that is empty, not CSV, not UTF-8 or lacks a column wirelessfl writes
        text = f"no column {err.args[0]!r}" if isinstance(err, KeyError) and err.args else str(err)
        first = (text.strip().splitlines() or [type(err).__name__])[0]
        raise UserError(
            f"plot: cannot read the results in {short_path(path)} ({first}); "
            "is it a run or study folder written by wirelessfl?"
        ) from None


def _cmd_plot(args: argparse.Namespace) -> int:
    path = Path(args.path)
    problem = folder_problem(path)
    if problem:
        raise UserError(f"plot: {problem}")
    if not path.is_dir():
        raise UserError(f"plot: {path} is not a folder (give a run or a study folder)")
    out = Path(args.output) if args.output else path / f"{args.kind}.png"
    where = "plot --out" if args.output else "plot"
    if out.suffix.lower() not in FORMATS:
        raise UserError(f"plot --out: the file name must end in {', '.join(FORMATS)}, got {out}")
    problem = file_problem(out)
    if problem:
        raise UserError(f"{where}: cannot write the figure: {problem}")
    from wirelessfl.plots.kinds import PLOTS

    is_study = (path / "index.csv").exists()
    if args.kind == "shares" and is_study:
        raise UserError("plot --kind shares draws one run: give a run folder inside the study")
    kwargs: dict[str, Any] = {}
    if args.x is not None:
        if args.kind not in ("frontier", "queue", "sparsification", "cov"):
            raise UserError(f"plot --x: not used by --kind {args.kind}")
        kwargs["x"] = args.x
    if args.by is not None:
        if args.kind != "frontier":
            raise UserError("plot --by: only for --kind frontier")
        kwargs["by"] = args.by
    runs = _read_runs(path)
    try:
        fig = PLOTS[args.kind](runs, **kwargs)
    except KeyError as err:
        column = err.args[0] if err.args else None
        lacking = [r for r in runs if column not in r.rounds.columns]
        if not isinstance(column, str) or not lacking:
            raise
        raise UserError(
            f"plot --kind {args.kind}: {short_path(lacking[0].path)} has no column {column!r} "
            "in rounds.csv (not a wirelessfl run folder, or one written by another version)"
        ) from None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=args.dpi)
    except OSError as err:
        if err.errno in RESOURCE_ERRNOS:
            raise  # the command line names the resource that ran out
        raise UserError(f"{where}: cannot write {short_path(out)}: {err.strerror or err}") from None
    print(f"wrote {out}")
    return 0


def add_plot_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``wirelessfl plot`` on an ``add_subparsers()`` object."""
    p = subparsers.add_parser(
        "plot",
        help="draw a figure of a run or a study folder (PNG, PDF or SVG)",
        description="Draw one figure of a run folder or of every run of a study folder. "
        "Runs differing only in seed are averaged (min-max shaded).",
    )
    p.add_argument(
        "path", type=path_text, metavar="STUDY_OR_RUN", help="a study folder or a run folder"
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
        help="figure file, .png, .pdf or .svg (default: STUDY_OR_RUN/<kind>.png)",
    )
    p.add_argument(
        "--dpi",
        type=int_in_range(*DPI_RANGE),
        default=150,
        help=f"resolution of PNG output, {DPI_RANGE[0]} to {DPI_RANGE[1]} (default 150)",
    )
    p.set_defaults(func=_cmd_plot)
    return p
