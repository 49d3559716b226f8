"""Uplinks: one module per ``channel.uplink`` on one interface (:mod:`wirelessfl.uplinks.base`),
listed in ``wirelessfl.registries.UPLINKS``."""

from __future__ import annotations

from typing import Any

from wirelessfl.uplinks.base import Uplink, UplinkRound

__all__ = ["Uplink", "UplinkRound", "make_uplink"]


def make_uplink(scenario: Any, controller: Any, learner: Any) -> Uplink:
    """The run's uplink (``channel.uplink``, from ``registries.UPLINKS``), checked against its
    built controller and learner (:meth:`Uplink.check_run`) and started for its N devices."""
    from wirelessfl.registries import UPLINKS

    uplink = UPLINKS.load(scenario.channel.uplink).from_scenario(scenario)
    uplink.check_run(controller, learner)
    uplink.start(scenario.n_clients)
    return uplink
