"""Errors a user can cause: shown as one line by the CLI, never as a traceback."""


class UserError(ValueError):
    """A mistake in what the user asked for (a scenario key, a path, a name)."""


class ConfigError(UserError):
    """A scenario value that fails validation; the message names the key and the accepted range."""


class SimulationError(RuntimeError):
    """A run that cannot continue (non-finite loss, update or draw); state on disk is intact."""
