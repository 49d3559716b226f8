"""``server``: synchronous rounds or an event-driven mode (``wirelessfl.registries.SERVER_MODES``,
``wirelessfl.servers``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from wirelessfl.config.cells import HierarchyConfig
from wirelessfl.config.limits import MAX_CLIENTS
from wirelessfl.config.schema import option, show
from wirelessfl.errors import ConfigError
from wirelessfl.registries import SERVER_MODES, STALENESS


def _read_by_mode(key: str) -> Callable[[Mapping[str, Any]], bool]:
    """The ``applies`` rule of the ``server`` key ``key``: the run's mode reads it (its
    ``READS``, ``wirelessfl.servers.base.ServerMode``)."""

    def reads(config: Mapping[str, Any]) -> bool:
        mode = (config.get("server") or {}).get("mode", "sync")
        return mode in SERVER_MODES and key in SERVER_MODES.load(mode).READS

    return reads


@dataclass
class ServerConfig:
    """How the server runs its rounds: synchronous rounds, or one of the event-driven modes
    (FedAsync, FedBuff, semi-synchronous; docs/simulator.md, "Asynchronous rounds")."""

    mode: str = option(
        "sync",
        choices=SERVER_MODES,
        doc="sync (rounds of K clients) | async (FedAsync: mix each arrival) | buffered "
        "(FedBuff: aggregate every buffer_size arrivals) | semi_sync (aggregate every "
        "deadline_s, late updates carried over) | a registered server mode",
    )
    concurrency: int | None = option(
        None,
        ge=1,
        le=MAX_CLIENTS,
        doc="clients training at once in the event-driven modes (null: n_scheduled)",
        applies=_read_by_mode("concurrency"),
    )
    dispatch: str = option(
        "random",
        choices=("random", "controller"),
        doc="who starts when a slot frees: random (uniform among the eligible clients: the "
        "idle ones, the available ones with selection.available_only) | controller (the "
        "eligible client of least per-dispatch drift-plus-penalty; tsfa, osfa)",
        applies=_read_by_mode("dispatch"),
    )
    alpha: float = option(
        0.6,
        gt=0.0,
        le=1.0,
        doc="async: FedAsync's mixing weight alpha",
        applies=_read_by_mode("alpha"),
    )
    staleness: str = option(
        "polynomial",
        choices=STALENESS,
        doc="s(tau) weighting a stale update: constant (1) | polynomial ((tau + 1)^-a; a = 0.5 "
        "is FedBuff's 1/sqrt(1 + tau)) | hinge (1 for tau <= b, else 1 / (a (tau - b) + 1)) "
        "| a registered staleness function",
        applies=_read_by_mode("staleness"),
    )
    staleness_a: float = option(
        0.5, ge=0.0, doc="a of the polynomial and hinge staleness functions"
    )
    staleness_b: float = option(4.0, ge=0.0, doc="b of the hinge staleness function")
    buffer_size: int = option(
        10,
        ge=1,
        doc="buffered: FedBuff's M, arrivals per aggregation",
        applies=_read_by_mode("buffer_size"),
    )
    server_lr: float = option(
        1.0,
        gt=0.0,
        doc="buffered and semi_sync: FedBuff's server learning rate eta_g",
        applies=_read_by_mode("server_lr"),
    )
    deadline_s: float | None = option(
        None,
        gt=0.0,
        doc="semi_sync: virtual time between aggregations (required there, refused elsewhere)",
    )
    hierarchy: HierarchyConfig = field(default_factory=HierarchyConfig)

    @property
    def event_driven(self) -> bool:
        """Whether the run is one of the event-driven modes (``wirelessfl.sim.async_engine``)."""
        return bool(SERVER_MODES.load(self.mode).EVENT_DRIVEN)

    def validate(self, prefix: str) -> None:
        reads = "deadline_s" in SERVER_MODES.load(self.mode).READS
        if reads != (self.deadline_s is not None):
            readers = [
                m for m in SERVER_MODES.names() if "deadline_s" in SERVER_MODES.load(m).READS
            ]
            raise ConfigError(
                f"{prefix}.deadline_s: {' and '.join(readers)} aggregates every deadline_s (and "
                f"only it reads it); mode is {self.mode!r}, deadline_s is {show(self.deadline_s)}"
            )
