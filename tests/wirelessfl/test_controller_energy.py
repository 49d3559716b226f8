"""Energy budgets in the wirelessfl controllers: the per-device queues of the base Controller,
the price the Lyapunov controllers pass to optim, refusal by fixed/sketch, and resume."""

from __future__ import annotations

import json

import numpy as np
import pytest

from optim import BoundConstants, EnergyQueues, solve_slot
from wirelessfl.algorithms.soft.cost import SoftCost
from wirelessfl.config import scenario_from_dict
from wirelessfl.config.controller import controller_settings
from wirelessfl.controllers import ControllerContext, make_controller
from wirelessfl.controllers.fixed import Fixed
from wirelessfl.controllers.lyapunov import OnlineLyapunov
from wirelessfl.controllers.sketch import SketchRatio
from wirelessfl.controllers.tsfa import TwoStage
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ModelGeometry

N = 20
P_PER_RANK = 64 + 64 + 64 + 32  # sum of (d + l) over two adapted layers


def _cost() -> SoftCost:
    """SOFT's cost model of a 20-client scenario on two layers (64, 64) and (64, 32)."""
    scenario = scenario_from_dict({"n_clients": N, "n_scheduled": 5})
    geometry = ModelGeometry(((64, 64), (64, 32)), base_params=0, batch_size=16, seq_len=1)
    return SoftCost(scenario.strategy, scenario=scenario, geometry=geometry)


def _ctx(name: str, budget=None, **over) -> ControllerContext:
    """The context the simulator builds, for a 20-client cell at 10 dB mean SNR."""
    settings = controller_settings(
        **{"name": name, "V": 1.0e-4, "d_th_s": 0.5, "o_min": 0.05, "r_max": 16, "rank": 8, **over}
    )
    return ControllerContext(
        n_clients=N,
        n_scheduled=5,
        mean_snr=np.full(N, 10.0),
        params_per_rank=P_PER_RANK,
        bits_per_value=32,
        bandwidth_hz=1.0e6,
        constants=BoundConstants(r_max=16),
        settings=settings,
        energy_budget_j=None if budget is None else np.asarray(budget, dtype=float),
        cost=_cost(),
    )


SNR = np.array([3.0, 10.0, 30.0, 5.0, 12.0])
IDS = np.array([0, 3, 7, 11, 19])
POWER = np.array([0.1, 0.2, 0.2, 0.05, 0.3])


def test_support_flags():
    assert OnlineLyapunov.SUPPORTS_ENERGY_BUDGET and TwoStage.SUPPORTS_ENERGY_BUDGET
    assert not Fixed.SUPPORTS_ENERGY_BUDGET and not SketchRatio.SUPPORTS_ENERGY_BUDGET


@pytest.mark.parametrize("name", ["tsfa", "osfa", "fixed", "sketch"])
def test_without_a_budget_nothing_changes(name):
    ctl = make_controller(_ctx(name))
    assert ctl.energy_queues is None and ctl.energy_price_jw == 0.0
    before = ctl.decide(SNR, np.zeros(5))
    ctl.price_energy(IDS, POWER)  # no-ops
    ctl.observe_energy(np.ones(N))
    assert ctl.energy_price_jw == 0.0
    after = ctl.decide(SNR, np.zeros(5))
    assert after.sparsification == before.sparsification
    assert after.planned_delay_s == before.planned_delay_s
    assert "energy_queues" not in ctl.state_dict()


@pytest.mark.parametrize("name", ["osfa", "tsfa"])
def test_lyapunov_controllers_pass_the_price_to_the_solver(name):
    budget = np.full(N, 0.5)
    ctl = make_controller(_ctx(name, budget))
    assert isinstance(ctl.energy_queues, EnergyQueues)
    np.testing.assert_array_equal(ctl.energy_queues.value, np.zeros(N))
    ctl.observe(0.6)  # Q > 0: the delay queue presses too
    free = ctl.decide(SNR, np.zeros(5))
    energy = np.zeros(N)
    energy[IDS] = [3.0, 2.0, 1.0, 4.0, 2.5]
    ctl.observe_energy(energy)  # Z = max(E - 0.5, 0)
    np.testing.assert_allclose(ctl.energy_queues.value[IDS], [2.5, 1.5, 0.5, 3.5, 2.0])
    ctl.price_energy(IDS, POWER)
    price = float(np.dot([2.5, 1.5, 0.5, 3.5, 2.0], POWER))
    assert ctl.energy_price_jw == pytest.approx(price, rel=1e-15)
    priced = ctl.decide(SNR, np.zeros(5))
    s, c = ctl.ctx.settings, ctl.ctx
    ref = solve_slot(
        queue=ctl.queue,
        V=s.V,
        snr=SNR,
        rank=ctl.rank,
        n_clients=N,
        params_per_rank=c.params_per_rank,
        bits_per_value=c.bits_per_value,
        bandwidth_hz=c.bandwidth_hz,
        o_min=s.o_min,
        constants=c.constants,
        energy_price_jw=ctl.energy_price_jw,
    )
    assert priced.sparsification == ref.sparsification
    assert priced.sparsification < free.sparsification  # energy pressure: upload less
    ctl.observe_energy(np.zeros(N))  # the queues changed: the stored price is stale
    assert ctl.energy_price_jw == 0.0


@pytest.mark.parametrize("name", ["fixed", "sketch"])
def test_controllers_that_ignore_energy_refuse_a_budget(name):
    with pytest.raises(ConfigError, match=f"controller.name: {name} does not support") as err:
        make_controller(_ctx(name, np.ones(N)))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("budget", "match"),
    [
        (np.ones(N - 1), r"one value per client \(20\) expected"),
        (np.r_[np.ones(N - 1), 0.0], "energy budget: budget_j must hold finite values > 0"),
    ],
)
def test_bad_budget_is_one_line(budget, match):
    with pytest.raises(ConfigError, match=match) as err:
        make_controller(_ctx("osfa", budget))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["osfa", "tsfa"])
def test_resume_restores_the_energy_queues(name):
    rng = np.random.default_rng(0)
    budget = rng.uniform(0.2, 1.0, size=N)
    a = make_controller(_ctx(name, budget))
    for _ in range(5):
        a.price_energy(IDS, POWER)
        a.decide(SNR, np.zeros(5))
        a.observe(0.7)
        e = np.zeros(N)
        e[IDS] = rng.uniform(0.0, 2.0, size=IDS.size)
        a.observe_energy(e)
    state = json.loads(json.dumps(a.state_dict()))
    b = make_controller(_ctx(name, budget))
    b.load_state_dict(state)
    np.testing.assert_array_equal(b.energy_queues.value, a.energy_queues.value)
    assert b.queue == a.queue
    a.price_energy(IDS, POWER)
    b.price_energy(IDS, POWER)
    assert b.decide(SNR, np.zeros(5)).sparsification == a.decide(SNR, np.zeros(5)).sparsification
    with pytest.raises(ConfigError, match="checkpoint has energy queues but this run has no"):
        make_controller(_ctx(name)).load_state_dict(state)
    with pytest.raises(ConfigError, match="this run has an energy budget but the checkpoint"):
        make_controller(_ctx(name, budget)).load_state_dict({"queue": 0.0})
    with pytest.raises(ConfigError, match="resume: energy queues: state"):
        make_controller(_ctx(name, budget + 1.0)).load_state_dict(state)


def test_closed_loop_through_the_controller_keeps_the_budget():
    """osfa over 1500 rounds, 5 of 20 devices a round, each scheduled device spending
    E_comp + P_k D^t: every device's average energy stays within its budget + Z_k^T / T, and
    Z_k^T / T is small: every Z_k^T <= 1 J, so the slack is <= 10 % of the budget (a few mJ
    a round) after T rounds and shrinks as 1/T. V is small because these energies are mJ:
    the Lyapunov function weighs 1 J of queued energy like 1 s of queued delay."""
    rng = np.random.default_rng(4)
    power = rng.uniform(0.1, 0.3, size=N)
    e_comp = 0.01
    # D^t(O) is ~0.1 O s with these SNRs; the budget pays 0.02 s of upload per scheduled
    # round, roughly O = 0.2 on average (feasible: O_min = 0.05)
    budget = 5 / N * (e_comp + power * 0.02)
    ctl = make_controller(_ctx("osfa", budget, d_th_s=100.0, V=1e-9))
    T = 1500
    spent = np.zeros((T, N))
    for t in range(T):
        ids = rng.choice(N, size=5, replace=False)
        snr = 10.0 * rng.exponential(size=5) + 0.5
        ctl.price_energy(ids, power[ids])
        d = ctl.decide(snr, np.zeros(5))
        ctl.observe(d.planned_delay_s)
        spent[t, ids] = e_comp + power[ids] * d.planned_delay_s
        ctl.observe_energy(spent[t])
    z = ctl.energy_queues.value
    mean = spent.mean(axis=0)
    assert np.all(mean <= budget + z / T + 1e-12)
    assert np.all(z / T <= 0.1 * budget) and z.max() <= 1.0


@pytest.mark.parametrize("weight", [1.0, 100.0])
def test_the_energy_weight_scales_the_price_not_the_queues(weight):
    """(E3): the step prices omega Z_k; the queues stay in J by (E1)."""
    ctl = make_controller(_ctx("tsfa", np.full(N, 0.5), energy_weight=weight))
    energy = np.zeros(N)
    energy[IDS] = [3.0, 2.0, 1.0, 4.0, 2.5]
    ctl.observe_energy(energy)
    z_j = np.array([2.5, 1.5, 0.5, 3.5, 2.0])  # max(E - 0.5, 0), whatever omega
    np.testing.assert_allclose(ctl.energy_queues.value[IDS], z_j)
    ctl.price_energy(IDS, POWER)
    assert ctl.energy_price_jw == pytest.approx(weight * float(np.dot(z_j, POWER)), rel=1e-15)
    np.testing.assert_allclose(ctl.weighted_energy_queues(IDS), weight * z_j)


@pytest.mark.parametrize(("weight", "price"), [(1.0, 0.0), (1.0, 0.01), (100.0, 2.0)])
def test_the_energy_price_adds_mu_to_every_devices_price_per_joule(weight, price):
    """controller.energy_price: each scheduled device's energy costs omega Z_k + mu per J, so the
    P3 price is sum_k (omega Z_k + mu) P_k; the queues of (E1) do not see mu."""
    ctl = make_controller(_ctx("osfa", np.full(N, 0.5), energy_weight=weight, energy_price=price))
    energy = np.zeros(N)
    energy[IDS] = [3.0, 0.2, 1.0, 0.0, 2.5]
    ctl.observe_energy(energy)
    z_j = np.array([2.5, 0.0, 0.5, 0.0, 2.0])  # max(E - 0.5, 0)
    np.testing.assert_allclose(ctl.energy_queues.value[IDS], z_j)
    ctl.price_energy(IDS, POWER)
    hand = sum((weight * z + price) * p for z, p in zip(z_j, POWER, strict=True))
    assert ctl.energy_price_jw == pytest.approx(hand, rel=1e-14)
    np.testing.assert_allclose(ctl.weighted_energy_queues(IDS), weight * z_j + price)
