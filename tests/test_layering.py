"""channels and optim work on a base install: they never import torch, simpy or wirelessfl."""

from __future__ import annotations

import subprocess
import sys

BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED}:
            raise ImportError(f"blocked import of {name}")
        return None
sys.meta_path.insert(0, Block())
"""


def _run(blocked: set[str], code: str) -> subprocess.CompletedProcess:
    script = BLOCKER.replace("{BLOCKED}", repr(blocked)) + code
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


def test_channels_needs_only_numpy_and_scipy():
    proc = _run(
        {"torch", "simpy", "wirelessfl", "optim", "cvxpy", "pandas", "peft", "transformers"},
        "import channels\n"
        "from channels import (RayleighFading, GaussMarkovRayleigh, path_gain, rate_bps,\n"
        "    upload_delay_s, ergodic_rate_rayleigh, compute_delay_s, Cell, noise_power_w)\n"
        "import numpy as np\n"
        "cell = Cell.from_mean_snr(mean_snr_db=10.0, n_clients=4, seed=0)\n"
        "print(cell.snr_block(0, 3)[0].shape)\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(3, 4)"


def test_optim_needs_no_torch_simpy_or_wirelessfl():
    proc = _run(
        {"torch", "simpy", "wirelessfl", "peft", "transformers"},
        "import numpy as np\n"
        "from optim import (BoundConstants, convergence_bound, offline_rank_search, solve_slot,\n"
        "    LyapunovController, equal_delay_bandwidth, minmax_bandwidth)\n"
        "c = BoundConstants(S=1.0, H=1.0, W=1.0, phi=0.1, G=1.0, eta=1e-3, E=5, r_max=64)\n"
        "s = solve_slot(queue=1.0, V=1e-4, snr=np.full(10, 10.0), rank=8, n_clients=100,\n"
        "    params_per_rank=1536, bits_per_value=32, bandwidth_hz=1e6, o_min=0.05,\n"
        "    constants=c, method='cvxpy')\n"
        "print(round(float(s.shares.sum()), 9))\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1.0"


def test_network_only_run_needs_no_torch(tmp_path):
    proc = _run(
        {"torch", "peft", "transformers"},
        "from wirelessfl.cli import main\n"
        f"raise SystemExit(main(['run', 'paper', '--set', 'rounds=20', '--out', "
        f"{str(tmp_path / 'r')!r}, '--quiet']))\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert "rounds         20" in proc.stdout
