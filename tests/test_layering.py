"""Dependency direction: channels -> optim -> wirelessfl, and wirelessfl's layers in the order
``docs/architecture.md`` writes them, with no import cycle. Imports inside functions and under
``TYPE_CHECKING`` count like the others."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from wirelessfl.registries import ALGORITHMS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("channels", "optim", "wirelessfl")

BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED}:
            raise ImportError(f"blocked import of {name}")
        return None
sys.meta_path.insert(0, Block())
"""


def _run(blocked: set[str], code: str) -> subprocess.CompletedProcess:
    script = BLOCKER.replace("{BLOCKED}", repr(blocked)) + code
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


# -- the layer order, read from docs/architecture.md ------------------------------------------
def layer_order() -> list[list[str]]:
    """The layers of ``wirelessfl``, lowest first: the fenced block after "## Layers"."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"## Layers.*?```text\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no '## Layers' section with a ```text block"
    layers = []
    for line in block.group(1).splitlines():
        names = line.split("#")[0].split()
        if names:
            layers.append(names)
    return layers


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> set[str]:
    """Project modules ``module`` imports anywhere in its file (functions included)."""
    path = MODULES[module]
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [f"{prefix}.{alias.name}" for alias in node.names] + [prefix]
        for target in targets:
            resolved = _resolve(target)
            if resolved and resolved != module:
                found.add(resolved)
    return found


def _unit(module: str) -> str:
    """``wirelessfl.sim.runner`` -> ``sim``; ``wirelessfl.errors`` -> ``errors``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_layer_order_covers_every_subpackage_and_module():
    listed = {name for layer in layer_order() for name in layer}
    present = {_unit(m) for m in MODULES if m.startswith("wirelessfl.")} - {"__init__"}
    assert present - listed == set(), "add them to docs/architecture.md's layer list"
    assert listed - present == set(), "docs/architecture.md lists layers that do not exist"


def test_no_upward_imports_in_wirelessfl():
    rank = {name: i for i, layer in enumerate(layer_order()) for name in layer}
    upward = []
    for module in MODULES:
        if not module.startswith("wirelessfl.") or _unit(module) == "__init__":
            continue
        for target in imports_of(module):
            if not target.startswith("wirelessfl.") or _unit(target) == "__init__":
                continue
            if rank[_unit(target)] > rank[_unit(module)]:
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_lower_packages_never_import_higher_ones():
    bad = [
        f"{m} -> {t}"
        for m in MODULES
        for t in imports_of(m)
        if (m.startswith("channels") and not t.startswith("channels"))
        or (m.startswith("optim") and t.startswith("wirelessfl"))
    ]
    assert bad == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of size > 1 (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_between_files_or_subpackages():
    files = {
        m: {t for t in imports_of(m) if not (MODULES[m].name == "__init__.py" and t.startswith(m))}
        for m in MODULES
    }
    assert _cycles(files) == []
    units: dict[str, set[str]] = {}
    for m, targets in files.items():
        if m.startswith("wirelessfl."):
            units.setdefault(_unit(m), set()).update(
                _unit(t) for t in targets if t.startswith("wirelessfl.") and _unit(t) != _unit(m)
            )
    units.pop("__init__", None)
    for targets in units.values():
        targets.discard("__init__")
    assert _cycles(units) == []


def test_the_checks_catch_what_they_look_for():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert "wirelessfl.training.runtime" in imports_of("wirelessfl.learners.federated")
    lazy = imports_of("wirelessfl.learners")  # make_learner's registry is imported at the top
    assert "wirelessfl.registries" in lazy


# -- what a base install can import ------------------------------------------------------------
def test_channels_needs_only_numpy_and_scipy():
    proc = _run(
        {"torch", "simpy", "wirelessfl", "optim", "cvxpy", "pandas", "peft", "transformers"},
        "import channels\n"
        "from channels import (RayleighFading, GaussMarkovRayleigh, path_gain, rate_bps,\n"
        "    upload_delay_s, ergodic_rate_rayleigh, compute_delay_s, Cell, noise_power_w)\n"
        "import numpy as np\n"
        "cell = Cell.from_mean_snr(mean_snr_db=10.0, n_clients=4, seed=0)\n"
        "print(cell.snr_block(0, 3)[0].shape)\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(3, 4)"


def test_optim_needs_no_torch_simpy_or_wirelessfl():
    proc = _run(
        {"torch", "simpy", "wirelessfl", "peft", "transformers"},
        "import numpy as np\n"
        "from optim import (BoundConstants, convergence_bound, offline_rank_search, solve_slot,\n"
        "    LyapunovController, equal_delay_bandwidth, minmax_bandwidth)\n"
        "c = BoundConstants(S=1.0, H=1.0, W=1.0, phi=0.1, G=1.0, eta=1e-3, E=5, r_max=64)\n"
        "s = solve_slot(queue=1.0, V=1e-4, snr=np.full(10, 10.0), rank=8, n_clients=100,\n"
        "    params_per_rank=1536, bits_per_value=32, bandwidth_hz=1e6, o_min=0.05,\n"
        "    constants=c, method='cvxpy')\n"
        "print(round(float(s.shares.sum()), 9))\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1.0"


def test_network_only_run_needs_no_torch(tmp_path):
    proc = _run(
        {"torch", "peft", "transformers"},
        "from wirelessfl.cli import main\n"
        f"raise SystemExit(main(['run', 'paper', '--set', 'rounds=20', '--out', "
        f"{str(tmp_path / 'r')!r}, '--quiet']))\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert "rounds         20" in proc.stdout


def test_every_registered_algorithm_spec_imports_without_torch():
    """The schema reads an algorithm's Settings and network-only runs its cost model on a base
    install: every family's settings.py and cost.py and every registered spec (its family's
    __init__.py) import without torch, and every cost model plans and sizes a round; the
    implementations may import torch."""
    families = sorted(p.parent.name for p in (ROOT / "wirelessfl/algorithms").glob("*/settings.py"))
    proc = _run(
        {"torch", "peft", "transformers"},
        "import dataclasses, importlib\n"
        "from wirelessfl.algorithms import AlgorithmSpec, algorithm_class\n"
        "from wirelessfl.algorithms.cost import CostModel\n"
        "from wirelessfl.registries import ALGORITHMS\n"
        f"for family in {families!r}:\n"
        "    importlib.import_module(f'wirelessfl.algorithms.{family}.settings')\n"
        "    importlib.import_module(f'wirelessfl.algorithms.{family}.cost')\n"
        "for name in ALGORITHMS:\n"
        "    spec = ALGORITHMS.load(name)\n"
        "    assert isinstance(spec, AlgorithmSpec), name\n"
        "    assert dataclasses.is_dataclass(spec.Settings), name\n"
        "    assert issubclass(spec.CostModel, CostModel), name\n"
        "    print(name, spec.Settings.__name__, spec.CostModel.__name__)\n"
        "try:\n"
        "    algorithm_class('soft')\n"
        "except ImportError:\n"
        "    print('soft needs torch')\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert {"fedit", "ffa_lora", "floral", "fslora", "h2tune", "hetero_rank", "soft"} <= set(
        families
    )
    lines = proc.stdout.splitlines()
    assert "soft SoftSettings SoftCost" in lines
    assert "h2tune_hetlora HeteroHetLoRASettings FederatedLoRAGroupsCost" in lines
    assert len(lines) == len(list(ALGORITHMS)) + 1
    assert lines[-1] == "soft needs torch"  # the blocker blocks: the check can fail
