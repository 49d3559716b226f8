"""``learner.kind: flower`` without flwr installed (blocked as if missing): one line naming the
extra that installs it, exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys

BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'flwr':
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
sys.meta_path.insert(0, Block())
from wirelessfl.cli import main
sys.exit(main(sys.argv[1:]))
"""

SCENARIO = """
n_clients: 2
n_scheduled: 2
rounds: 1
controller: {name: fixed}
learner: {kind: flower, client_fn: "math:sqrt"}
"""


def test_missing_flwr_names_the_scale_extra(tmp_path):
    (tmp_path / "flower.yaml").write_text(SCENARIO)
    argv = ["run", "flower.yaml", "--out", str(tmp_path / "r"), "--quiet"]
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "wirelessfl: error: learner.kind: 'flower' needs flwr: pip install -e '.[scale]' "
        "(flwr[simulation])"
    ]
