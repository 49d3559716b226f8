"""``output.tensorboard``: every numeric ``rounds.csv`` column as TensorBoard scalars.

One event per round holds a scalar per column, tagged with the column's name (``accuracy``,
``delay_s``, ``algo.sent_fraction``): the step is the round index, and the event's wall time is
the round's *virtual* end time ``t_end_s`` (seconds), so TensorBoard's "Relative" horizontal
axis plots each column against virtual time (its "Wall" axis shows that time as a date in
1970). Empty and ``NaN`` cells (rounds not evaluated) are left out; TensorBoard keeps scalars
as float32. Each process that runs rounds writes its own event file and starts it with a
restart marker at its first round, so readers that honour it (``EventAccumulator``) drop what
a killed process logged after its last checkpoint and a resumed run reads as one series.
Written with the ``tensorboard`` package's own event writer (what torch's ``SummaryWriter``
wraps), so no torch is needed.
"""

from __future__ import annotations

import time
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError
from wirelessfl.sim.callbacks import RoundCallback, RunInfo, numeric_cells

#: the folder inside the run folder that ``output.tensorboard: true`` writes
FOLDER = "tensorboard"
INSTALL = "pip install tensorboard (or the [track] extra: pip install -e '.[track]')"


def tensorboard_logdir(run_folder: Path, shared_dir: str | None) -> Path:
    """Where a run's event files go: ``<run>/tensorboard`` (``shared_dir`` None), else
    ``<shared_dir>/<run folder's name>``, a relative ``shared_dir`` taken from the run folder
    (so a resume from another working folder finds the same place)."""
    if shared_dir is None:
        return run_folder / FOLDER
    return run_folder / Path(shared_dir).expanduser() / run_folder.resolve().name


class TensorBoardCallback(RoundCallback):
    """Write each round's numeric columns to an event file in ``logdir``.

    Raises ``UserError`` (one line naming ``output.tensorboard`` and the install command) when
    the ``tensorboard`` package is missing.
    """

    def __init__(self, logdir: str | Path):
        if find_spec("tensorboard") is None:
            raise UserError(
                f"output.tensorboard: needs the tensorboard package; install it with: {INSTALL}"
            )
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.logdir = Path(logdir)
        self._event, self._summary, self._writer_class = event_pb2, summary_pb2, EventFileWriter
        self._writer = None

    def on_run_start(self, info: RunInfo) -> None:
        self._writer = self._writer_class(str(self.logdir))
        start = self._event.SessionLog(status=self._event.SessionLog.START)
        self._writer.add_event(
            self._event.Event(wall_time=time.time(), step=info.start_round, session_log=start)
        )

    def on_round_end(self, round_index: int, row: dict[str, Any]) -> None:
        values = [
            self._summary.Summary.Value(tag=column, simple_value=value)
            for column, value in numeric_cells(row).items()
        ]
        event = self._event.Event(
            wall_time=float(row["t_end_s"]),
            step=round_index,
            summary=self._summary.Summary(value=values),
        )
        self._writer.add_event(event)
        self._writer.flush()  # a run can be watched as it goes, and a kill loses nothing logged

    def close(self) -> None:
        """Flush and close the event file (safe to call again)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
