"""What every test folder shares: the process state a test may not leak, and when to skip.

* Offline Hugging Face: ``OFFLINE_ENV`` is set when pytest starts, before any test module
  imports ``huggingface_hub`` or ``transformers`` (both read it at import), and restored when
  it ends; a test that changes one of the variables gets it back after the test.
* torch threads: the count torch had when the tests started is restored after every test, so
  a test (or a module fixture) that calls ``torch.set_num_threads`` changes only itself;
  ``one_torch_thread`` runs a test on one thread (steadier timings on a shared CPU).
* Bytecode: the project's packages are compiled when pytest starts (``compileall``, only what
  changed), so the many ``wirelessfl`` processes the tests start read ``.pyc`` files even where
  ``PYTHONDONTWRITEBYTECODE`` keeps Python from writing them (0.3 s saved per process here).
* ``gpu``-marked tests are skipped where ``torch.cuda.is_available()`` is false.
* A test that needs an offline asset package that is not installed
  (``wirelessfl.data.assets.AssetNotFoundError``, in a fixture or in the test) is reported as
  skipped with the error's ``pip install`` line, not as an error; except under ``CI=true``,
  where ``.ci/run`` has installed every asset, so a missing one is a broken setup and fails.
"""

from __future__ import annotations

import compileall
import os
import sys
from pathlib import Path

import pytest

#: Environment variables that keep Hugging Face libraries off the network.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}

_saved_env: dict[str, str | None] = {}
_initial_threads: list[int] = []  # torch's thread count at the start (empty: torch not seen)


def _restore_env(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


#: the project's packages, compiled once per session (module docstring)
PACKAGES = ("wirelessfl", "channels", "optim")


def pytest_configure(config: pytest.Config) -> None:
    _saved_env.update({key: os.environ.get(key) for key in OFFLINE_ENV})
    os.environ.update(OFFLINE_ENV)
    root = Path(__file__).resolve().parents[1]
    for package in PACKAGES:
        compileall.compile_dir(root / package, quiet=2, workers=1)


def pytest_unconfigure(config: pytest.Config) -> None:
    _restore_env(_saved_env)


def _torch_threads() -> int | None:
    """torch's intra-op thread count, None while torch is not imported (nothing to guard)."""
    torch = sys.modules.get("torch")
    return None if torch is None else torch.get_num_threads()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record torch's thread count before any fixture can change it."""
    threads = _torch_threads()
    if threads is not None and not _initial_threads:
        _initial_threads.append(threads)


@pytest.fixture(autouse=True)
def _restore_process_state():
    """After each test: the offline variables and torch's thread count as they were."""
    env = {key: os.environ.get(key) for key in OFFLINE_ENV}
    threads = _torch_threads()
    if threads is not None and not _initial_threads:  # torch imported by an earlier test
        _initial_threads.append(threads)
    yield
    _restore_env(env)
    torch = sys.modules.get("torch")
    if torch is not None and _initial_threads and torch.get_num_threads() != _initial_threads[0]:
        torch.set_num_threads(_initial_threads[0])


@pytest.fixture
def one_torch_thread():
    """Torch on one thread for the test (steadier on a shared CPU); restored afterwards."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in gpu:
            item.add_marker(skip)


def _missing_asset(error: BaseException | None) -> BaseException | None:
    """The ``AssetNotFoundError`` that ``error`` is or was raised from, if any."""
    assets = sys.modules.get("wirelessfl.data.assets")
    seen = set()
    while assets is not None and error is not None and id(error) not in seen:
        if isinstance(error, assets.AssetNotFoundError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    missing = _missing_asset(call.excinfo.value if call.excinfo is not None else None)
    if missing is not None and report.failed and os.environ.get("CI") != "true":
        report.outcome = "skipped"
        line = str(missing).splitlines()[0]
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {line}")
    return report
