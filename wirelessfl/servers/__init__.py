"""Server modes (``server.mode``, ``wirelessfl.registries.SERVER_MODES``) on one interface
(:mod:`wirelessfl.servers.base`) and the staleness functions
(:mod:`wirelessfl.servers.staleness`, ``registries.STALENESS``)."""

from __future__ import annotations

from typing import Any

from wirelessfl.servers.base import ServerMode

__all__ = ["ServerMode", "server_mode"]


def server_mode(scenario: Any) -> ServerMode:
    """The run's ``server.mode``, built from its ``server`` section and K."""
    from wirelessfl.registries import SERVER_MODES

    return SERVER_MODES.load(scenario.server.mode).from_scenario(scenario)
