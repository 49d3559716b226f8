"""Controllers: how the rank r, the sparsification O^t and the shares b_k^t are chosen.

Looked up by ``controller.name`` in ``wirelessfl.registries.CONTROLLERS``; a new controller is
one file with a :class:`Controller` subclass plus one line there.
"""

from __future__ import annotations

from wirelessfl.controllers.base import Controller, ControllerContext, Decision
from wirelessfl.registries import CONTROLLERS

__all__ = ["CONTROLLERS", "Controller", "ControllerContext", "Decision", "make_controller"]


def make_controller(ctx: ControllerContext) -> Controller:
    """Instantiate the controller named by ``ctx.settings.name``."""
    return CONTROLLERS.load(ctx.settings.name)(ctx)
