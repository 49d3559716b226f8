"""What ``wirelessfl COMMAND --help`` says: a description, examples and the exit statuses.

:func:`finish_help` gives every subcommand a description (where its module has none),
examples and the exit status table (``wirelessfl.cli.EXIT_STATUS``), so that each ``--help``
stands on its own.
"""

from __future__ import annotations

import argparse
import textwrap

#: descriptions of the commands whose modules give none
DESCRIPTIONS = {
    "run": "Simulate SCENARIO (a shipped name, see `wirelessfl scenarios`, or a .yaml/.toml "
    "file) into a results folder: config.yaml, meta.json, rounds.csv (and events.csv, "
    "clients.csv when asked) and checkpoints. A killed run continues with --resume; a finished "
    "one is extended with --resume DIR --set rounds=N.",
    "channels": "Print each client's mean SNR, ergodic rate and upload delay of a payload with "
    "equal bandwidth shares, for the cell SCENARIO describes. Nothing is simulated.",
    "scenario-keys": "List every scenario key with its default and accepted values; set them "
    "in a scenario file or with --set KEY=VALUE.",
    "scenarios": "List the scenarios shipped with wirelessfl, by the name `wirelessfl run NAME` "
    "takes, with the first sentence of each file's description.",
    "reproduce": "Re-run a figure of SOFT/TSFA's section V, or a claim of FSLoRA, FLoRAL or "
    "H2Tune, as named sweeps of a shipped scenario: one study folder per sweep under "
    "OUT/FIGURE/, with summary.csv, paired.csv (each method against the figure's reference "
    "method, seed by seed, with 95 % t-intervals; a verdict needs --seeds 5 or more) and the "
    "figures. Running it again resumes it. docs/results.md compares each with the paper.",
}

EXAMPLES = {
    "run": """\
  wirelessfl run network_only --set rounds=200          # network-only, seconds
  wirelessfl run paper/fig3ab_sparsifiers --out runs/soft
  wirelessfl run my_scenario.yaml --dry-run             # resolved scenario and offline rank
  wirelessfl run my_scenario.yaml --plugin my_controller.py   # your own controller, ...
  wirelessfl run --resume runs/network_only             # continue a killed run
  wirelessfl run --resume runs/network_only --set rounds=5000   # extend a finished one""",
    "channels": """\
  wirelessfl channels paper --bits 2e6
  wirelessfl channels network_only --set channel.bandwidth_hz=2e7 --max-rows 5""",
    "scenario-keys": """\
  wirelessfl scenario-keys | grep controller
  wirelessfl scenario-keys --plugin my_algorithm.py     # with its strategy.<name>.* keys""",
    "scenarios": """\
  wirelessfl scenarios
  wirelessfl run paper/fig45_shards       # run one by its listed name""",
    "sweep": """\
  wirelessfl sweep network_only --grid controller.V=1e-5,1e-4,1e-3 --seeds 3
  wirelessfl sweep paper --grid controller.d_th_s=1,2,4 --seeds 0,1,2 --jobs 2 --out runs/dth
  wirelessfl sweep my.yaml --plugin my_controller.py --grid controller.d_th_s=0.3,0.6""",
    "plot": """\
  wirelessfl plot runs/network_only --kind queue
  wirelessfl plot runs/dth --kind frontier --x delay --by controller.d_th_s --out dth.pdf
  wirelessfl plot runs/tsfa runs/fixed --kind latency_accuracy --out compare.png""",
    "reproduce": """\
  wirelessfl reproduce dpp                      # the drift-plus-penalty trade-off
  wirelessfl reproduce fig3ab --seeds 3 --jobs 2
  wirelessfl reproduce fslora-hetero --seeds 0,1,2 --out runs/repro""",
    "export": """\
  wirelessfl export runs/soft --out adapters/soft    # adapters/soft/global: the peft adapter
  wirelessfl export runs/default --out adapters/default""",
    "traces": """\
  wirelessfl traces convert --from fedscale client_behave_trace --out behave.json --clients 100
  wirelessfl traces convert --from fedscale client_device_capacity --out device.json""",
}


def _wrapped(text: str) -> str:
    """Paragraphs of ``text`` filled to 79 columns (the raw formatter keeps them as they are)."""
    return "\n\n".join(textwrap.fill(" ".join(p.split()), 79) for p in text.split("\n\n"))


def finish_help(subparsers: argparse._SubParsersAction, exit_status: str) -> None:
    """Give each registered subcommand a description, examples and ``exit_status``."""
    for name, parser in subparsers.choices.items():
        description = parser.description or DESCRIPTIONS.get(name)
        parser.description = _wrapped(description) if description else None
        examples = EXAMPLES.get(name)
        parser.epilog = (f"examples:\n{examples}\n\n" if examples else "") + exit_status
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
