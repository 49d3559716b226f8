"""``wirelessfl reproduce dp-minilm``: FedIT and FFA-LoRA on MiniLM / Rotten Tomatoes without DP
and under DP-SGD. The declaration (iid split, sequential trainer, fixed controller, no-DP
reference) and its noise multipliers against the epsilon they are documented to give
(about 26, 8 and 2 at delta 1e-5), from Opacus's accountant stepped here per device over
the schedule of a network-only run of the same scenario and seed."""

from __future__ import annotations

import collections

import pytest
from dp_study_helpers import SURROGATE, check_ffa_declaration, largest_epsilon

from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.study.reproductions import DP_SGD_SIGMAS_MINILM, REPRODUCTIONS

pytest.importorskip("opacus")

SPEC = REPRODUCTIONS["dp-minilm"]


def test_declaration():
    sc = load_scenario(SCENARIO_DIR / SPEC.scenario)
    assert (sc.learner.model, sc.learner.dataset) == ("minilm", "rotten_tomatoes")
    assert sc.learner.partition == "iid" and sc.learner.trainer == "sequential"
    assert sc.controller.name == "fixed"
    check_ffa_declaration(SPEC, DP_SGD_SIGMAS_MINILM)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_noise_multipliers_give_epsilon_about_26_8_and_2(tmp_path, seed):
    from wirelessfl.data.rotten_tomatoes import load_rotten_tomatoes
    from wirelessfl.sim.runner import Run

    sc = load_scenario(SCENARIO_DIR / SPEC.scenario, [f"seed={seed}", SURROGATE])
    result = Run(sc, tmp_path / "run").execute()
    arrived = result.clients[result.clients.status == "arrived"]
    rounds_sent = collections.Counter(arrived.client.tolist())
    real = load_scenario(SCENARIO_DIR / SPEC.scenario, [f"seed={seed}"])
    n_train = len(
        load_rotten_tomatoes(seed=seed, max_length=real.learner.dataset_options["max_length"]).train
    )
    q = real.learner.batch_size / (n_train // real.n_clients)  # the smallest iid share
    steps = [real.learner.local_steps * n for n in rounds_sent.values()]
    weak, eight, two = (
        largest_epsilon(sigma, q, steps, real.privacy.delta) for sigma in DP_SGD_SIGMAS_MINILM
    )
    assert 20.0 < weak < 32.0 and 7.0 < eight < 9.0 and 1.8 < two < 2.3
