"""SimPy co-simulator: rounds, events, channel process, runs."""

from wirelessfl.sim.runner import Run, resume_run, run_scenario
from wirelessfl.sim.simulator import Simulator

__all__ = ["Run", "Simulator", "resume_run", "run_scenario"]
