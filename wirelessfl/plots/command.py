"""``wirelessfl plot STUDY_OR_RUN [--kind K] [-o FILE]``: one figure of a run or a study."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError

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
)
FORMATS = (".png", ".pdf", ".svg")


def _cmd_plot(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not path.is_dir():
        raise UserError(f"plot: {path} is not a folder (give a run or a study folder)")
    out = Path(args.output) if args.output else path / f"{args.kind}.png"
    if out.suffix.lower() not in FORMATS:
        raise UserError(f"plot -o: the file name must end in {', '.join(FORMATS)}, got {out}")
    from wirelessfl.plots.kinds import PLOTS
    from wirelessfl.results.runs import as_runs

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
    fig = PLOTS[args.kind](as_runs(path), **kwargs)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=args.dpi)
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
    p.add_argument("path", metavar="STUDY_OR_RUN", help="a study folder or a run folder")
    p.add_argument(
        "--kind",
        choices=KINDS,
        default="accuracy",
        help="accuracy (vs round), latency_accuracy (vs virtual time), frontier (final "
        "accuracy vs --x), queue (D^t, Q^t, D_th), sparsification (O^t), offline (gamma^0(r), "
        "chosen rank), cov (Cov norm), shares (per-client bandwidth; one run). "
        "Default: accuracy",
    )
    p.add_argument(
        "--x",
        help="frontier: bits (default), time, delay, d_th or a dotted config key; "
        "queue/sparsification/cov: round (default) or time",
    )
    p.add_argument("--by", metavar="KEY", help="frontier: one line per value of this config key")
    p.add_argument(
        "-o", "--output", metavar="FILE", help="figure file (default: STUDY_OR_RUN/<kind>.png)"
    )
    p.add_argument("--dpi", type=int, default=150, help="resolution of PNG output (default 150)")
    p.set_defaults(func=_cmd_plot)
    return p
