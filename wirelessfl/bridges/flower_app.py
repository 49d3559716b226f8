"""Our simulator and federated algorithms as a Flower App, for ``flwr run``.

The app's ``pyproject.toml`` names the two components (``examples/flower_app/`` is one):

- :data:`serverapp`: runs the scenario of the run config
  (:mod:`~wirelessfl.bridges.flower_run_config`: ``scenario``, ``set``, ``out-dir``,
  ``timeout-s``) with :func:`~wirelessfl.bridges.flower_serverapp.run_on_grid`;
- :data:`clientapp`: :func:`~wirelessfl.bridges.flower_clientapp.client_app`, one per node,
  node k being client k (its ``partition-id``).

Flower imports this module in its own processes; it imports ``flwr`` at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flwr.serverapp import ServerApp

from wirelessfl.bridges.flower_clientapp import client_app
from wirelessfl.bridges.flower_run_config import app_settings
from wirelessfl.bridges.flower_serverapp import run_on_grid

if TYPE_CHECKING:
    from flwr.app import Context
    from flwr.serverapp import Grid

__all__ = ["clientapp", "serverapp"]

#: The ServerApp, ``serverapp = "wirelessfl.bridges.flower_app:serverapp"`` in the app's
#: ``[tool.flwr.app.components]``.
serverapp = ServerApp()
#: The ClientApp, ``clientapp = "wirelessfl.bridges.flower_app:clientapp"``.
clientapp = client_app()


@serverapp.main()
def main(grid: Grid, context: Context) -> None:
    """Run the run config's scenario into its ``out-dir`` on the federation's nodes."""
    settings = app_settings(context.run_config)
    run_on_grid(settings.scenario, settings.out_dir, grid, timeout_s=settings.timeout_s)
