"""The scenarios shipped with the package (``wirelessfl/scenarios/``), by name.

A shipped scenario's name is its path under :data:`SCENARIO_DIR` without the suffix
(``paper``, ``paper/fig45_shards``); its description is the first sentence of the comment at
the top of its file.
"""

from __future__ import annotations

import re
from pathlib import Path

#: the shipped scenarios: package data (``scenarios/`` in a checkout links to it)
SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"
SUFFIXES = (".yaml", ".toml")
#: the end of a description's first sentence: a full stop before a capital letter or the end
_SENTENCE_END = re.compile(r"\.(\s+[A-Z]|\s*$)")
#: the longest description listed; longer first sentences are cut at a word
MAX_DESCRIPTION = 80


def shipped_names() -> list[str]:
    """Every shipped scenario's name, top-level ones first, each group sorted."""
    if not SCENARIO_DIR.is_dir():
        return []
    files = [p for p in SCENARIO_DIR.rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    names = [p.relative_to(SCENARIO_DIR).with_suffix("").as_posix() for p in files]
    return sorted(names, key=lambda n: (n.count("/"), n))


def description(name: str) -> str:
    """The first sentence of the leading comment of the shipped scenario ``name``."""
    candidates = [SCENARIO_DIR / f"{name}{suffix}" for suffix in SUFFIXES]
    path = next(p for p in candidates if p.is_file())
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        words.append(line.lstrip("#").strip())
    text = " ".join(w for w in words if w)
    end = _SENTENCE_END.search(text)
    sentence = text[: end.start() + 1] if end else text
    if len(sentence) <= MAX_DESCRIPTION:
        return sentence
    return sentence[: MAX_DESCRIPTION - 3].rsplit(" ", 1)[0] + " ..."


def shipped_table() -> list[tuple[str, str]]:
    """``(name, description)`` of every shipped scenario, as ``wirelessfl scenarios`` lists."""
    return [(name, description(name)) for name in shipped_names()]
