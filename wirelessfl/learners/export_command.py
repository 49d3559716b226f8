"""``wirelessfl export RUN --out DIR``: register the command (torch loads only when it runs)."""

from __future__ import annotations

import argparse
from typing import Any

from wirelessfl.errors import path_text


def _cmd_export(args: argparse.Namespace) -> int:
    from wirelessfl.learners.export import export_run
    from wirelessfl.learners.exported_loader import BASE_FOLDER, LOADER

    out = export_run(args.run, args.out)
    standalone = f"{out}/{BASE_FOLDER} (base weights), {out}/{LOADER}, "
    print(
        f"wrote {out}/global (peft adapter), {standalone if (out / LOADER).exists() else ''}"
        f"{out}/base_model.json and {out}/README.md"
    )
    return 0


def add_export_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``wirelessfl export`` on an ``add_subparsers()`` object."""
    p = subparsers.add_parser(
        "export",
        help="write a finished run's global LoRA adapter in peft's save_pretrained format",
        description="Write the global LoRA adapter of the finished real-training run RUN to "
        "DIR/global in peft's save_pretrained format (with the trained task head as "
        "modules_to_save), the base model's build_model arguments to DIR/base_model.json and "
        "a model card (scenario, final metrics, how to load) to DIR/README.md, and, to load "
        "it without wirelessfl, the base model's weights to DIR/base and a loader to "
        "DIR/load_exported.py (torch, peft, safetensors and the model's own package). With "
        "wirelessfl: PeftModel.from_pretrained(build_model(...).model, DIR/global). "
        "Algorithms whose global state is not a peft LoRA adapter (fedstack, the floral and "
        "h2tune families) are refused.",
    )
    p.add_argument("run", type=path_text, metavar="RUN", help="a finished run folder")
    p.add_argument(
        "--out", required=True, type=path_text, metavar="DIR", help="a new or empty folder"
    )
    p.set_defaults(func=_cmd_export)
    return p
