"""``wirelessfl reproduce dp-default``: FedIT and FFA-LoRA on the default task (EfficientNet-Lite0
/ MNIST-5k) without DP and under DP-SGD. The declaration (the default task with an iid split,
the fixed controller at one rank and the sequential trainer, the no-DP reference) and its noise
multipliers against the epsilon they are documented to give (about 8 and 2 at delta 1e-5), from
Opacus's accountant stepped here per device over the schedule of a network-only run of the same
scenario and seed."""

from __future__ import annotations

import collections

import pytest
from dp_study_helpers import SURROGATE, check_ffa_declaration, largest_epsilon

from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.study.reproductions import DP_SGD_SIGMAS_DEFAULT, REPRODUCTIONS

pytest.importorskip("opacus")

SPEC = REPRODUCTIONS["dp-default"]


def test_declaration():
    sc = load_scenario(SCENARIO_DIR / SPEC.scenario)
    default = load_scenario(SCENARIO_DIR / "default.yaml")
    learner, default_learner = sc.learner, default.learner
    assert (learner.model, learner.dataset) == (default_learner.model, default_learner.dataset)
    assert (sc.n_clients, sc.n_scheduled) == (default.n_clients, default.n_scheduled)
    assert (sc.controller.name, sc.controller.rank) == ("fixed", 8)  # one rank for both
    assert sc.learner.partition == "iid" and sc.learner.trainer == "sequential"
    check_ffa_declaration(SPEC, DP_SGD_SIGMAS_DEFAULT)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_the_noise_multipliers_give_epsilon_about_8_and_2(tmp_path, seed):
    from wirelessfl.data.mnist5k import load_mnist5k
    from wirelessfl.sim.runner import Run

    sc = load_scenario(SCENARIO_DIR / SPEC.scenario, [f"seed={seed}", SURROGATE])
    result = Run(sc, tmp_path / "run").execute()
    trained = collections.Counter(result.clients.client.tolist())  # every scheduled device trains
    real = load_scenario(SCENARIO_DIR / SPEC.scenario, [f"seed={seed}"])
    n_train = len(load_mnist5k(seed=seed).train)
    q = real.learner.batch_size / (n_train // real.n_clients)  # iid: 4,000 // 20 = 200 each
    steps = [real.learner.local_steps * n for n in trained.values()]
    eight, two = (
        largest_epsilon(sigma, q, steps, real.privacy.delta) for sigma in DP_SGD_SIGMAS_DEFAULT
    )
    assert 7.0 < eight < 9.0 and 1.8 < two < 2.3
