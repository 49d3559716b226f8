"""The compiled kernel of the joint solvers (optim/joint_kernel.py): numba loads only when a
solver that needs it runs, and its Lambert W against the defining equation and scipy's."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np

PROGRAM = """
import json, sys
import optim, wirelessfl
import optim.dispatch_radio, optim.energy_min, optim.joint, optim.joint_cvxpy
import wirelessfl.controllers.joint_radio
loaded = "numba" in sys.modules
from optim import solve_energy_min
solve_energy_min(deadline_s=1.0, bits=1e4, cycles=1e8, snr_per_w=1e3, f_min_hz=1e8,
                 f_max_hz=1e9, kappa=1e-28, p_max_w=0.2, bandwidth_hz=1e6)
print(json.dumps({"on_import": loaded, "after_a_solve": "numba" in sys.modules}))
"""


def test_importing_optim_and_wirelessfl_does_not_load_numba():
    """The GPU machine has no numba: only a solver that decides power or clock loads it."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"on_import": False, "after_a_solve": True}


def test_lambert_w_solves_its_equation_on_both_real_branches():
    """w e^w = x to rounding, W_0 >= -1 >= W_{-1}; against scipy's away from the branch point
    (next to it scipy's W_{-1} errs by up to 1e-4 relative, the defining equation decides)."""
    from scipy.special import lambertw

    from optim import joint_kernel

    rng = np.random.default_rng(0)
    x0 = np.concatenate(
        [-1 / math.e + 10 ** rng.uniform(-15, -0.5, 300), 10 ** rng.uniform(-300, 300, 300)]
    )
    c = np.concatenate([rng.uniform(1e-6, 0.99, 300), 1 - 10 ** rng.uniform(-7, -2, 100)])
    x1 = -c * np.exp(-c)  # in [-1/e, 0): W_{-1} = -c' with c' e^{-c'} = c e^{-c}, c' > 1
    for branch, xs in ((0, x0), (-1, x1)):
        fn = joint_kernel.lambertw0 if branch == 0 else joint_kernel.lambertw_m1
        w = np.array([fn(float(x)) for x in xs])
        assert np.all(w >= -1.0) if branch == 0 else np.all(w <= -1.0)
        # the residual of w e^w = x, relative to the rounding of its terms near w = -1
        residual = np.abs(w * np.exp(w) - xs) / np.maximum(np.abs(xs), 1e-300)
        assert residual.max() < 1e-13, (branch, residual.max())
        far = np.abs(xs + 1 / math.e) > 1e-3
        expected = lambertw(xs[far], branch).real
        assert np.allclose(w[far], expected, rtol=1e-14, atol=0.0)
    assert joint_kernel.lambertw0(0.0) == 0.0
    assert math.isclose(joint_kernel.lambertw0(math.e), 1.0, rel_tol=1e-15)
    assert math.isclose(joint_kernel.lambertw_m1(-2.0 * math.exp(-2.0)), -2.0, rel_tol=1e-15)
    assert math.isnan(joint_kernel.lambertw0(-0.5)) and math.isnan(joint_kernel.lambertw_m1(0.1))
