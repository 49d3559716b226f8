"""An optional MLflow callback: the scenario as parameters, every numeric column as metrics.

``mlflow`` comes with the ``track`` extra (``pip install 'wirelessfl[track]'``, mlflow-skinny; or
``pip install mlflow``); it is imported when the callback is made, so a missing package stops the
run before it starts, with one line.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from wirelessfl.config.schema import to_dict
from wirelessfl.errors import UserError
from wirelessfl.sim.callbacks import RoundCallback, RunInfo, numeric_cells

#: MLflow refuses longer parameter values
PARAM_LIMIT = 6000


class MLflowCallback(RoundCallback):
    """Log a run to MLflow: its scenario as parameters (dotted keys), each round's numeric
    ``rounds.csv`` cells as metrics (step = round; ``NaN`` cells left out) and ``config.yaml``
    and ``rounds.csv`` as artifacts at the end.

    Args:
        tracking_uri: where MLflow stores runs (None: MLflow's default or ``MLFLOW_TRACKING_URI``).
        experiment: the experiment's name (None: MLflow's default one).
        run_name: the MLflow run's name (None: the scenario's ``name``).

    An MLflow run already active is logged into and left open; otherwise the callback starts
    one and ends it however the wirelessfl run ends: ``FINISHED`` after the last round (with the
    artifacts), ``FAILED`` when the run stops before it (a numerical fault, a callback error,
    Ctrl-C), with ``config.yaml`` and the rows written so far as artifacts. A resumed run
    starts a new MLflow run that holds the rounds run after the resume.
    """

    def __init__(
        self,
        tracking_uri: str | None = None,
        experiment: str | None = None,
        run_name: str | None = None,
    ):
        if find_spec("mlflow") is None:
            raise UserError(
                "MLflowCallback: needs the mlflow package; install it with: pip install "
                "'wirelessfl[track]' (or pip install mlflow)"
            )
        import mlflow

        self.mlflow = mlflow
        self.tracking_uri, self.experiment, self.run_name = tracking_uri, experiment, run_name
        self._started = False
        self._out = None
        self._last_round = -1
        self._rounds = 0

    def on_run_start(self, info: RunInfo) -> None:
        mlflow = self.mlflow
        if self.tracking_uri is not None:
            mlflow.set_tracking_uri(self.tracking_uri)
        if self.experiment is not None:
            mlflow.set_experiment(self.experiment)
        if mlflow.active_run() is None:
            mlflow.start_run(run_name=self.run_name or info.scenario.name)
            self._started = True
        self._out = info.out
        self._rounds = info.scenario.rounds
        mlflow.log_params(
            {key: str(value)[:PARAM_LIMIT] for key, value in _flat(to_dict(info.scenario))}
        )
        mlflow.set_tags(
            {"wirelessfl.out": str(info.out), "wirelessfl.start_round": info.start_round}
        )

    def on_round_end(self, round_index: int, row: dict[str, Any]) -> None:
        self.mlflow.log_metrics(numeric_cells(row), step=round_index)
        self._last_round = round_index

    def close(self) -> None:
        """The rounds stopped: a run stopped before its last round ends its MLflow run FAILED
        (a finished one is ended by ``on_run_end``, which follows)."""
        if self._started and self._last_round < self._rounds - 1:
            self._log_artifacts()
            self.mlflow.end_run(status="FAILED")
            self._started = False

    def on_run_end(self, result: Any) -> None:
        self._log_artifacts()
        if self._started:
            self.mlflow.end_run()
            self._started = False

    def _log_artifacts(self) -> None:
        for name in ("config.yaml", "rounds.csv"):
            if (self._out / name).is_file():
                self.mlflow.log_artifact(str(self._out / name))


def _flat(data: dict, prefix: str = ""):
    """(dotted key, value) for every leaf of a nested mapping."""
    for key, value in data.items():
        if isinstance(value, dict) and value:
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value
