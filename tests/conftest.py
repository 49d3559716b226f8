"""Fixtures shared by every test folder."""

from __future__ import annotations

import pytest


@pytest.fixture
def one_torch_thread():
    """Torch on one thread for the test (steadier on a shared CPU), restored afterwards."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
