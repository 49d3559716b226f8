"""Results store: run folders with tidy per-round tables (see ``columns`` for every column)."""

from wirelessfl.results.columns import CLIENT_COLUMNS, EVENT_COLUMNS, ROUND_COLUMNS
from wirelessfl.results.store import RunResult, load

__all__ = ["CLIENT_COLUMNS", "EVENT_COLUMNS", "ROUND_COLUMNS", "RunResult", "load"]
