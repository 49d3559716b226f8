"""SimPy co-simulator: rounds, events, channel process, runs, per-round callbacks."""

from wirelessfl.sim.callbacks import CallbackError, RoundCallback, RunInfo
from wirelessfl.sim.mlflow_log import MLflowCallback
from wirelessfl.sim.runner import Run, resume_run, run_scenario
from wirelessfl.sim.simulator import Simulator
from wirelessfl.sim.tensorboard_log import TensorBoardCallback

__all__ = [
    "CallbackError",
    "MLflowCallback",
    "RoundCallback",
    "Run",
    "RunInfo",
    "Simulator",
    "TensorBoardCallback",
    "resume_run",
    "run_scenario",
]
