"""An exported adapter loads without wirelessfl and reproduces the run's last accuracy.

How "without wirelessfl" is made sure of: a fresh virtual environment (``venv``, no pip, no
system site-packages) whose site-packages hold symlinks to exactly the distributions the
export's ``load_exported.py`` says to ``pip install`` (read from its docstring) and their
declared dependencies (``Requires-Dist`` with markers evaluated, resolved through this
environment's ``importlib.metadata``), each with its ``.dist-info``. wirelessfl, channels and
optim are none of them. The check script runs as ``python -I`` (no PYTHONPATH, no user site,
not the script's folder on the path) from a temporary working directory, asserts that
``wirelessfl`` cannot be found and that no ``wirelessfl`` / ``channels`` / ``optim`` module got
imported, then imports the export's ``load_exported.py``, evaluates the run's test rows (saved
by the test as a ``.pt`` dict, as the run's data set gives them) and reports accuracy and
loss. Those are compared with the last row of the run's ``rounds.csv`` (same float32 CPU
evaluation, so equal up to float rounding in the loss; accuracy exactly).

The families' loaders are also checked one by one in this process (faster): the loader's
``build_base`` plus ``base/`` gives the same outputs as ``build_model``'s model.
"""

from __future__ import annotations

import json
import re
import runpy
import subprocess
import venv
from importlib import metadata
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")

from packaging.requirements import Requirement  # noqa: E402
from packaging.utils import canonicalize_name  # noqa: E402
from scenario_helpers import digits_scenario  # noqa: E402
from tiny_models import write_tiny_llama_gguf  # noqa: E402

from wirelessfl.config import load_scenario  # noqa: E402
from wirelessfl.data import load_dataset  # noqa: E402
from wirelessfl.learners.export import export_run  # noqa: E402
from wirelessfl.learners.exported_loader import (  # noqa: E402
    BASE_FOLDER,
    LOADER,
    loader_source,  # noqa: E402
    write_base,
)
from wirelessfl.models import build_model  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402

pytestmark = [
    pytest.mark.train,
    pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning"),
]

_CHECK = """
import importlib.util, json, sys
assert importlib.util.find_spec("wirelessfl") is None, "wirelessfl is importable"
sys.path.insert(0, {adapter!r})
import torch
from load_exported import load_model, predict
batch = torch.load({batch!r}, weights_only=True)
model = load_model()
with torch.no_grad():
    logits = predict(model, batch)
ours = sorted(m for m in sys.modules if m.split(".")[0] in ("wirelessfl", "channels", "optim"))
print(json.dumps({{
    "accuracy": (logits.argmax(-1) == batch["y"]).double().mean().item(),
    "test_loss": torch.nn.functional.cross_entropy(logits.float(), batch["y"]).item(),
    "our_modules": ours,
    "path": sys.path,
}}))
"""


def _closure(names: list[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions ``names`` and everything they require (markers evaluated
    without extras); a requirement not installed here (a platform's optional wheel) is left
    out: if it were needed, the import in the fresh environment fails."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        found[name] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


def _fresh_python(root: Path, names: list[str]) -> Path:
    """A new venv in ``root`` holding (as symlinks) only the distributions ``names`` and their
    dependencies; its python."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    site = next(root.glob("lib/python*/site-packages"))
    for dist in _closure(names).values():
        tops = {Path(str(f)).parts[0] for f in dist.files or []}
        for top in tops - {"..", "__pycache__"}:
            source = Path(dist.locate_file(top))
            if source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    return root / "bin" / "python"


def _pip_names(adapter: Path) -> list[str]:
    """The distributions the loader's docstring says to ``pip install``."""
    text = (adapter / LOADER).read_text()
    return re.search(r"Needs `pip install ([^`]+)`", text).group(1).split()


def _evaluate_without_wirelessfl(adapter: Path, data, tmp: Path) -> dict:
    """Accuracy and loss of ``data``'s rows through the export, computed in a fresh venv."""
    batch = tmp / "test_batch.pt"
    torch.save({k: v.contiguous() for k, v in data.batch(torch.arange(len(data))).items()}, batch)
    python = _fresh_python(tmp / "venv", _pip_names(adapter))
    (tmp / "work").mkdir()
    script = tmp / "work" / "check.py"
    script.write_text(_CHECK.format(adapter=str(adapter), batch=str(batch)))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [str(python), "-I", str(script)],
        cwd=tmp / "work",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["our_modules"] == []
    assert not any("wirelessfl" in p or "wt-" in p for p in report["path"])
    return report


def _check_run(run: Path, adapter: Path, tmp: Path) -> None:
    scenario = load_scenario(run / "config.yaml")
    lc = scenario.learner
    data = load_dataset(
        lc.dataset, seed=scenario.seed, n_clients=scenario.n_clients, **dict(lc.dataset_options)
    )
    report = _evaluate_without_wirelessfl(adapter, data.test, tmp)
    last = json.loads((run / "meta.json").read_text())  # the run finished
    assert last["finished"]
    import pandas as pd

    row = pd.read_csv(run / "rounds.csv").dropna(subset=["accuracy"]).iloc[-1]
    assert report["accuracy"] == pytest.approx(float(row["accuracy"]), abs=1e-12)
    assert report["test_loss"] == pytest.approx(float(row["test_loss"]), rel=1e-5)


def test_tiny_mlp_export_loads_without_wirelessfl(tmp_path):
    Run(digits_scenario(rounds=3, eval_every=3), tmp_path / "run").execute()
    adapter = export_run(tmp_path / "run", tmp_path / "adapter")
    assert _pip_names(adapter) == ["torch", "peft", "safetensors"]
    _check_run(tmp_path / "run", adapter, tmp_path)


@pytest.mark.slow  # 11 s on an idle 2-core CPU, 50 s and more on a busy one
def test_default_scenario_export_loads_without_wirelessfl(tmp_path):
    """The default scenario (EfficientNet-Lite0 on MNIST-5k), 2 rounds of 3 of 4 clients."""
    small = load_scenario("default", ["rounds=2", "eval_every=2", "n_clients=4", "n_scheduled=3"])
    Run(small, tmp_path / "run").execute()
    adapter = export_run(tmp_path / "run", tmp_path / "adapter")
    assert _pip_names(adapter) == ["torch", "peft", "safetensors", "efficientnet-lite-pytorch"]
    config = json.loads((adapter / "global" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] is None  # rebuilt from base/, not a hub model
    _check_run(tmp_path / "run", adapter, tmp_path)


def _image(shape):
    return {"x": torch.randn(*shape, generator=torch.Generator().manual_seed(0))}


def _text(vocab=1000):
    g = torch.Generator().manual_seed(0)
    mask = torch.tensor([[1] * 12, [1] * 7 + [0] * 5, [1] * 3 + [0] * 9])
    return {"x": torch.randint(5, vocab, (3, 12), generator=g) * mask, "attention_mask": mask}


TINY_VIT = {"hidden_size": 32, "num_layers": 1, "num_heads": 4, "image_size": 16, "patch_size": 8}
#: (model, n_classes, options, batch): every built-in family, small
FAMILIES = {
    "tiny_mlp": ("tiny_mlp", 10, {"hidden": 16}, _image((4, 1, 8, 8))),
    "mnist_mlp": ("mnist_mlp", 10, {"hidden": 16}, _image((4, 1, 28, 28))),
    "synthetic_linear": ("synthetic_linear", 1, {}, _image((4, 10))),
    "synthetic_mlp": ("synthetic_mlp", 1, {"d_y": 2}, _image((4, 10))),
    "small_cnn": ("small_cnn", 10, {}, _image((4, 3, 32, 32))),
    "efficientnet_lite0": ("efficientnet_lite0", 10, {}, _image((2, 3, 32, 32))),
    "efficientnet_options": (
        "efficientnet_lite0",
        3,
        {"image_size": 64, "dropout": 0.3, "n_blocks": 16},
        _image((2, 3, 64, 64)),
    ),
    "minilm": ("minilm", 2, {"n_layers": 1}, _text()),
    "bert_random": ("bert_random", 4, {"n_layers": 1, "hidden": 32, "heads": 4}, _text()),
    "vit_random": ("vit_random", 5, TINY_VIT, _image((2, 3, 16, 16))),
}


def _loader_outputs(bundle, folder):
    """``predict`` of the loader written for ``bundle``, on its base rebuilt from ``folder``."""
    write_base(bundle.model, bundle.standalone, folder / BASE_FOLDER)
    (folder / LOADER).write_text(loader_source(bundle.standalone, "test"))
    loader = runpy.run_path(str(folder / LOADER))
    base = loader["build_base"](folder / BASE_FOLDER)
    from safetensors.torch import load_model

    whole = bundle.standalone.saved_modules is None  # else the head (a hub model)
    path = str(folder / BASE_FOLDER / "model.safetensors")
    _, unexpected = load_model(base, path, strict=whole)
    assert not unexpected
    return loader, base.eval()


@pytest.mark.parametrize("case", sorted(FAMILIES))
@torch.no_grad()
def test_each_familys_loader_rebuilds_its_base_model(case, tmp_path):
    name, n_classes, options, batch = FAMILIES[case]
    bundle = build_model(name, n_classes=n_classes, seed=3, **options)
    loader, base = _loader_outputs(bundle, tmp_path)

    def layers(model):  # module name -> class name (the loader defines its own classes)
        return {n: type(m).__name__ for n, m in model.named_modules()}

    assert layers(base) == layers(bundle.model)  # e.g. the same 1x1 convs swapped
    got = loader["predict"](base, batch)
    batch = {**batch, "y": torch.zeros(len(batch["x"]), dtype=torch.long)}
    if bundle.kind == "regression":
        batch["y"] = torch.zeros(len(batch["x"]), got.shape[1])
    _, expected = bundle.loss_and_logits(bundle.model.eval(), batch)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A tiny Llama (SmolLM2's architecture, from a GGUF as the smollm2 family reads it, with
    its tokenizer) and a tiny ViT for digits (1 channel, 8 px), as local model folders."""
    root = tmp_path_factory.mktemp("models")
    write_tiny_llama_gguf(root / "tiny.gguf")
    build_model("smollm2", n_classes=2, cache_dir=str(root / "llama"), gguf_path=root / "tiny.gguf")
    config = transformers.ViTConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=64,
        image_size=8,
        patch_size=4,
        num_channels=1,
        num_labels=3,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        transformers.ViTForImageClassification(config).save_pretrained(str(root / "vit"))
    return root


#: (model, n_classes, options, batch) of models in ``folders``: the transformers families
FOLDER_CASES = {
    "smollm2": ("smollm2", 2, {}, _text(64)),
    "smollm2_instruct": ("smollm2_instruct", 2, {"answers": ["b", "c"]}, _text(64)),
    "hub_text": ("hub:llama", 3, {}, _text(64)),
    "hub_causal": ("hub:llama", 2, {"answers": ["b", "c"]}, _text(64)),
    "hub_image": ("hub:vit", 7, {}, _image((2, 1, 8, 8))),
}


@pytest.mark.parametrize("case", sorted(FOLDER_CASES))
@torch.no_grad()
def test_transformers_and_hub_loaders_rebuild_their_base_model(case, folders, tmp_path):
    name, n_classes, options, batch = FOLDER_CASES[case]
    if name.startswith("hub:"):
        name = f"hub:{folders / name[4:]}"
    else:
        options = {**options, "cache_dir": str(folders / "llama")}
    bundle = build_model(name, n_classes=n_classes, seed=3, **options)
    loader, base = _loader_outputs(bundle, tmp_path)
    hub = name.startswith("hub:")
    assert bundle.standalone.base_model_name_or_path == (str(folders / name[4:]) if hub else None)
    assert (tmp_path / BASE_FOLDER / "config.json").exists() != hub  # a hub model: its own
    got = loader["predict"](base, batch)
    batch = {**batch, "y": torch.zeros(len(batch["x"]), dtype=torch.long)}
    _, expected = bundle.loss_and_logits(bundle.model.eval(), batch)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("head", ["train", "frozen"])
def test_hub_export_names_its_model_and_reproduces_the_run(head, folders, tmp_path):
    """A digits run on a local hub ViT: adapter_config.json names the folder; the loader (the
    seeded head from base/ when the run kept it frozen) gives rounds.csv's last accuracy."""
    vit = folders / "vit"
    scenario = digits_scenario(
        rounds=2, eval_every=2, **{"learner.model": f"hub:{vit}", "learner.head": head}
    )
    result = Run(scenario, tmp_path / "run").execute()
    adapter = export_run(tmp_path / "run", tmp_path / "adapter")
    config = json.loads((adapter / "global" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(vit)
    assert _pip_names(adapter) == ["torch", "peft", "safetensors", "transformers"]
    card = (adapter / "README.md").read_text()  # the card shows the loader exactly as saved
    assert f"```python\n{(adapter / LOADER).read_text().rstrip()}\n```" in card
    assert "`pip install torch peft safetensors transformers`" in card
    loader = runpy.run_path(str(adapter / LOADER))
    test = load_dataset("digits", seed=scenario.seed, n_clients=scenario.n_clients).test
    batch = test.batch(torch.arange(len(test)))
    with torch.no_grad():
        logits = loader["predict"](loader["load_model"](adapter), batch)
    accuracy = float((logits.argmax(-1) == batch["y"]).double().mean())
    assert accuracy == pytest.approx(float(result.rounds["accuracy"].iloc[-1]), abs=1e-12)
