"""``wirelessfl traces convert --from fedscale FILE --out OUT.json``: FedScale's trace pickles
(client behaviour, device capacity) to the JSON trace files scenarios read
(``channels.fedscale``; docs/simulator.md, "Trace files")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError, file_problem, path_text


def _cmd_convert(args: argparse.Namespace) -> int:
    from channels.fedscale import CONVERTERS, load_trace_pickle, trace_kind

    out = Path(args.out)
    if out.exists():
        raise UserError(f"--out: {out} exists; give a new file name (nothing is overwritten)")
    problem = file_problem(out)
    if problem:
        raise UserError(f"--out: {problem}")
    try:
        trace = load_trace_pickle(args.file)
        kind = args.kind or trace_kind(trace, where=args.file)
        done = CONVERTERS[kind](trace, where=args.file, n_clients=args.clients)
    except ValueError as err:
        raise UserError(str(err)) from None
    rows = ",\n".join(f" {json.dumps(key)}: {json.dumps(row)}" for key, row in done.data.items())
    out.write_text("{\n" + rows + "\n}\n")  # one client per line
    what = (
        f"{done.intervals} intervals; {done.dropped_zero_length} zero-length intervals dropped"
        if kind == "behave"
        else "ms per sample in computation: set devices.flops_per_sample to read it"
    )
    print(
        f"wrote {out}: FedScale {kind} trace, {len(done.data)} clients (0..{len(done.data) - 1}) "
        f"of {done.clients_in_file} in the file, {what}"
    )
    return 0


def add_traces_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``wirelessfl traces convert`` on an ``add_subparsers()`` object."""
    traces = subparsers.add_parser(
        "traces",
        help="convert trace files for scenarios",
        description="Trace files for scenarios: `wirelessfl traces convert --from fedscale FILE "
        "--out OUT.json` turns FedScale's client-behaviour or device-capacity pickle into the "
        "JSON that availability.trace or devices.trace reads.",
    )
    actions = traces.add_subparsers(dest="traces_command", metavar="ACTION", required=True)
    p = actions.add_parser(
        "convert",
        help="FedScale's client_behave_trace / client_device_capacity pickle to a JSON trace",
        description="Read a FedScale trace pickle with a restricted unpickler (plain "
        "containers, numbers and numpy scalars only: a pickle naming anything else is refused "
        "before it runs), renumber its clients 0..N-1 in ascending order of FedScale's ids, "
        "drop zero-length availability intervals, and write the JSON that "
        "availability.trace (behaviour) or devices.trace (device capacity) reads.",
    )
    p.add_argument(
        "--from", dest="source", required=True, choices=["fedscale"], help="the trace's source"
    )
    p.add_argument("file", type=path_text, metavar="FILE", help="the pickle to convert")
    p.add_argument("--out", required=True, type=path_text, metavar="OUT.json", help="new file")
    p.add_argument(
        "--kind",
        choices=["behave", "device"],
        default=None,
        help="behave (client_behave_trace) or device (client_device_capacity); default: "
        "read from the first client's fields",
    )
    p.add_argument(
        "--clients", type=int, default=None, metavar="N", help="keep the N smallest ids (all)"
    )
    p.set_defaults(func=_cmd_convert)
    return p
