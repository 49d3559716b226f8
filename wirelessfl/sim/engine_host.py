"""What the event-driven engine (:mod:`wirelessfl.sim.async_engine`) reads of the simulator
that owns it: a typed, public interface (:class:`EngineHost`), so the engine depends on these
members alone and a check can see it (``wirelessfl.sim.simulator.Simulator`` satisfies it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import simpy

    from channels.availability import AvailabilityModel
    from channels.energy import ComputeEnergyModel
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.controllers.base import Controller
    from wirelessfl.learners.base import Learner
    from wirelessfl.sim.channel_process import ChannelProcess
    from wirelessfl.uplinks.base import Uplink

__all__ = ["EngineHost"]


class EngineHost(Protocol):
    """The run's scenario, learner, controller, uplink, clock, channel and devices, and the
    simulator's checks the engine shares (shapes over the N clients)."""

    scenario: Scenario
    learner: Learner
    controller: Controller
    uplink: Uplink
    env: simpy.Environment
    channel: ChannelProcess
    availability: AvailabilityModel
    flops_per_s: np.ndarray  # (N,) [FLOP/s]
    cpu_hz_max: np.ndarray | None  # (N,) f_max [Hz] (devices.energy.model: cmos), else None
    client_class: list[str] | None  # (N,) device class names, or None
    compute_energy: ComputeEnergyModel
    rank: int
    metric_columns: dict[str, str]

    def compute_estimate(self, clients: np.ndarray) -> np.ndarray:
        """(m,) compute times [s] the server expects of the (m,) ``clients``."""
        ...

    def check_metrics(self, t: int, metrics: dict[str, float], n_arrived: int) -> None:
        """A one-line ``SimulationError`` for a non-finite measured metric of aggregation t."""
        ...

    def checked_evaluation(self, round_index: int, when: str, kept: str) -> dict[str, float]:
        """The learner's held-out evaluation, checked finite."""
        ...

    def evaluates_after(self, t: int) -> bool:
        """Whether aggregation ``t`` ends with an evaluation."""
        ...
