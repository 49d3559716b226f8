"""Every worked example of CONTRIBUTING.md runs: the file, its registry line, its scenario.

For each "###" section the test writes the example's file as a module in a temporary folder,
registers it under the name of the registry line (pointing at that module), and runs two rounds
of a small digits scenario with the section's scenario lines.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml
from scenario_helpers import digits_scenario

import channels
from wirelessfl import registries
from wirelessfl.sim import run_scenario

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXT = (Path(__file__).resolve().parents[1] / "CONTRIBUTING.md").read_text()
SECTION = re.compile(
    r"### (?P<title>[^\n]+)\n.*?"
    r"`(?P<path>[\w/]+\.py)`:\n\n```python\n(?P<code>.*?)```\n.*?"
    r"Registry line, in `(?P<registry>\w+)` of `[\w/.]+`:\n\n```python\n(?P<line>.*?)```\n.*?"
    r"Scenario:\n\n```yaml\n(?P<scenario>.*?)```",
    re.S,
)
EXAMPLES = {m["title"]: m for m in SECTION.finditer(TEXT)}


def test_every_extension_kind_has_a_worked_example():
    assert set(EXAMPLES) == {
        "An algorithm",
        "A sparsifier",
        "A controller",
        "A channel model",
        "A data set",
        "A model",
        "An uplink",
    }


def _flat(data: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("title", sorted(EXAMPLES))
def test_worked_example_runs(title, tmp_path, monkeypatch):
    example = EXAMPLES[title]
    module = "contrib_" + Path(example["path"]).stem
    (tmp_path / f"{module}.py").write_text(example["code"])
    monkeypatch.syspath_prepend(str(tmp_path))
    name, target = (s.strip().strip('"') for s in example["line"].strip().rstrip(",").split(":", 1))
    attribute = target.split(":")[1]
    registry = getattr(registries, example["registry"], None) or getattr(
        channels, example["registry"]
    )
    registry.register(name, f"{module}:{attribute}")
    try:
        overrides = _flat(yaml.safe_load(example["scenario"]))
        result = run_scenario(digits_scenario(rounds=2, **overrides), tmp_path / "run")
    finally:
        registry.unregister(name)
    assert result.finished and len(result.rounds) == 2
    assert all(math.isfinite(x) for x in result.rounds.loss)
    assert result.rounds.accuracy.notna().iloc[-1]
    if title == "An uplink":  # the wired link's times: bits / rate, the share 1
        rounds = result.rounds
        assert (rounds.planned_delay_s - rounds.delay_s).abs().max() < 1e-9
    if title == "An algorithm":
        assert (result.rounds["algo.update_norm"] > 0).all()
