"""The Lyapunov online step choosing the quantiser's bits b (``controller.bits_choices``),
against brute force written here from the closed forms (docs/solvers.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import small_scenario

from optim import BoundConstants, convergence_bound
from wirelessfl.errors import ConfigError
from wirelessfl.learners import make_learner
from wirelessfl.sim import run_scenario
from wirelessfl.sim.simulator import Simulator

V = 32
SHAPES = [[64, 64], [64, 32]]  # d + l = 128 and 96
SNR = np.array([3.0, 10.0, 30.0, 5.0, 12.0])
CHOICES = [2, 4, 8, 32]
CONSTANTS = {"constants.G": 400.0}  # the quantiser's term matters at this gradient bound


def _controller(**overrides):
    scenario = small_scenario(
        **{
            "learner.shape.layer_shapes": SHAPES,
            "controller.name": "osfa",
            "controller.rank": 4,
            "controller.bits_choices": CHOICES,
            **CONSTANTS,
            **overrides,
        }
    )
    ctl = Simulator(scenario, make_learner(scenario)).controller
    ctl.begin_round(0, np.array([0, 3, 7, 11, 19]))
    return ctl, scenario


def _q(bits: int, n: int) -> float:
    """min(n / (4 s^2), sqrt(n) / s), s = 2^(b-1) - 1; 0 unquantised (b = v)."""
    if bits >= V:
        return 0.0
    s = 2 ** (bits - 1) - 1
    return min(n / (4 * s * s), math.sqrt(n) / s)


def _penalty(constants: BoundConstants, rank: int, ratio, bits: int, k: int):
    """gamma of eq. (14) (``ratio`` a number or an array) plus S q eta^2 E^2 G^2 / (2 K)."""
    c = constants
    gamma = convergence_bound(
        rank=rank, sparsification=ratio, n_scheduled=k, n_clients=20, constants=c
    )
    n = rank * max(d + ell for d, ell in SHAPES)  # q at the largest layer, one scale per layer
    return gamma + c.S * _q(bits, n) * c.eta**2 * c.E**2 * c.G**2 / (2 * k)


@pytest.mark.parametrize("queue", [0.0, 0.01, 0.05, 2.0, 50.0])
def test_the_ratio_knob_chooses_b_and_o_as_brute_force_does(queue):
    ctl, scenario = _controller(**{"compression.sparsifier": "topk"})
    ctl.virtual_queue.value = queue
    decision = ctl.decide(SNR, np.zeros(5))
    constants, bw, k = ctl.ctx.constants, scenario.channel.bandwidth_hz, len(SNR)
    inv = float(np.sum(1.0 / np.log2(1.0 + SNR)))
    lora = 4 * sum(d + ell for d, ell in SHAPES)

    def objective(o: float, bits: int) -> float:  # P3's affine delay: b O lora + 32 per layer
        upload = bits * o * lora + (0 if bits >= V else 32 * len(SHAPES))
        return queue * upload * inv / bw + scenario.controller.V * _penalty(
            constants, 4, o, bits, k
        )

    grid = np.linspace(scenario.controller.o_min, 1.0, 20_001)
    best = min((float(np.min(objective(grid, b))), b) for b in CHOICES)
    chosen = objective(decision.sparsification, decision.bits)
    assert chosen <= best[0] * (1 + 1e-9) + 1e-12  # at least as good as the grid
    assert decision.bits == best[1]
    assert decision.bound == pytest.approx(
        _penalty(constants, 4, decision.sparsification, decision.bits, k), rel=1e-9
    )


def test_the_choice_moves_with_the_queue():
    picks = []
    for queue in (0.0, 50.0):
        ctl, _ = _controller(**{"compression.sparsifier": "topk"})
        ctl.virtual_queue.value = queue
        picks.append(ctl.decide(SNR, np.zeros(5)).bits)
    assert picks[0] == V and picks[1] < V  # no delay pressure: full precision; a long queue: less


@pytest.mark.parametrize("queue", [0.0, 0.3, 50.0])
def test_the_rank_knob_chooses_rank_and_b_as_brute_force_does(queue):
    ctl, scenario = _controller(**{"algorithm.name": "fedit"})
    ctl.virtual_queue.value = queue
    decision = ctl.decide(SNR, np.zeros(5))
    constants, bw, k = ctl.ctx.constants, scenario.channel.bandwidth_hz, len(SNR)
    inv = float(np.sum(1.0 / np.log2(1.0 + SNR)))
    head = 0  # the surrogate's shape has no head

    def objective(rank: int, bits: int) -> float:  # exact bits: dense, a scale per layer
        lora = rank * sum(d + ell for d, ell in SHAPES)
        upload = bits * lora + (0 if bits >= V else 32 * len(SHAPES)) + V * head
        return queue * upload * inv / bw + scenario.controller.V * _penalty(
            constants, rank, 1.0, bits, k
        )

    best = min(
        (objective(r, b), -r, -b) for r in range(1, 5) for b in CHOICES
    )  # ties: larger rank, then larger b
    assert (int(decision.ranks[0]), decision.bits) == (-best[1], -best[2])


def test_a_network_only_run_sends_the_chosen_b(tmp_path):
    over = {
        "learner.shape.layer_shapes": SHAPES,
        "controller.name": "osfa",
        "controller.rank": 4,
        "controller.bits_choices": CHOICES,
        "compression.sparsifier": "topk",
        "rounds": 6,
        **CONSTANTS,
    }
    run = run_scenario(small_scenario(**over), tmp_path / "r")
    rounds, clients = run.rounds, run.clients
    assert set(rounds["algo.quant_bits"]) <= set(map(float, CHOICES))
    for _, row in rounds.iterrows():  # each arrived client's bits by hand at (O^t, b^t)
        o, b = row["sparsification"], int(row["algo.quant_bits"])
        kept = [round(o * 4 * (d + ell)) for d, ell in SHAPES]
        by_hand = sum(b * n + (0 if b >= V else 32) for n in kept)
        sent = clients[(clients["round"] == row["round"]) & (clients["status"] == "arrived")]
        assert (sent["bits"] == by_hand).all()


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        ({"controller.bits_choices": [4, 12, 33]}, "each b is an integer in [2, 16] or payload"),
        ({"controller.bits_choices": []}, "give at least one b"),
        ({"controller.bits_choices": [4], "controller.name": "fixed"}, "does not choose b"),
        (
            {"controller.bits_choices": [4], "controller.radio": "joint"},
            "not by the joint step",
        ),
    ],
)
def test_bad_choices_are_one_line(overrides, line):
    with pytest.raises(ConfigError, match=line.replace("[", r"\[").replace("]", r"\]")):
        small_scenario(**overrides)


@pytest.mark.parametrize(
    ("algorithm", "line"),
    [
        ("fslora", "algorithm 'fslora''s penalty has no quantiser term"),
        ("floral", "controller.bits_choices: algorithm 'floral' cannot take a quantiser stage"),
    ],
)
def test_an_algorithm_whose_penalty_or_message_cannot_weigh_b_refuses_the_choice(
    algorithm, line, tmp_path
):
    over = {"algorithm.name": algorithm, "controller.bits_choices": [4, 32]}
    with pytest.raises(ConfigError, match=line):
        run_scenario(small_scenario(**over), tmp_path / "r")


@pytest.mark.usefixtures("one_torch_thread")
def test_a_real_run_quantises_at_the_chosen_b(tmp_path):
    pytest.importorskip("torch")
    from scenario_helpers import digits_scenario

    over = {
        "learner.trainer": "sequential",
        "rounds": 2,
        "controller.name": "osfa",
        "controller.rank": 4,
        "controller.bits_choices": [2, 32],
        "compression.sparsifier": "topk",
        "output.checkpoint_every": 0,
        **CONSTANTS,
    }
    run = run_scenario(digits_scenario(**over), tmp_path / "r")
    head = 64 * 10 + 10  # tiny_mlp's task head, dense at v bits
    for _, row in run.rounds.iterrows():
        o, b = row["sparsification"], int(row["algo.quant_bits"])
        kept = round(o * 4 * 128)  # fc1 and fc2: 64 -> 64 at rank 4
        by_hand = 2 * (b * kept + (0 if b >= V else 32)) + V * head
        sent = run.clients[(run.clients["round"] == row["round"])]
        sent = sent[sent["status"] == "arrived"]
        assert len(sent) and (sent["bits"] == by_hand).all()
    assert set(run.rounds["algo.quant_bits"]) <= {2.0, 32.0}
    error = run.rounds["algo.quant_rel_error"]
    assert ((run.rounds["algo.quant_bits"] == 32) == error.isna()).all()  # v: nothing quantised


def test_the_offline_stage_plans_the_rank_with_the_least_b_of_the_set():
    def rank(**over):
        scenario = small_scenario(
            **{"learner.shape.layer_shapes": SHAPES, "controller.d_th_s": 0.002, **over}
        )
        return Simulator(scenario, make_learner(scenario)).controller.rank

    unquantised, at_two = rank(), rank(**{"quantize.bits": 2})
    assert at_two > unquantised  # 2-bit uploads afford a larger rank within D_th
    assert rank(**{"controller.bits_choices": [2, 32]}) == at_two
    assert rank(**{"controller.bits_choices": [32]}) == unquantised
