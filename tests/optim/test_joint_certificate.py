"""The global certificate of the joint step's ratio (optim.joint_certificate, (J5)): on closed
forms whose minimum is known, and on the joint step against brute force over O (the step at
each fixed ratio of a fine grid)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from optim_instances import random_devices

from optim import solve_joint_step
from optim.joint_certificate import certify_ratio


def gamma(o, a: float = 0.05):
    return a * (1.0 - o) ** 2 / o**4


@pytest.mark.parametrize(
    "rest",
    [
        lambda o: 3.0 * o,  # smooth: J = V gamma + 3 O
        lambda o: 2.0 * math.floor(4.0 * o) / 4.0,  # a nondecreasing step function
        lambda o: 0.0,  # G constant: the least J is at O = 1
    ],
)
def test_the_bound_holds_and_closes_on_closed_forms(rest):
    v, rtol = 1.5, 1e-3
    found = certify_ratio(rest, gamma, v, [0.1, 1.0], rtol)
    assert found.evaluations < 200  # closed, not stopped by the limit
    dense = np.linspace(0.1, 1.0, 200_001)
    true_min = min(v * gamma(o) + rest(o) for o in dense)
    assert found.lower_bound <= true_min + 1e-12
    assert found.objective == pytest.approx(v * gamma(found.ratio) + rest(found.ratio))
    assert found.objective <= true_min + rtol * abs(true_min) + 1e-12
    assert found.gap <= rtol * max(abs(found.objective), 1e-300) + 1e-15
    assert found.gap == pytest.approx(found.objective - found.lower_bound)


def test_a_single_ratio_is_its_own_certificate():
    found = certify_ratio(lambda o: 2.0, gamma, 1.0, [1.0], 1e-9)
    assert (found.ratio, found.objective, found.gap, found.evaluations) == (1.0, 2.0, 0.0, 1)


def test_the_evaluation_limit_leaves_an_honest_gap():
    """Stopped after 8 evaluations, the bound is still a bound, just looser."""
    found = certify_ratio(lambda o: 3.0 * o, gamma, 1.5, [0.1, 1.0], 1e-12, max_evaluations=8)
    true_min = min(1.5 * gamma(o) + 3.0 * o for o in np.linspace(0.1, 1.0, 100_001))
    assert found.evaluations == 8 and found.gap > 0.0
    assert found.lower_bound <= true_min <= found.objective


def _instance(seed: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    k = 3
    per, fixed = rng.uniform(1e5, 5e5, k), rng.uniform(1e4, 1e5, k)
    kw = dict(fixed_bits=fixed, per_ratio_bits=per, **random_devices(rng, k))
    args = dict(
        queue_s=rng.uniform(0.5, 5),
        V=rng.uniform(0.1, 5),
        energy_queue_j=rng.uniform(0.0, 20.0, k),
        offset=0.0,
        a=10 ** rng.uniform(-3, -1),
        o_min=0.1,
    )
    return kw, args


def _brute_force_j(kw: dict, args: dict, ratios: np.ndarray) -> np.ndarray:
    """J(O) = V gamma(O) + G(O) at each O: G from the step at that fixed payload (the bits of
    O as fixed bits, no ratio knob, gamma = 0)."""
    values = []
    for o in ratios:
        fixed = dict(kw, fixed_bits=kw["fixed_bits"] + kw["per_ratio_bits"] * o, per_ratio_bits=0.0)
        rest = solve_joint_step(**dict(args, a=0.0), **fixed).objective
        values.append(args["V"] * gamma(o, args["a"]) + rest)
    return np.array(values)


@pytest.mark.parametrize("seed", [500, 501, 502])
def test_the_certified_step_against_brute_force_over_the_ratio(seed):
    kw, args = _instance(seed)
    plain = solve_joint_step(**args, **kw)
    assert math.isnan(plain.ratio_gap)
    certified = solve_joint_step(**args, **kw, ratio_rtol=1e-3)
    brute = _brute_force_j(kw, args, np.linspace(0.1, 1.0, 46))
    lower = certified.objective - certified.ratio_gap
    assert certified.ratio_gap <= 1e-3 * abs(certified.objective)
    assert lower <= brute.min() * (1 + 1e-9)  # the bound is below every ratio's value
    assert certified.objective <= brute.min() * (1 + 1e-6)
    assert certified.objective <= plain.objective * (1 + 1e-9)


def test_ratio_rtol_must_be_positive():
    kw, args = _instance(500)
    with pytest.raises(ValueError, match="ratio_rtol"):
        solve_joint_step(**args, **kw, ratio_rtol=0.0)
