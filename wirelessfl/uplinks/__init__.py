"""Uplinks: one module per ``channel.uplink`` on one interface (:mod:`wirelessfl.uplinks.base`),
listed in ``wirelessfl.registries.UPLINKS``."""

from __future__ import annotations

from typing import Any

from wirelessfl.uplinks.base import Uplink, UplinkRound

__all__ = ["Uplink", "UplinkRound", "build_uplink", "start_uplink"]


def build_uplink(scenario: Any) -> Uplink:
    """The run's uplink (``channel.uplink``, from ``registries.UPLINKS``), before the controller
    (which may ask it for :meth:`~Uplink.plan_round`); :func:`start_uplink` checks it against
    the built controller and learner."""
    from wirelessfl.registries import UPLINKS

    return UPLINKS.load(scenario.channel.uplink).from_scenario(scenario)


def start_uplink(uplink: Uplink, scenario: Any, controller: Any, learner: Any) -> Uplink:
    """``uplink`` checked against the run's controller and learner (:meth:`Uplink.check_run`)
    and started for its N devices."""
    uplink.check_run(controller, learner)
    uplink.start(scenario.n_clients)
    return uplink
