"""Base models of different depth and width for heterogeneous-model runs: ``minilm`` with
fewer pretrained layers (``n_layers``) and ``bert_random`` (a random-init BERT encoder of any
depth and width on MiniLM's vocabulary)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from wirelessfl.errors import UserError  # noqa: E402
from wirelessfl.models import build_model  # noqa: E402

pytestmark = [pytest.mark.train, pytest.mark.usefixtures("one_torch_thread")]

SMALL = {"n_layers": 2, "hidden": 32, "heads": 2, "max_positions": 64}


@pytest.fixture(scope="module")
def full_minilm():
    return build_model("minilm", n_classes=2, seed=0)


@pytest.fixture(scope="module")
def token_batch():
    from wirelessfl.data import load_tokenizer

    enc = load_tokenizer("minilm")(
        ["a moving, funny film", "dull", "the plot never quite lands"],
        padding="max_length",
        max_length=12,
        truncation=True,
        return_tensors="pt",
    )
    return enc["input_ids"], enc["attention_mask"]


def _one_line_error(match: str, build, **options) -> str:
    with pytest.raises(UserError, match=match) as info:
        build(**options)
    text = str(info.value)
    assert "\n" not in text
    return text


def bert_param_count(*, vocab, positions, hidden, layers, intermediate, n_classes, types=2):
    """Closed-form parameter count of a BERT encoder (no pooler) + a linear head."""
    embeddings = vocab * hidden + positions * hidden + types * hidden + 2 * hidden
    attention = 4 * (hidden * hidden + hidden) + 2 * hidden  # q, k, v, o + LayerNorm
    ffn = (hidden * intermediate + intermediate) + (intermediate * hidden + hidden) + 2 * hidden
    head = hidden * n_classes + n_classes
    return embeddings + layers * (attention + ffn) + head


# ----------------------------------------------------------------------------- minilm n_layers


def test_minilm_default_keeps_all_six_layers(full_minilm):
    assert len(full_minilm.model.encoder.encoder.layer) == 6
    assert full_minilm.model.encoder.config.num_hidden_layers == 6
    assert full_minilm.info["n_layers"] == 6
    assert full_minilm.layer_shapes() == [(384, 384)] * 12


def test_minilm_two_layers_equal_the_full_models_first_two(full_minilm, token_batch):
    two = build_model("minilm", n_classes=2, seed=0, n_layers=2)
    assert len(two.model.encoder.encoder.layer) == 2
    assert two.model.encoder.config.num_hidden_layers == 2
    assert two.info["n_layers"] == 2
    assert two.layer_shapes() == [(384, 384)] * 4
    full_state = full_minilm.model.state_dict()
    small_state = two.model.state_dict()
    assert any(k.startswith("encoder.encoder.layer.1.") for k in small_state)
    assert not any(k.startswith("encoder.encoder.layer.2.") for k in small_state)
    for key, value in small_state.items():
        assert torch.equal(value, full_state[key]), key
    ids, mask = token_batch
    two.model.eval()
    with torch.no_grad():
        assert two.model(ids, mask).shape == (3, 2)


@pytest.mark.parametrize("bad", [0, 7, -1, True, 2.0])
def test_minilm_bad_n_layers_is_one_line(bad):
    text = _one_line_error("n_layers", build_model, name="minilm", n_classes=2, n_layers=bad)
    assert "1..6" in text


# ----------------------------------------------------------------------------- bert_random


def test_bert_random_shapes_and_parameter_count():
    from wirelessfl.models.bert_random import build_bert_random

    b = build_bert_random(n_classes=3, seed=0, **SMALL)
    enc = b.model.encoder
    assert len(enc.encoder.layer) == 2 and enc.config.num_hidden_layers == 2
    assert enc.config.hidden_size == 32 and enc.config.intermediate_size == 128
    assert enc.config.vocab_size == 30522
    assert b.kind == "text" and b.head_modules == ["classifier"]
    assert b.target_modules == ["query", "value"]
    assert b.info["pretrained"] is False and b.info["tokenizer"] == "minilm"
    n_params = sum(p.numel() for p in b.model.parameters())
    expected = bert_param_count(
        vocab=30522, positions=64, hidden=32, layers=2, intermediate=128, n_classes=3
    )
    assert n_params == expected
    wide = build_bert_random(n_classes=5, n_layers=3, hidden=48, heads=4, intermediate=40)
    assert sum(p.numel() for p in wide.model.parameters()) == bert_param_count(
        vocab=30522, positions=512, hidden=48, layers=3, intermediate=40, n_classes=5
    )


def test_bert_random_lora_targets():
    from wirelessfl.models.bert_random import build_bert_random

    b = build_bert_random(n_classes=3, n_layers=3, hidden=32, heads=4, max_positions=64)
    names = b.target_names()
    assert len(names) == 3 * 2
    assert [n.rsplit(".", 1)[-1] for n in names] == ["query", "value"] * 3
    assert b.layer_shapes() == [(32, 32)] * 6


def test_bert_random_seeding_and_global_rng():
    from wirelessfl.models.bert_random import build_bert_random

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = build_bert_random(n_classes=3, seed=7, **SMALL)
    assert torch.equal(torch.rand(3), expected)
    again = build_bert_random(n_classes=3, seed=7, **SMALL)
    other = build_bert_random(n_classes=3, seed=8, **SMALL)
    sa, sb, so = a.model.state_dict(), again.model.state_dict(), other.model.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(
        sa["encoder.encoder.layer.0.attention.self.query.weight"],
        so["encoder.encoder.layer.0.attention.self.query.weight"],
    )
    assert not torch.equal(sa["classifier.weight"], so["classifier.weight"])


def test_bert_random_forward_on_minilm_tokens(token_batch):
    from wirelessfl.models.bert_random import build_bert_random

    b = build_bert_random(n_classes=4, seed=0, **SMALL)
    ids, mask = token_batch
    logits = b.model(ids, mask)
    assert logits.shape == (3, 4) and torch.isfinite(logits).all()
    loss, out = b.loss_and_logits(
        b.model, {"x": ids, "attention_mask": mask, "y": torch.tensor([0, 3, 1])}
    )
    assert out.shape == (3, 4) and torch.isfinite(loss)
    loss.backward()
    assert b.model.encoder.encoder.layer[0].attention.self.query.weight.grad is not None


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"n_layers": 0}, "n_layers"),
        ({"hidden": 0}, "hidden"),
        ({"heads": 0}, "heads"),
        ({"hidden": 30, "heads": 4}, "hidden=30 must be a multiple of heads=4"),
        ({"dropout": 1.0}, "dropout"),
        ({"dropout": -0.1}, "dropout"),
        ({"intermediate": 0}, "intermediate"),
        ({"max_positions": 0}, "max_positions"),
        ({"n_layers": 1.5}, "n_layers"),
    ],
)
def test_bert_random_bad_options_are_one_line(options, match):
    from wirelessfl.models.bert_random import build_bert_random

    _one_line_error(match, build_bert_random, n_classes=3, **options)


def test_bert_random_through_build_model():
    b = build_model("bert_random", n_classes=3, n_layers=2, hidden=64, heads=2)
    assert b.name == "bert_random"
    assert b.layer_shapes() == [(64, 64)] * 4
    with torch.no_grad():
        assert b.model(torch.tensor([[101, 2023, 102]])).shape == (1, 3)
    with pytest.raises(UserError, match="unknown option 'depth'"):
        build_model("bert_random", n_classes=3, depth=2)
