"""H2Tune (Guo et al., arXiv 2507.22633) and its baselines LOCAL, FLLM and HetLoRA on clients
with different base models and tasks, through the real simulator on tiny random-init BERTs,
against independent computations: the server's R_g as the unweighted mean of the clients'
aligned stacks (eq. (4) written out as loops), the bits of R_g per round, the density of
Phi_k, the per-model compute, one model object per base model with per-task heads, LOCAL's
isolation, FLLM's and HetLoRA's FedAvg updates by hand, the one-line configuration errors,
``--resume``, and the personalised evaluation by hand."""

from __future__ import annotations

import copy
import math

import pandas as pd
import pytest
from scenario_helpers import interrupt_at

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch.nn.functional as F  # noqa: E402

from wirelessfl.config import scenario_from_dict  # noqa: E402
from wirelessfl.errors import ConfigError  # noqa: E402
from wirelessfl.plans import ClientPlan  # noqa: E402
from wirelessfl.sim import Run  # noqa: E402

pytestmark = [pytest.mark.train]

# The working smoke scenario of H2Tune (two MiniLM/BERT groups), as a dict; the tests below
# shrink it (random-init BERTs of 2-3 blocks, 16 tokens, a few dozen rows).
SMOKE = {
    "name": "h2tune_smoke",
    "seed": 0,
    "n_clients": 4,
    "n_scheduled": 4,
    "rounds": 2,
    "eval_every": 1,
    "channel": {"bandwidth_hz": 10.0e6, "mean_snr_db": 10.0, "downlink_rate_bps": 50.0e6},
    "devices": {"kind": "fixed", "flops_per_s": 1.0e11},
    "controller": {"name": "fixed", "rank": 4, "sparsification": 1.0, "r_max": 4, "d_th_s": 1.0},
    "algorithm": {"name": "h2tune"},
    "strategy": {
        "global_rank": 4,
        "groups": [
            {
                "clients": 2,
                "model": "minilm",
                "model_options": {"n_layers": 2},
                "dataset": "rotten_tomatoes",
                "dataset_options": {"max_train": 64, "max_test": 32, "max_length": 32},
                "rank": 2,
            },
            {
                "clients": 2,
                "model": "bert_random",
                "model_options": {"n_layers": 3, "hidden": 64, "heads": 2},
                "dataset": "chatterbot_topic",
                "dataset_options": {"max_train": 64, "max_test": 32, "max_length": 32},
                "rank": 4,
            },
        ],
    },
    "learner": {
        "kind": "lora",
        "model": "minilm",
        "dataset": "rotten_tomatoes",
        "dataset_options": {"max_train": 32, "max_test": 16, "max_length": 16},
        "local_unit": "steps",
        "local_steps": 3,
        "batch_size": 8,
        "optimizer": "adam",
        "lr": 1.0e-3,
    },
    "output": {"events": False},
}

R_G = 4  # strategy.global_rank
SMALL = {"n_layers": 2, "hidden": 32, "heads": 2}  # 2 blocks, width 32
LARGE = {"n_layers": 3, "hidden": 64, "heads": 2}  # 3 blocks, width 64
RT_CLASSES, CB_CLASSES = 2, 21  # rotten_tomatoes, chatterbot_topic


def _group(clients, model_options, dataset, rank, *, max_train=32, model="bert_random", **extra):
    return {
        "clients": clients,
        "model": model,
        "model_options": dict(model_options),
        "dataset": dataset,
        "dataset_options": {"max_train": max_train, "max_test": 16, "max_length": 16},
        "rank": rank,
        **extra,
    }


# The H2Tune run most tests share: the smaller model on Rotten Tomatoes (r_k 2, 24 rows per
# client), the deeper, wider one on chatterbot topics (r_k 3, 16 rows per client): unequal N^k,
# so a data-weighted mean would differ from H2Tune's unweighted one.
H2_GROUPS = [
    _group(2, SMALL, "rotten_tomatoes", 2, max_train=48),
    _group(2, LARGE, "chatterbot_topic", 3, max_train=32),
]


def _scenario(algorithm, groups, *, rounds=1, strategy=None, n_clients=None, **overrides):
    """SMOKE with ``algorithm``, ``groups`` and tiny settings; ``strategy`` keys merged (H2Tune
    gets global_rank 4), dotted ``overrides``."""
    data = copy.deepcopy(SMOKE)
    n = sum(g["clients"] for g in groups) if n_clients is None else n_clients
    data.update(name=f"test_{algorithm}", rounds=rounds, n_clients=n, n_scheduled=n)
    data["algorithm"] = {"name": algorithm}
    own = {"global_rank": R_G} if algorithm == "h2tune" else {}
    data["strategy"] = {**own, "groups": copy.deepcopy(groups), **(strategy or {})}
    # the learner section only sets the local training; a cheap text task for its runtime
    data["learner"]["dataset"] = "chatterbot_topic"
    for key, value in overrides.items():
        node, parts = data, key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return scenario_from_dict(data)


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _snapshot(run: Run) -> dict:
    return copy.deepcopy(run.learner.private.state_dict())


def _assert_same_private(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for client in a:
        assert sorted(a[client]) == sorted(b[client]), client
        for name in a[client]:
            assert torch.equal(a[client][name], b[client][name]), (client, name)


class Recorded:
    """A run executed with every aggregation recorded: the global state before it, the
    arrived messages, every client's private state at that moment (just trained)."""

    def __init__(self, run: Run):
        self.run = run
        self.before: list[dict] = []
        self.messages: list[dict] = []
        self.private: list[dict] = []
        algorithm = run.learner.algorithm
        original = algorithm.aggregate

        def aggregate(global_state, messages, plans, round_plan):
            self.before.append({n: v.clone() for n, v in global_state.items()})
            self.messages.append(dict(messages))
            self.private.append(_snapshot(run))
            return original(global_state, messages, plans, round_plan)

        algorithm.aggregate = aggregate
        self.rounds = run.execute().rounds

    @property
    def algorithm(self):
        return self.run.learner.algorithm


@pytest.fixture(scope="module")
def h2_scenario():
    return _scenario("h2tune", H2_GROUPS, rounds=2, **{"output.checkpoint_every": 1})


@pytest.fixture(scope="module")
def h2(h2_scenario, tmp_path_factory):
    return Recorded(Run(h2_scenario, tmp_path_factory.mktemp("h2") / "run"))


# ---- 1. H2Tune's aggregation by hand -------------------------------------------------------------
def _to_global_by_hand(r_local: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
    """Eq. (4): R[m] = sum_l Omega[l, m] R_k[l], loop by loop, in float64."""
    n_local, n_global = omega.shape
    assert r_local.shape[0] == n_local
    out = torch.zeros(n_global, *r_local.shape[1:], dtype=torch.float64)
    for m in range(n_global):
        for layer in range(n_local):
            out[m] += float(omega[layer, m]) * r_local[layer].double()
    return out


def test_r_global_is_the_unweighted_mean_of_the_aligned_stacks(h2):
    algorithm, n = h2.algorithm, 4
    assert (h2.rounds["n_arrived"] == n).all()
    sizes = algorithm.clients.sizes
    assert sizes.tolist() == [24.0, 24.0, 16.0, 16.0]  # 48 and 32 rows, two clients each
    expected = []
    for t, private in enumerate(h2.private):
        aligned = []
        for c in range(n):
            values = private[str(c)]
            aligned.append(
                _to_global_by_hand(algorithm.phi(c).cpu() * values["R"], values["omega"])
            )
            # what client c uploaded is exactly that stack
            sent = h2.messages[t][c].shared
            assert set(sent) == {"R_aligned"}
            torch.testing.assert_close(
                sent["R_aligned"].double(), aligned[-1], rtol=1e-5, atol=1e-9
            )
        mean = sum(aligned) / n
        expected.append(mean)
        weighted = sum(float(sizes[c]) * aligned[c] for c in range(n)) / float(sizes.sum())
        assert float((weighted - mean).abs().max()) > 1e-6  # unweighted is a real choice here
    # the global state after round t is the next round's starting one; after the last, the final
    torch.testing.assert_close(h2.before[1]["R_global"].double(), expected[0], rtol=1e-5, atol=1e-9)
    final = h2.run.learner.global_state["R_global"]
    assert tuple(final.shape) == (3, R_G, R_G)  # L_g = the deepest model's 3 blocks
    assert float(final.abs().max()) > 1e-5  # R did train
    torch.testing.assert_close(final.double(), expected[1], rtol=1e-5, atol=1e-9)
    # and the final private state (the run's) gives it directly
    by_hand = (
        sum(
            _to_global_by_hand(
                algorithm.phi(c).cpu() * h2.run.learner.private.get(c)["R"].cpu(),
                h2.run.learner.private.get(c)["omega"].cpu(),
            )
            for c in range(n)
        )
        / n
    )
    torch.testing.assert_close(final.double(), by_hand, rtol=1e-5, atol=1e-9)
    # the metrics of the last round
    last = h2.rounds.iloc[-1]
    assert float(last["algo.r_global_norm"]) == pytest.approx(
        float(torch.linalg.norm(expected[1])), rel=1e-5
    )
    drifts = []
    for c in range(n):
        omega = h2.run.learner.private.get(c)["omega"].double()
        eye = torch.eye(omega.shape[0], dtype=torch.float64)
        drifts.append(float(torch.linalg.norm(omega @ omega.T - eye)))
    assert float(last["algo.alignment_drift"]) == pytest.approx(sum(drifts) / n, rel=1e-4, abs=1e-7)


# ---- 2. bits: L_g r_g^2 values each way ----------------------------------------------------------
def _assert_r_global_bits(run: Run, rounds: pd.DataFrame, n_global: int) -> None:
    v = run.scenario.payload.bits_per_value
    assert v == 32  # no payload section: the default
    per_client = v * n_global * R_G * R_G
    assert (rounds["bits_up"] == rounds["n_arrived"] * per_client).all()
    assert (rounds["bits_down"] == rounds["n_scheduled"] * per_client).all()
    assert (rounds["index_bits"] == 0).all()


def test_bits_are_the_deepest_models_blocks_times_r_g_squared(h2):
    deepest = max(g["model_options"]["n_layers"] for g in H2_GROUPS)
    assert deepest == 3 and h2.algorithm.n_global == deepest
    _assert_r_global_bits(h2.run, h2.rounds, deepest)
    assert (h2.rounds["bits_up"] == 4 * 32 * 3 * 16).all()


def test_bits_follow_global_layers_when_set(tmp_path):
    run = Run(_scenario("h2tune", H2_GROUPS, strategy={"global_layers": 5}), tmp_path / "run")
    rounds = run.execute().rounds
    _assert_r_global_bits(run, rounds, 5)
    assert (rounds["bits_up"] == 4 * 32 * 5 * 16).all()
    assert tuple(run.learner.global_state["R_global"].shape) == (5, R_G, R_G)
    # every client's Omega_k is (L_k, 5): 2 blocks for the smaller model, 3 for the larger
    shapes = [tuple(run.learner.private.get(c)["omega"].shape) for c in range(4)]
    assert shapes == [(2, 5), (2, 5), (3, 5), (3, 5)]


# ---- 3. Phi_k: ceil(beta_k r_g^2) ones per block, fixed, and R stays 0 off the mask --------------
def test_phi_density_is_fixed_and_r_stays_zero_off_the_mask(h2, monkeypatch):
    algorithm = h2.algorithm
    blocks = {0: 2, 1: 2, 2: 3, 3: 3}
    ranks = {0: 2, 1: 2, 2: 3, 3: 3}
    masks = {}
    for c in range(4):
        phi = algorithm.phi(c)
        assert tuple(phi.shape) == (blocks[c], R_G, R_G)
        assert set(phi.unique().tolist()) <= {0.0, 1.0}
        ones = math.ceil(ranks[c] / R_G * R_G * R_G)  # 8 for r_k 2, 12 for r_k 3
        assert phi.sum(dim=(1, 2)).tolist() == [float(ones)] * blocks[c]
        assert torch.equal(algorithm.phi(c), phi)  # the same mask on every call
        masks[c] = phi
        r = h2.run.learner.private.get(c)["R"]
        assert float(r[phi == 0].abs().max()) == 0.0  # exactly 0 off the mask
        assert float(r[phi == 1].abs().max()) > 0.0  # and R did train on it
        # what every round uploaded used the same mask
        for private in h2.private:
            assert float(private[str(c)]["R"][phi == 0].abs().max()) == 0.0
    assert not torch.equal(masks[0], masks[1])  # each client draws its own mask
    assert not torch.equal(masks[2], masks[3])
    # strategy.density overrides beta_k: ceil(0.3 * 16) = 5 ones per block
    monkeypatch.setattr(algorithm.settings, "density", 0.3)
    for c in range(4):
        assert algorithm.phi(c).sum(dim=(1, 2)).tolist() == [5.0] * blocks[c]


def test_every_client_trains_a_and_b_of_width_r_g_and_every_kept_entry_of_r(h2):
    """§4.2: A and B are r_g wide on every client; r_k acts through Phi's density only. One
    forward-backward of client 0 (r_k 2 < r_g 4) from nonzero values: every column of A and row
    of B gets gradient, and R gets it exactly where Phi keeps it."""
    algorithm = h2.algorithm
    client = 0
    g = algorithm.group(client)
    assert g.rank == 2 < R_G
    adapters = algorithm.adapters[g.model_key]
    gen = torch.Generator().manual_seed(21)
    values = {
        k: torch.randn(v.shape, generator=gen, dtype=v.dtype) * 0.1
        for k, v in algorithm.initial_values(client).items()
    }
    values["omega"] = algorithm.initial_values(client)["omega"]
    algorithm.load_client(client, values)
    params = algorithm.trainable(client)
    for p in params:
        p.requires_grad_(True)
        p.grad = None
    try:
        batch = g.train.batch(torch.arange(8))
        out = g.bundle.model(input_ids=batch["x"], attention_mask=batch["attention_mask"])
        logits = out.logits if hasattr(out, "logits") else out
        F.cross_entropy(logits, batch["y"]).backward()
        for a in adapters.A:
            assert (a.grad.abs().sum(dim=0) > 0).all()  # every one of the r_g columns
        for b in adapters.B:
            assert (b.grad.abs().sum(dim=1) > 0).all()  # every one of the r_g rows
        phi = algorithm.phi(client)
        assert int(phi.sum()) == adapters.n_layers * math.ceil(2 / R_G * R_G * R_G)
        assert (adapters.R.grad[phi == 1] != 0).all()
        assert (adapters.R.grad[phi == 0] == 0).all()
    finally:
        for p in params:
            p.requires_grad_(False)
            p.grad = None
        g.bundle.model.zero_grad(set_to_none=True)


# ---- 4. per-client compute -----------------------------------------------------------------------
def _count_step_flops(algorithm, client: int, shared: bool) -> float:
    """FLOPs of one forward + backward of ``client``'s group model on a batch of 8 training
    rows, counted here with torch's counter; A, B and the head trainable (and R, Omega when
    ``shared``)."""
    from torch.utils.flop_counter import FlopCounterMode

    g = algorithm.group(client)
    adapters = algorithm.adapters[g.model_key]
    algorithm.load_client(client, algorithm.initial_values(client))
    params = [*adapters.A, *adapters.B, *g.heads.use(g.n_classes).parameters()]
    if shared:
        params += [adapters.R, adapters.omega]
    for p in params:
        p.requires_grad_(True)
    batch = g.train.batch(torch.arange(8))
    counter = FlopCounterMode(display=False)
    try:
        with counter:
            out = g.bundle.model(input_ids=batch["x"], attention_mask=batch["attention_mask"])
            logits = out.logits if hasattr(out, "logits") else out
            F.cross_entropy(logits, batch["y"]).backward()
    finally:
        for p in params:
            p.requires_grad_(False)
            p.grad = None
        g.bundle.model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """LOCAL with H2Tune's groups, 2 rounds."""
    run = Run(_scenario("h2tune_local", H2_GROUPS, rounds=2), tmp_path_factory.mktemp("lo") / "r")
    return Recorded(run)


def test_compute_is_the_clients_own_model_times_steps_times_passes(h2, local):
    steps = SMOKE["learner"]["local_steps"]
    h2_flops = [h2.algorithm.client_flops(ClientPlan(c, 0, 1, 1.0)) for c in range(4)]
    local_flops = [local.algorithm.client_flops(ClientPlan(c, 0, 1, 1.0)) for c in range(4)]
    for c in range(4):
        # two passes per step (Algorithm 1's shared, then specific step) of its own model
        assert h2_flops[c] == 2 * steps * _count_step_flops(h2.algorithm, c, shared=True)
        assert local_flops[c] == steps * _count_step_flops(local.algorithm, c, shared=False)
        # about twice LOCAL's for the same client, model and steps (H2Tune's step also runs
        # the R path, a few percent more)
        assert 2.0 <= h2_flops[c] / local_flops[c] <= 2.1
    assert h2_flops[0] == h2_flops[1] and h2_flops[2] == h2_flops[3]  # one model, one cost
    # the deeper, wider model costs its clients more, under both algorithms
    assert h2_flops[2] > 2 * h2_flops[0]
    assert local_flops[2] > 2 * local_flops[0]


# ---- 5. one model object per base model; a head per task -----------------------------------------
def test_one_model_per_base_model_and_heads_of_the_tasks_width(h2):
    algorithm = h2.algorithm
    assert len(algorithm.clients.models) == 2
    assert algorithm.group(0).bundle is algorithm.group(1).bundle
    assert algorithm.group(2).bundle is algorithm.group(3).bundle
    assert algorithm.group(0).bundle is not algorithm.group(2).bundle
    assert len(algorithm.adapters) == 2
    widths = {0: (RT_CLASSES, 32), 1: (RT_CLASSES, 32), 2: (CB_CLASSES, 64), 3: (CB_CLASSES, 64)}
    for c, shape in widths.items():
        private = h2.run.learner.private.get(c)
        assert tuple(private["head.weight"].shape) == shape
        assert tuple(private["head.bias"].shape) == shape[:1]
        g = algorithm.group(c)
        assert g.n_classes == shape[0]
        assert g.heads.use(g.n_classes).out_features == shape[0]
    # clients sharing a model keep their own adapters and heads
    a, b = h2.run.learner.private.get(0), h2.run.learner.private.get(1)
    assert not torch.equal(a["A.0"], b["A.0"])
    assert not torch.equal(a["head.weight"], b["head.weight"])


# ---- 6. the baselines ----------------------------------------------------------------------------
def test_local_sends_nothing_and_each_client_trains_alone(local, tmp_path):
    rounds = local.rounds
    assert (rounds["n_arrived"] == 4).all()
    assert (rounds["bits_up"] == 0).all() and (rounds["bits_down"] == 0).all()
    for arrived in local.messages:
        assert all(m.shared == {} for m in arrived.values())
    algorithm = local.algorithm
    for c in range(4):
        start = algorithm.initial_values(c)
        first, last = local.private[0][str(c)], local.run.learner.private.get(c)
        for name in ("A.0", "B.0", "head.weight"):
            assert not torch.equal(first[name].cpu(), start[name].cpu()), (c, name)  # trained
            assert not torch.equal(last[name], first[name]), (c, name)  # and trained on
        # the R path is off: R and Omega are never trained
        assert torch.equal(last["R"].cpu(), start["R"].cpu())
        assert torch.equal(last["omega"].cpu(), start["omega"].cpu())
    # another second group (other width, other rows) leaves the first group's clients exactly
    # as they were: nothing reaches a client but its own training
    groups = copy.deepcopy(H2_GROUPS)
    groups[1]["model_options"] = {"n_layers": 3, "hidden": 48, "heads": 2}
    groups[1]["dataset_options"]["max_train"] = 40
    other = Run(_scenario("h2tune_local", groups, rounds=2), tmp_path / "other")
    other.execute()
    for c in (0, 1):
        a, b = local.run.learner.private.get(c), other.learner.private.get(c)
        assert sorted(a) == sorted(b)
        for name in a:
            assert torch.equal(a[name], b[name]), (c, name)
    assert tuple(other.learner.private.get(2)["A.0"].shape) == (48, 3)  # the change took


def _factor_names(values: dict) -> list[str]:
    return sorted(n for n in values if n.startswith(("A.", "B.")))


def _cut(value: torch.Tensor, name: str, rank: int) -> torch.Tensor:
    return value[:, :rank] if name.startswith("A.") else value[:rank, :]


@pytest.fixture(scope="module")
def fllm(tmp_path_factory):
    """FLLM: clients 0, 1 share model and rank 2 (Dirichlet split: unequal N); client 2 has
    another model at rank 2, client 3 the same model at rank 4."""
    groups = [
        _group(2, SMALL, "chatterbot_topic", 2, max_train=40, partition="dirichlet"),
        _group(1, LARGE, "chatterbot_topic", 2),
        _group(1, SMALL, "chatterbot_topic", 4),
    ]
    return Recorded(Run(_scenario("fllm", groups), tmp_path_factory.mktemp("fllm") / "run"))


def test_fllm_is_fedavg_within_a_model_and_rank(fllm):
    algorithm = fllm.algorithm
    classes = [algorithm.class_of(c) for c in range(4)]
    assert classes[0] == classes[1]
    assert len({classes[0], classes[2], classes[3]}) == 3  # another model / another rank
    sizes = algorithm.clients.sizes
    assert sizes[0] != sizes[1] and sizes[0] + sizes[1] == 40
    prev, new = fllm.before[0], fllm.run.learner.global_state
    prefix = {c: algorithm.prefix[classes[c]] for c in range(4)}
    trained = {c: fllm.run.learner.private.get(c) for c in range(4)}
    names = _factor_names(trained[0])
    assert len(names) == 2 * 2 * SMALL["n_layers"]  # A and B of query and value per block
    w = {c: float(sizes[c] / (sizes[0] + sizes[1])) for c in (0, 1)}
    for name in names:
        key = prefix[0] + name
        assert tuple(prev[key].shape) == tuple(_cut(trained[0][name], name, 2).shape)
        sent = prev[key]  # the class's factors at rank 2
        want = prev[key].double() + sum(
            w[c] * (_cut(trained[c][name], name, 2).double() - sent.double()) for c in (0, 1)
        )
        torch.testing.assert_close(new[key].double(), want, rtol=0, atol=1e-6)
        # = FedAvg of the two trained factors (both started from the class's)
        avg = sum(w[c] * _cut(trained[c][name], name, 2).double() for c in (0, 1))
        torch.testing.assert_close(new[key].double(), avg, rtol=0, atol=1e-6)
        assert float((new[key] - prev[key]).abs().max()) > 0
    # alone in its class: the client's own trained factors at its rank
    for c, rank, width in ((2, 2, 64), (3, 4, 32)):
        for name in _factor_names(trained[c]):
            got = new[prefix[c] + name]
            torch.testing.assert_close(got, _cut(trained[c][name], name, rank), rtol=0, atol=1e-6)
        assert tuple(new[prefix[c] + "A.0"].shape) == (width, rank)
    # bits: r_k (d_in + d_out) per adapted layer (2 per block), 32 bits each, both ways
    values = 2 * (2 * 64 * 4) + 2 * 128 * 6 + 4 * 64 * 4  # clients 0 and 1, 2, 3
    rounds = fllm.rounds
    assert float(rounds["bits_up"].iloc[0]) == 32 * values
    assert float(rounds["bits_down"].iloc[0]) == 32 * values


@pytest.fixture(scope="module")
def hetlora(tmp_path_factory):
    """HetLoRA: clients 0 (rank 2) and 1 (rank 4) on one model, unequal rows; client 2 on a
    one-block MiniLM."""
    groups = [
        _group(1, SMALL, "chatterbot_topic", 2, max_train=32),
        _group(1, SMALL, "chatterbot_topic", 4, max_train=48),
        _group(1, {"n_layers": 1}, "chatterbot_topic", 2, model="minilm"),
    ]
    run = Run(_scenario("h2tune_hetlora", groups), tmp_path_factory.mktemp("het") / "run")
    return Recorded(run)


def test_hetlora_truncates_and_zero_pads(hetlora):
    algorithm = hetlora.algorithm
    assert algorithm.class_of(0) == algorithm.class_of(1) != algorithm.class_of(2)
    prefix = algorithm.prefix[algorithm.class_of(0)]
    sizes = algorithm.clients.sizes
    assert sizes[:2].tolist() == [32.0, 48.0]
    w0, w1 = 32 / 80, 48 / 80
    messages = hetlora.messages[0]
    assert sorted(messages) == [0, 1, 2]
    prev, new = hetlora.before[0], hetlora.run.learner.global_state
    names = _factor_names(messages[0].shared)
    assert names == _factor_names(messages[1].shared) and len(names) == 8
    trained = {c: hetlora.run.learner.private.get(c) for c in (0, 1)}
    for name in names:
        up0, up1 = messages[0].shared[name], messages[1].shared[name]
        shape0 = (32, 2) if name.startswith("A.") else (2, 32)
        shape1 = (32, 4) if name.startswith("A.") else (4, 32)
        assert tuple(up0.shape) == shape0 and tuple(up1.shape) == shape1
        assert tuple(prev[prefix + name].shape) == shape1  # the class at its widest rank
        torch.testing.assert_close(up0, _cut(trained[0][name], name, 2), rtol=0, atol=0)
        torch.testing.assert_close(up1, _cut(trained[1][name], name, 4), rtol=0, atol=0)
        old = prev[prefix + name].double()
        d0 = up0.double() - _cut(old, name, 2)  # the rank-2 client's update, zero-padded
        d1 = up1.double() - old
        pad = torch.zeros_like(old)
        if name.startswith("A."):
            pad[:, :2] = d0
        else:
            pad[:2, :] = d0
        want = old + w0 * pad + w1 * d1
        got = new[prefix + name].double()
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
        # components 3-4: only the rank-4 client's update
        tail = (slice(None), slice(2, 4)) if name.startswith("A.") else (slice(2, 4), slice(None))
        torch.testing.assert_close(got[tail], old[tail] + w1 * d1[tail], rtol=0, atol=1e-6)
        head = (slice(None), slice(0, 2)) if name.startswith("A.") else (slice(0, 2), slice(None))
        torch.testing.assert_close(
            got[head], old[head] + w0 * d0 + w1 * d1[head], rtol=0, atol=1e-6
        )
    assert any(float((new[prefix + n] - prev[prefix + n]).abs().max()) > 0 for n in names)


@pytest.mark.parametrize("name", ["fllm", "hetlora"])
def test_shared_lora_clients_train_from_the_downloaded_class_factors(name, request):
    """Step 3 loads the class's global factors (first r_k components) into every client,
    not the factors the client kept from its own last round."""
    recorded = request.getfixturevalue(name)
    algorithm, learner = recorded.algorithm, recorded.run.learner
    loaded = {}
    original = algorithm.load_client

    def load_client(client, values):
        loaded[client] = {n: v.clone() for n, v in values.items()}
        original(client, values)

    algorithm.load_client = load_client
    try:
        clients = range(recorded.run.scenario.n_clients)
        plans = [ClientPlan(c, 1, algorithm.group(c).rank, 1.0) for c in clients]
        downloads = [algorithm.broadcast(p, learner.global_state) for p in plans]
        algorithm.train(plans, [d.shared for d in downloads], learner.private)
    finally:
        del algorithm.load_client
    for c in clients:
        prefix, rank = algorithm.prefix[algorithm.class_of(c)], algorithm.group(c).rank
        kept = learner.private.get(c)
        for factor in _factor_names(kept):
            want = _cut(learner.global_state[prefix + factor], factor, rank)
            got = _cut(loaded[c][factor], factor, rank)
            torch.testing.assert_close(got, want, rtol=0, atol=0)
            if len(algorithm.members[algorithm.class_of(c)]) > 1:  # not its own average
                assert not torch.equal(got, _cut(kept[factor], factor, rank)), (c, factor)


def test_same_model_and_options_share_one_object(hetlora):
    algorithm = hetlora.algorithm
    assert len(algorithm.clients.models) == 2  # bert_random (two groups) and minilm
    assert algorithm.group(0).bundle is algorithm.group(1).bundle
    assert algorithm.group(2).bundle is not algorithm.group(0).bundle
    assert algorithm.group(0).heads is algorithm.group(1).heads
    for c in range(3):
        assert tuple(hetlora.run.learner.private.get(c)["head.weight"].shape)[0] == CB_CLASSES


# ---- 7. one-line configuration errors ------------------------------------------------------------
def _one_line_error(scenario, tmp_path, match: str) -> str:
    with pytest.raises(ConfigError, match=match) as err:
        Run(scenario, tmp_path / "run")
    assert "\n" not in str(err.value)
    return str(err.value)


def _cheap_groups():
    return [_group(2, SMALL, "chatterbot_topic", 2), _group(2, SMALL, "chatterbot_topic", 3)]


def test_groups_must_add_up_to_n_clients(tmp_path):
    sc = _scenario("h2tune", _cheap_groups(), n_clients=5)
    _one_line_error(
        sc, tmp_path, r"^strategy\.groups: the groups hold 4 clients but n_clients is 5"
    )


def test_a_rank_above_the_global_rank_is_refused(tmp_path):
    groups = _cheap_groups()
    groups[1]["rank"] = R_G + 1
    _one_line_error(
        _scenario("h2tune", groups),
        tmp_path,
        r"^strategy\.groups\[1\]\.rank: rank 5 is larger than strategy\.global_rank \(4\)",
    )


def test_a_global_rank_wider_than_a_model_is_refused(tmp_path):
    sc = _scenario("h2tune", _cheap_groups(), strategy={"global_rank": 40})
    _one_line_error(
        sc, tmp_path, r"^strategy\.global_rank: 40 is larger than 32, the smallest adapted dim"
    )


def test_baseline_widths_are_per_model(tmp_path):
    """A large rank on a wide model does not bind the clients of a narrow one: each base
    model's adapters are as wide as its own groups' largest rank; a rank too large for its
    own model is refused naming that group."""
    groups = [_group(1, SMALL, "chatterbot_topic", 2), _group(1, LARGE, "chatterbot_topic", 40)]
    run = Run(_scenario("fllm", groups), tmp_path / "ok")  # builds the models
    algorithm = run.learner.algorithm
    widths = {
        algorithm.group(c).rank: algorithm.adapters[algorithm.group(c).model_key].r_g
        for c in range(2)
    }
    assert widths == {2: 2, 40: 40}
    groups[0]["rank"] = 33
    _one_line_error(
        _scenario("fllm", groups), tmp_path, r"^strategy\.groups\[0\]\.rank: rank 33 is larger"
    )


def test_an_image_model_on_text_data_is_refused(tmp_path):
    groups = _cheap_groups()
    groups[1].update(model="tiny_mlp", model_options={})
    _one_line_error(
        _scenario("h2tune", groups),
        tmp_path,
        r"^strategy\.groups\[1\]\.model: 'tiny_mlp' takes image data but 'chatterbot_topic' is "
        r"text data$",
    )


def test_a_text_model_on_image_data_is_refused_naming_the_model(tmp_path):
    groups = _cheap_groups()
    groups[1].update(dataset="digits", dataset_options={"max_train": 32, "max_test": 16})
    _one_line_error(
        _scenario("h2tune", groups),
        tmp_path,
        r"^strategy\.groups\[1\]\.model: 'bert_random' takes text data but 'digits' is image data",
    )


# ---- 8. --resume ---------------------------------------------------------------------------------
def test_resumed_run_repeats_the_uninterrupted_one(h2, h2_scenario, tmp_path):
    interrupt_at(Run(h2_scenario, tmp_path / "cut"), 1)
    resumed = Run.resume_from(tmp_path / "cut")
    restored = {}
    original = resumed.sim.run_round

    def check(t):
        if t == 1:
            restored["private"] = _snapshot(resumed)
            restored["global"] = {n: v.clone() for n, v in resumed.learner.global_state.items()}
        return original(t)

    resumed.sim.run_round = check
    rounds = resumed.execute().rounds
    # the checkpoint after round 0 holds what the uninterrupted run had then
    assert sorted(restored["private"]) == ["0", "1", "2", "3"]
    _assert_same_private(restored["private"], h2.private[0])
    assert torch.equal(restored["global"]["R_global"], h2.before[1]["R_global"])
    # and the end is the same
    _assert_same_private(_snapshot(resumed), _snapshot(h2.run))
    assert torch.equal(
        resumed.learner.global_state["R_global"], h2.run.learner.global_state["R_global"]
    )
    pd.testing.assert_frame_equal(h2.rounds.drop(columns="wall_s"), rounds.drop(columns="wall_s"))
    assert math.isfinite(float(rounds["accuracy"].iloc[-1]))


def test_save_and_load_state_round_trip(h2, tmp_path):
    learner = h2.run.learner
    learner.save_state(tmp_path)
    private, state = _snapshot(h2.run), {n: v.clone() for n, v in learner.global_state.items()}
    try:
        learner.private.load_state_dict({}, "cpu")
        learner.global_state = {}
        learner.load_state(tmp_path)
        _assert_same_private(_snapshot(h2.run), private)
        assert sorted(learner.global_state) == ["R_global"]
        assert torch.equal(learner.global_state["R_global"], state["R_global"])
    finally:
        learner.private.load_state_dict(private, "cpu")
        learner.global_state = state


# ---- 9. personalised evaluation by hand ----------------------------------------------------------
def test_personalised_evaluation_by_hand(h2):
    algorithm, learner = h2.algorithm, h2.run.learner
    accuracies, losses, outputs = [], [], []
    for c in range(4):
        g = algorithm.group(c)
        algorithm.load_client(c, learner.private.get(c))
        model = g.bundle.model
        model.eval()
        try:
            with torch.no_grad():
                out = model(input_ids=g.test.x, attention_mask=g.test.attention_mask)
        finally:
            model.train()
        logits = out.logits if hasattr(out, "logits") else out
        assert tuple(logits.shape) == (16, g.n_classes)  # max_test rows, the task's classes
        outputs.append(logits)
        accuracies.append(float((logits.argmax(-1) == g.test.y).double().mean()))
        losses.append(float(F.cross_entropy(logits.double(), g.test.y)))
    metrics = algorithm.evaluate(learner.global_state, learner.private)
    assert metrics["accuracy"] == pytest.approx(sum(accuracies) / 4, abs=1e-12)
    assert metrics["test_loss"] == pytest.approx(sum(losses) / 4, rel=1e-5)
    last = h2.rounds.iloc[-1]
    assert float(last["accuracy"]) == pytest.approx(sum(accuracies) / 4, abs=1e-12)
    assert float(last["test_loss"]) == pytest.approx(sum(losses) / 4, rel=1e-5)
    # personalised: two clients of one model and task give their own predictions
    assert not torch.equal(outputs[0], outputs[1])
