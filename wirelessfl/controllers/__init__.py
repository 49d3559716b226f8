"""Controller registry: name -> class. A new controller is one file plus one line here."""

from __future__ import annotations

from wirelessfl.controllers.base import Controller, ControllerContext, Decision
from wirelessfl.controllers.fixed import Fixed
from wirelessfl.controllers.lyapunov import OnlineLyapunov
from wirelessfl.controllers.tsfa import TwoStage
from wirelessfl.errors import ConfigError

CONTROLLERS: dict[str, type[Controller]] = {
    "tsfa": TwoStage,
    "osfa": OnlineLyapunov,
    "fixed": Fixed,
}


def make_controller(ctx: ControllerContext) -> Controller:
    """Instantiate the controller named by ``ctx.settings.name``."""
    name = ctx.settings.name
    if name not in CONTROLLERS:
        raise ConfigError(
            f"controller.name: unknown controller {name!r} (accepted: {', '.join(CONTROLLERS)})"
        )
    return CONTROLLERS[name](ctx)


__all__ = ["CONTROLLERS", "Controller", "ControllerContext", "Decision", "make_controller"]
