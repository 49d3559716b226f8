"""The event-driven engine talks to the simulator through :class:`EngineHost` alone: every
member of the simulator that ``async_engine.py`` and ``dispatch_checks.py`` read is declared
there (none private), and a built simulator has each of them."""

from __future__ import annotations

import re
from pathlib import Path

from scenario_helpers import small_scenario

import wirelessfl.sim.async_engine as async_engine
import wirelessfl.sim.dispatch_checks as dispatch_checks
from wirelessfl.learners import make_learner
from wirelessfl.sim.engine_host import EngineHost
from wirelessfl.sim.simulator import Simulator

#: ``sim.x`` and ``self.sim.x`` in the engine's modules (not ``sim.<module>`` imports)
READ = re.compile(r"(?<![\w.])(?:self\.)?sim\.(\w+)")


def _read_members() -> set[str]:
    names = set()
    for module in (async_engine, dispatch_checks):
        source = Path(module.__file__).read_text()
        source = re.sub(r"^from .*$|^import .*$", "", source, flags=re.M)
        source = re.sub(r"wirelessfl\.sim\.\w+", "", source)
        names |= set(READ.findall(source))
    return names


def _declared() -> set[str]:
    methods = {n for n in vars(EngineHost) if not n.startswith("_")}
    return set(EngineHost.__annotations__) | methods


def test_the_engine_reads_only_the_declared_public_members():
    read = _read_members()
    assert {"scenario", "learner", "controller", "uplink", "compute_estimate"} <= read
    assert not {n for n in read if n.startswith("_")}
    assert read <= _declared(), read - _declared()


def test_a_built_simulator_has_every_declared_member():
    sc = small_scenario(**{"server.mode": "async", "server.concurrency": 2})
    sim = Simulator(sc, make_learner(sc))
    missing = [name for name in _declared() if not hasattr(sim, name)]
    assert not missing and sim.engine is not None
