"""BatchedTrainer (issue #7) returns what K calls of LocalTrainer.train return.

Equivalence on tiny_mlp / digits (K = 4, different data sizes and step counts, zeta > 0, SGD
and Adam, float64 and float32), on a tiny random ViT and on MiniLM cut to 2 layers (dropout
off: dropout masks are drawn from the global generator, so they cannot match), optimizer
states interchangeable across rounds, zero-padded ranks training exactly like the unpadded
client, LoRA-sized per-client memory, and the layer types it refuses.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from torch import nn  # noqa: E402

from wirelessfl.data import ArrayDataset, load_dataset  # noqa: E402
from wirelessfl.models import build_model  # noqa: E402
from wirelessfl.models.bundle import ModelBundle  # noqa: E402
from wirelessfl.models.losses import image_loss_and_logits  # noqa: E402
from wirelessfl.models.rng import seeded, torch_generator  # noqa: E402
from wirelessfl.training.batched import BatchedTrainer  # noqa: E402
from wirelessfl.training.local import LocalTrainer  # noqa: E402
from wirelessfl.training.lora_state import TrainableState  # noqa: E402
from wirelessfl.training.rank_padding import truncate_rank  # noqa: E402

pytestmark = [
    pytest.mark.train,
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning"),
]

TOL = {torch.float64: dict(rtol=1e-10, atol=1e-12), torch.float32: dict(rtol=1e-4, atol=2e-6)}
LOSS_TOL = {torch.float64: 1e-12, torch.float32: 1e-6}


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", seed=0)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def wrap(bundle, *, rank=4, alpha=8, dtype=torch.float64, rslora=False):
    """peft model (LoRA on the bundle's targets, head as modules_to_save) in ``dtype``."""
    config = peft.LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=0.0,
        target_modules=bundle.target_modules,
        modules_to_save=bundle.head_modules,
        use_rslora=rslora,
    )
    with seeded(1):
        model = peft.get_peft_model(bundle.model, config).to(dtype)
    return model, TrainableState(model)


def nonzero_start(state, dtype, seed=3):
    """The global state with small random B factors, so the regularizer and every gradient
    are non-trivial from the first step."""
    g = state.snapshot()
    gen = torch.Generator().manual_seed(seed)
    for layer in state.layers:
        shape = g[layer.b_param].shape
        g[layer.b_param] = (torch.randn(shape, generator=gen, dtype=torch.float64) * 0.2).to(dtype)
    return g


def trainers(model, state, loss_fn, optimizer, dtype, zeta=0.1):
    kw = dict(
        model=model,
        state=state,
        loss_fn=loss_fn,
        optimizer=optimizer,
        lr=0.05 if optimizer == "sgd" else 0.01,
        zeta=zeta,
    )
    return LocalTrainer(**kw), BatchedTrainer(**kw)


def client_sets(data, sizes, dtype):
    out, start = [], 0
    for n in sizes:
        sub = data.subset(list(range(start, start + n)))
        start += n
        x = sub.x.to(dtype) if sub.x.is_floating_point() else sub.x
        out.append(ArrayDataset(x, sub.y, sub.attention_mask))
    return out


def gens(k, round_index=0):
    return [torch_generator(7, "batches", c, round_index) for c in range(k)]


def sequential(trainer, g, datasets, steps, batch_size, round_index=0, states=None):
    return [
        trainer.train(
            g,
            d,
            steps=s,
            batch_size=batch_size,
            generator=torch_generator(7, "batches", c, round_index),
            optimizer_state=None if states is None else states[c],
            record_grad_norms=True,
        )
        for c, (d, s) in enumerate(zip(datasets, steps, strict=True))
    ]


def assert_same(seq, bat, dtype, *, optimizer, tol=None):
    tol = tol or TOL[dtype]
    assert len(seq) == len(bat)
    for a, b in zip(seq, bat, strict=True):
        assert list(a.local) == list(b.local)  # same peft names, same order
        for name in a.local:
            assert a.local[name].shape == b.local[name].shape
            assert a.local[name].dtype == b.local[name].dtype
            torch.testing.assert_close(b.local[name], a.local[name], **tol)
        if math.isnan(a.mean_loss):
            assert math.isnan(b.mean_loss)
        else:
            assert b.mean_loss == pytest.approx(a.mean_loss, rel=LOSS_TOL[dtype], abs=0)
        assert b.grad_norms == pytest.approx(a.grad_norms, rel=tol["rtol"] * 10, abs=tol["atol"])
        if optimizer == "sgd":
            assert a.optimizer_state is None and b.optimizer_state is None
            continue
        sa, sb = a.optimizer_state, b.optimizer_state
        assert sa["param_groups"] == sb["param_groups"]
        assert list(sa["state"]) == list(sb["state"])
        for i, entry in sa["state"].items():
            assert list(entry) == list(sb["state"][i])
            assert sb["state"][i]["step"].dtype == entry["step"].dtype
            assert float(sb["state"][i]["step"]) == float(entry["step"])
            for key in ("exp_avg", "exp_avg_sq"):
                torch.testing.assert_close(sb["state"][i][key], entry[key], **tol)


# --------------------------------------------------------------------------------------------
# equivalence
# --------------------------------------------------------------------------------------------

SIZES = [37, 50, 64, 23]  # 37 = 16 + 16 + 5: short batches and reshuffles
STEPS = [5, 3, 7, 4]


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_tiny_mlp_matches_sequential(digits, optimizer, dtype):
    model, state = wrap(build_model("tiny_mlp", n_classes=10, seed=0), dtype=dtype)
    g = nonzero_start(state, dtype)
    local, batched = trainers(model, state, image_loss_and_logits, optimizer, dtype)
    data = client_sets(digits.train, SIZES, dtype)
    seq = sequential(local, g, data, STEPS, 16)
    bat = batched.train_many(
        g, data, steps=STEPS, batch_size=16, generators=gens(4), record_grad_norms=True
    )
    assert_same(seq, bat, dtype, optimizer=optimizer)
    # training moved every client away from the start, differently
    assert all(not torch.equal(r.local[n], g[n]) for r in bat for n in g)
    assert len({round(r.mean_loss, 9) for r in bat}) == 4


def test_adam_states_interchangeable_across_rounds(digits):
    """Round 2 resumes from round-1 states produced by the *other* trainer; clients have
    different Adam step counts (grouped, non-contiguous groups) and a batch size larger than
    one client's data."""
    dtype = torch.float64
    model, state = wrap(build_model("tiny_mlp", n_classes=10, seed=0), dtype=dtype)
    g = nonzero_start(state, dtype)
    local, batched = trainers(model, state, image_loss_and_logits, "adam", dtype)
    data = client_sets(digits.train, [37, 50, 64, 12], dtype)
    steps1, steps2 = [5, 3, 7, 5], [6, 2, 4, 1]
    seq1 = sequential(local, g, data, steps1, 16)
    bat1 = batched.train_many(
        g, data, steps=steps1, batch_size=16, generators=gens(4), record_grad_norms=True
    )
    assert_same(seq1, bat1, dtype, optimizer="adam")
    seq_states = [r.optimizer_state for r in seq1]
    bat_states = [r.optimizer_state for r in bat1]
    g2 = bat1[0].local
    seq2 = sequential(local, g2, data, steps2, 16, round_index=1, states=bat_states)
    bat2 = batched.train_many(
        g2,
        data,
        steps=steps2,
        batch_size=16,
        generators=gens(4, 1),
        optimizer_states=seq_states,
        record_grad_norms=True,
    )
    assert_same(seq2, bat2, dtype, optimizer="adam")
    assert [float(r.optimizer_state["state"][0]["step"]) for r in bat2] == [11, 5, 11, 6]


def test_zero_steps_and_lone_client(digits):
    dtype = torch.float64
    model, state = wrap(build_model("tiny_mlp", n_classes=10, seed=0), dtype=dtype)
    g = nonzero_start(state, dtype)
    local, batched = trainers(model, state, image_loss_and_logits, "adam", dtype)
    data = client_sets(digits.train, [20, 30], dtype)
    with pytest.warns(RuntimeWarning):  # np.mean of no losses, in LocalTrainer
        seq = sequential(local, g, data, [0, 3], 8)
    bat = batched.train_many(
        g, data, steps=[0, 3], batch_size=8, generators=gens(2), record_grad_norms=True
    )
    assert_same(seq, bat, dtype, optimizer="adam")
    assert bat[0].optimizer_state["state"] == {}
    for n in g:
        assert torch.equal(bat[0].local[n], g[n])
    one = batched.train_many(
        g, data[1:], steps=[3], batch_size=8, generators=gens(2)[1:], record_grad_norms=True
    )
    assert_same(seq[1:], one, dtype, optimizer="adam")
    assert batched.train_many(g, [], steps=[], batch_size=8, generators=[]) == []


def _vit(dtype):
    bundle = build_model(
        "vit_random",
        n_classes=3,
        seed=0,
        hidden_size=32,
        num_layers=2,
        num_heads=4,
        image_size=16,
        patch_size=8,
    )
    return bundle, *wrap(bundle, rank=4, alpha=16, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_vit_tiny_matches_sequential(dtype):
    bundle, model, state = _vit(dtype)
    assert len(state.layers) == 4  # q / v of 2 layers
    g = nonzero_start(state, dtype)
    gen = torch.Generator().manual_seed(0)
    sizes = [20, 13, 24]
    data = [
        ArrayDataset(torch.randn(n, 3, 16, 16, generator=gen).to(dtype), torch.arange(n) % 3)
        for n in sizes
    ]
    local, batched = trainers(model, state, bundle.loss_and_logits, "adam", dtype, zeta=0.05)
    steps = [3, 2, 4]
    seq = sequential(local, g, data, steps, 8)
    bat = batched.train_many(
        g, data, steps=steps, batch_size=8, generators=gens(3), record_grad_norms=True
    )
    assert_same(seq, bat, dtype, optimizer="adam")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_minilm_two_layers_matches_sequential(dtype):
    """Text path (token ids + attention mask) on the real MiniLM cut to 2 layers. In float32
    Adam's normalised step amplifies rounding in near-zero gradients: looser tolerance."""
    pytest.importorskip("transformers")
    try:
        bundle = build_model("minilm", n_classes=2, seed=0, dropout=0.0)
    except Exception as err:  # noqa: BLE001 - the weights package may be absent
        pytest.skip(f"MiniLM weights unavailable: {err}")
    bundle.model.encoder.encoder.layer = bundle.model.encoder.encoder.layer[:2]
    for m in bundle.model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    model, state = wrap(bundle, rank=4, alpha=8, dtype=dtype)
    g = nonzero_start(state, dtype)
    gen = torch.Generator().manual_seed(0)
    data = []
    for n in (12, 9, 16):
        x = torch.randint(1000, 5000, (n, 12), generator=gen)
        lengths = torch.randint(4, 13, (n,), generator=gen)
        mask = (torch.arange(12) < lengths[:, None]).long()
        data.append(ArrayDataset(x * mask, torch.arange(n) % 2, mask))
    local, batched = trainers(model, state, bundle.loss_and_logits, "adam", dtype, zeta=0.1)
    steps = [3, 2, 3]
    seq = sequential(local, g, data, steps, 8)
    bat = batched.train_many(
        g, data, steps=steps, batch_size=8, generators=gens(3), record_grad_norms=True
    )
    tol = TOL[dtype] if dtype == torch.float64 else dict(rtol=1e-3, atol=1e-5)
    assert_same(seq, bat, dtype, optimizer="adam", tol=tol)


# --------------------------------------------------------------------------------------------
# ranks
# --------------------------------------------------------------------------------------------


def _mlp_bundle():
    return build_model("tiny_mlp", n_classes=10, seed=0)


def _conv_bundle():
    """A small CNN with BatchNorm (frozen by train_mode) and LoRA on a 3x3 conv, a strided
    1x1 conv and a linear layer; head ``head``."""
    with seeded(0):
        net = _ConvNet(norm=True)
    return ModelBundle(
        model=net,
        target_modules=["conv", "pw", "fc"],
        head_modules=["head"],
        kind="image",
        loss_and_logits=image_loss_and_logits,
    )


@pytest.mark.parametrize("rslora", [False, True], ids=["lora", "rslora"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("make", [_mlp_bundle, _conv_bundle], ids=["mlp", "conv"])
def test_rank_padded_client_trains_like_unpadded(digits, make, optimizer, rslora):
    dtype = torch.float64
    r_max, ranks = 4, [2, 4, 3]
    model, state = wrap(make(), rank=r_max, dtype=dtype, rslora=rslora)
    g = nonzero_start(state, dtype)
    _, batched = trainers(model, state, image_loss_and_logits, optimizer, dtype)
    data = client_sets(digits.train, [30, 41, 25], dtype)
    steps = [4, 6, 3]
    bat = batched.train_many(g, data, steps=steps, batch_size=16, generators=gens(3), ranks=ranks)
    for c, (r, res) in enumerate(zip(ranks, bat, strict=True)):
        # the client's unpadded self: its own peft model at rank r, same base and head
        small, small_state = wrap(make(), rank=r, dtype=dtype, rslora=rslora)
        ref_trainer, _ = trainers(small, small_state, image_loss_and_logits, optimizer, dtype)
        ref = ref_trainer.train(
            truncate_rank(g, state.layers, r),
            data[c],
            steps=steps[c],
            batch_size=16,
            generator=torch_generator(7, "batches", c, 0),
        )
        cut = truncate_rank(res.local, state.layers, r)
        for name in ref.local:
            torch.testing.assert_close(cut[name], ref.local[name], **TOL[dtype])
        assert res.mean_loss == pytest.approx(ref.mean_loss, rel=1e-12)
        for layer in state.layers:  # padded components stay exactly zero
            assert torch.count_nonzero(res.local[layer.a_param][r:]) == 0
            assert torch.count_nonzero(res.local[layer.b_param][:, r:]) == 0
            assert torch.count_nonzero(res.local[layer.a_param][:r]) > 0
        if optimizer == "adam":
            names = list(state.params)
            for i, entry in res.optimizer_state["state"].items():
                name = names[i]
                pad = (slice(r, None),) if ".lora_A." in name else (slice(None), slice(r, None))
                if ".lora_" in name:
                    assert torch.count_nonzero(entry["exp_avg"][pad]) == 0
                    assert torch.count_nonzero(entry["exp_avg_sq"][pad]) == 0


def test_rank_out_of_range(digits):
    model, state = wrap(build_model("tiny_mlp", n_classes=10, seed=0), rank=4)
    _, batched = trainers(model, state, image_loss_and_logits, "sgd", torch.float64)
    data = client_sets(digits.train, [10], torch.float64)
    with pytest.raises(ValueError, match="rank 5 is out of range"):
        batched.train_many(
            state.snapshot(), data, steps=[1], batch_size=4, generators=gens(1), ranks=[5]
        )


# --------------------------------------------------------------------------------------------
# memory and structure
# --------------------------------------------------------------------------------------------


def test_memory_is_lora_sized_and_model_untouched():
    dtype = torch.float32
    bundle, model, state = _vit(dtype)
    base = {n: p for n, p in model.named_parameters()}
    before = {n: p.detach().clone() for n, p in base.items()}
    g = nonzero_start(state, dtype)
    _, batched = trainers(model, state, bundle.loss_and_logits, "adam", dtype)
    gen = torch.Generator().manual_seed(0)
    k = 6
    data = [
        ArrayDataset(torch.randn(8, 3, 16, 16, generator=gen), torch.arange(8) % 3)
        for _ in range(k)
    ]
    batched.train_many(g, data, steps=[2] * k, batch_size=4, generators=gens(k))
    trainable = sum(p.numel() for p in state.params.values())
    total = sum(p.numel() for p in base.values())
    # stacks + their gradients + two Adam moments: K LoRA(+head)-sized copies, nothing more
    assert batched.last_client_state_bytes == k * trainable * 4 * 4
    assert trainable * 20 < total  # LoRA-sized, not model-sized
    # no model copies: the trainer holds the one model, whose parameters are the same objects
    # with the same values (the frozen base is shared; trained values live in the stacks)
    mods = [v for v in vars(batched).values() if isinstance(v, nn.Module)]
    assert mods == [model]
    after = dict(model.named_parameters())
    assert list(after) == list(base)
    assert all(after[n] is base[n] and torch.equal(after[n], before[n]) for n in base)
    assert all("forward" not in m.__dict__ for m in model.modules())  # patches removed


# --------------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------------


class _ConvNet(nn.Module):
    """``conv`` 3x3 -> [BatchNorm] -> ReLU -> ``pw`` 1x1 stride 2 -> ``fc`` -> ``head``;
    input ``(B, 1, 8, 8)``."""

    def __init__(self, norm: bool = False) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 6, 3, padding=1)
        self.norm = nn.BatchNorm2d(6) if norm else nn.Identity()
        self.pw = nn.Conv2d(6, 8, 1, stride=2)
        self.fc = nn.Linear(8 * 4 * 4, 16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        h = self.pw(torch.relu(self.norm(self.conv(x))))
        return self.head(torch.relu(self.fc(h.flatten(1))))


def _peft(model, targets):
    config = peft.LoraConfig(r=2, lora_alpha=4, target_modules=targets, modules_to_save=["head"])
    with seeded(0):
        return peft.get_peft_model(model, config)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_conv2d_lora_with_batchnorm_matches_sequential(digits, optimizer):
    """peft lora.Conv2d (3x3 and strided 1x1) as grouped convolutions; BatchNorm frozen by
    train_mode (as LocalTrainer does), so it does not mix clients."""
    dtype = torch.float64
    bundle = _conv_bundle()
    with torch.no_grad():  # non-trivial running statistics
        bundle.model.norm.running_mean.uniform_(-0.2, 0.2)
        bundle.model.norm.running_var.uniform_(0.5, 2.0)
    model, state = wrap(bundle, rank=3, dtype=dtype)
    assert [type(model.get_submodule(la.name)).__name__ for la in state.layers] == [
        "Conv2d",
        "Linear",
        "Conv2d",
    ]
    g = nonzero_start(state, dtype)
    local, batched = trainers(model, state, image_loss_and_logits, optimizer, dtype)
    data = client_sets(digits.train, SIZES, dtype)
    seq = sequential(local, g, data, STEPS, 16)
    bat = batched.train_many(
        g, data, steps=STEPS, batch_size=16, generators=gens(4), record_grad_norms=True
    )
    assert_same(seq, bat, dtype, optimizer=optimizer)
    assert not model.get_submodule("base_model.model.norm").training


def test_efficientnet_lite0_matches_sequential():
    """The registry CNN: LoRA on 1x1 convs of the last block and the head conv, frozen BN;
    dropout and drop-connect off (their masks cannot match, see the module docstring)."""
    pytest.importorskip("efficientnet_lite_pytorch")
    try:
        bundle = build_model("efficientnet_lite0", n_classes=4, seed=0, n_blocks=1, dropout=0.0)
    except Exception as err:  # noqa: BLE001 - the weights package may be absent
        pytest.skip(f"EfficientNet-Lite0 weights unavailable: {err}")
    net = bundle.model
    net._global_params = net._global_params._replace(drop_connect_rate=0.0)
    dtype = torch.float32
    model, state = wrap(bundle, rank=4, alpha=8, dtype=dtype)
    g = nonzero_start(state, dtype)
    gen = torch.Generator().manual_seed(0)
    data = [
        ArrayDataset(torch.randn(n, 3, 32, 32, generator=gen), torch.arange(n) % 4)
        for n in (6, 4, 5)
    ]
    local, batched = trainers(model, state, bundle.loss_and_logits, "adam", dtype, zeta=0.01)
    steps = [2, 1, 2]
    seq = sequential(local, g, data, steps, 4)
    bat = batched.train_many(
        g, data, steps=steps, batch_size=4, generators=gens(3), record_grad_norms=True
    )
    assert_same(seq, bat, dtype, optimizer="adam", tol=dict(rtol=1e-3, atol=1e-5))


def test_embedding_lora_is_refused():
    class Tok(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(50, 8)
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            return self.head(self.emb(x).mean(1))

    model = _peft(Tok(), ["emb"])
    with pytest.raises(NotImplementedError, match=r"'base_model\.model\.emb'.*Embedding"):
        BatchedTrainer(
            model=model,
            state=TrainableState(model),
            loss_fn=image_loss_and_logits,
            optimizer="sgd",
            lr=0.1,
            zeta=0.0,
        )


def test_model_seeds_make_dropout_reproducible(digits):
    """With dropout active, ``model_seeds`` make a call reproducible and independent of the
    global generator, which is left as it was."""

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(64, 32)
            self.drop = nn.Dropout(0.3)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            return self.head(self.drop(torch.relu(self.fc1(x.flatten(1)))))

    with seeded(0):
        net = Net()
    model = _peft(net, ["fc1"]).double()
    state = TrainableState(model)
    g = nonzero_start(state, torch.float64)
    _, batched = trainers(model, state, image_loss_and_logits, "adam", torch.float64)
    data = client_sets(digits.train, [30, 21, 16], torch.float64)

    def run(seeds):
        return batched.train_many(
            g, data, steps=[3, 4, 2], batch_size=8, generators=gens(3), model_seeds=seeds
        )

    torch.manual_seed(1)
    first = run([11, 12, 13])
    torch.manual_seed(2)
    rng = torch.random.get_rng_state()
    second = run([11, 12, 13])  # another global generator state: same result
    assert torch.equal(torch.random.get_rng_state(), rng)  # left as it was
    other = run([11, 12, 14])
    for a, b in zip(first, second, strict=True):
        for n in a.local:
            assert torch.equal(a.local[n], b.local[n])
    assert any(
        not torch.equal(a.local[n], b.local[n])
        for a, b in zip(first, other, strict=True)
        for n in a.local
    )


def test_non_mean_loss_is_refused_and_patches_are_removed(digits):
    model, state = wrap(build_model("tiny_mlp", n_classes=10, seed=0))

    def summed(m, batch):
        loss, logits = image_loss_and_logits(m, batch)
        return loss * len(batch["y"]), logits

    batched = BatchedTrainer(
        model=model, state=state, loss_fn=summed, optimizer="sgd", lr=0.1, zeta=0.0
    )
    data = client_sets(digits.train, [10, 10], torch.float64)
    with pytest.raises(NotImplementedError, match="sample_loss_fn"):
        batched.train_many(state.snapshot(), data, steps=[1, 1], batch_size=4, generators=gens(2))
    assert all("forward" not in m.__dict__ for m in model.modules())


def test_generic_head_module_via_vmap(digits):
    """A trainable full parameter owned by a non-Linear module (here a LayerNorm in the
    head) is applied per client through torch.func.vmap."""

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(64, 32)
            self.head = nn.Sequential(nn.LayerNorm(32), nn.Linear(32, 10))

        def forward(self, x):
            return self.head(torch.relu(self.fc1(x.flatten(1))))

    with seeded(0):
        net = Net().double()
    model = _peft(net, ["fc1"]).double()
    state = TrainableState(model)
    assert any("head.modules_to_save.default.0.weight" in n for n in state.full_names)
    g = nonzero_start(state, torch.float64)
    local, batched = trainers(model, state, image_loss_and_logits, "adam", torch.float64)
    data = client_sets(digits.train, [30, 21], torch.float64)
    seq = sequential(local, g, data, [3, 4], 8)
    bat = batched.train_many(
        g, data, steps=[3, 4], batch_size=8, generators=gens(2), record_grad_norms=True
    )
    assert_same(seq, bat, torch.float64, optimizer="adam")


# --------------------------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_cuda_matches_sequential_and_memory():
    """On CUDA: same results as the sequential trainer (CPU generators, so the batch order is
    the CPU one), peak memory of the same order as one step over K x b samples plus the
    per-client state, and a finite bf16-autocast run close to the fp32 one."""
    dev = torch.device("cuda")
    dtype = torch.float32
    bundle, model, state = _vit(dtype)
    model.to(dev)
    g = {n: v.to(dev) for n, v in nonzero_start(state, dtype).items()}
    gen = torch.Generator().manual_seed(0)
    k, b = 8, 8
    data = [
        ArrayDataset(torch.randn(2 * b, 3, 16, 16, generator=gen), torch.arange(2 * b) % 3).to(dev)
        for _ in range(k)
    ]
    big = ArrayDataset(torch.cat([d.x for d in data]), torch.cat([d.y for d in data]))
    local, batched = trainers(model, state, bundle.loss_and_logits, "adam", dtype)
    steps = [2] * k
    seq = sequential(local, g, data, steps, b)

    def peak_of(fn):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        out = fn()
        torch.cuda.synchronize()
        return out, torch.cuda.max_memory_allocated() - start

    _, ceiling = peak_of(
        lambda: local.train(g, big, steps=1, batch_size=k * b, generator=gens(1)[0])
    )
    bat, peak = peak_of(
        lambda: batched.train_many(g, data, steps=steps, batch_size=b, generators=gens(k))
    )
    for a, r in zip(seq, bat, strict=True):
        assert r.local[next(iter(r.local))].device.type == "cuda"
        for name in a.local:
            torch.testing.assert_close(r.local[name], a.local[name], rtol=1e-3, atol=1e-5)
        assert r.mean_loss == pytest.approx(a.mean_loss, rel=1e-4)
    assert peak <= 2 * ceiling + 2 * batched.last_client_state_bytes + 2**20
    with torch.autocast("cuda", dtype=torch.bfloat16):
        half = batched.train_many(g, data, steps=steps, batch_size=b, generators=gens(k))
    for a, r in zip(bat, half, strict=True):
        assert math.isfinite(r.mean_loss)
        assert r.mean_loss == pytest.approx(a.mean_loss, rel=5e-2)
        assert all(bool(torch.isfinite(v).all()) for v in r.local.values())


def test_regression_models_train_batched_as_sequential(tmp_path):
    """A regression model (FLoRAL's synthetic linear task) under the batched trainer: its
    per-sample loss is the squared error (the mean of which is the model's loss), and a round
    gives the sequential trainer's tables."""
    from wirelessfl.config import load_scenario
    from wirelessfl.models.losses import regression_loss_and_logits
    from wirelessfl.sim import run_scenario
    from wirelessfl.training.sample_loss import sample_loss_for

    gen = torch.Generator().manual_seed(0)
    model = torch.nn.Linear(4, 3)
    batch = {"x": torch.randn(6, 4, generator=gen), "y": torch.randn(6, 3, generator=gen)}
    loss, pred = regression_loss_and_logits(model, batch)
    per_sample = sample_loss_for("regression")(pred, batch)
    by_hand = [0.5 * sum((pred[i, j] - batch["y"][i, j]) ** 2 for j in range(3)) for i in range(6)]
    torch.testing.assert_close(per_sample, torch.stack(by_hand))
    torch.testing.assert_close(per_sample.mean(), loss)
    rounds = {
        trainer: run_scenario(
            load_scenario(
                "floral/synthetic_linear",
                [
                    "algorithm.name=fedit",
                    "rounds=2",
                    "learner.lr=0.01",
                    f"learner.trainer={trainer}",
                ],
            ),
            tmp_path / trainer,
        ).rounds
        for trainer in ("batched", "sequential")
    }
    for column in ("loss", "test_loss"):
        batched, sequential = (torch.tensor(rounds[t][column].to_numpy()) for t in rounds)
        torch.testing.assert_close(batched, sequential, rtol=1e-5, atol=1e-7, equal_nan=True)
