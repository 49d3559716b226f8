"""Shared fixtures: small network-only scenarios that run in well under a second."""

from __future__ import annotations

import pytest
from scenario_helpers import small_scenario


@pytest.fixture
def make_scenario():
    return small_scenario
