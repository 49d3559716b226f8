"""Property-based tests of the scenario loader: whatever a user writes, the answer is a valid
Scenario or a one-line UserError, never another exception, a traceback or a multi-line message.

Inputs: random text and bytes as a scenario file; random data (real scenario keys from
``describe(Scenario)`` with random values, plus random keys) dumped with ``yaml.safe_dump``;
random ``--set KEY=VALUE`` strings. Derandomized, so CI sees the same examples every run.
"""

from __future__ import annotations

import ast
import math
import re
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirelessfl.config import dump_scenario, load_scenario, scenario_from_dict
from wirelessfl.config.scenario import Scenario
from wirelessfl.config.schema import describe, to_dict
from wirelessfl.errors import UserError

SETTINGS = settings(
    max_examples=200,
    deadline=timedelta(seconds=2),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ROWS = describe(Scenario)
KEYS = [key for key, _, _ in ROWS]
# the names that a dotted key is made of, for random paths that are almost right
NAMES = sorted({part for key in KEYS for part in key.split(".")})
# the tables: "" (the top level), "channel", "channel.fading", ...
SECTIONS = sorted({""} | {key.rsplit(".", 1)[0] for key in KEYS if "." in key})


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def _outcome(call):
    """Run ``call``; a Scenario or a one-line UserError pass, anything else fails the test."""
    try:
        result = call()
    except UserError as err:
        message = str(err)
        assert message.strip(), "empty error message"
        assert "\n" not in message and "\r" not in message, message
        return None
    assert isinstance(result, Scenario)
    return result


def _assert_round_trip(scenario: Scenario, folder: Path) -> None:
    """A valid scenario written with dump_scenario loads back to the same values."""
    path = folder / "roundtrip.yaml"
    dump_scenario(scenario, path)
    again = load_scenario(path)
    assert _same(to_dict(again), to_dict(scenario))


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b and type(a) is type(b)


# ---- values ---------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-3, max_value=300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-10.0, max_value=1e4),
    st.just(-0.0),
    st.text(max_size=12),
    st.dates(),
    st.binary(max_size=4),
    st.sampled_from(
        [
            "1e6",
            "1e400",
            "-1e400",
            "nan",
            ".inf",
            "1_000",
            "0x10",
            "rayleigh",
            "tsfa",
            "soft",
            "surrogate",
            "lora",
            "uniform",
            "hub:x",
            "hub:",
            "",
            " ",
            "1.5",
            "-0",
            "true",
            "null",
        ]
    ),
)


# mapping keys: mostly names, sometimes what YAML also allows (numbers, true, null)
keys = st.one_of(
    st.sampled_from(NAMES),
    st.sampled_from(NAMES),
    st.text(max_size=6),
    st.integers(min_value=-5, max_value=5),
    st.booleans(),
    st.none(),
)


def _children(inner):
    return st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(keys, inner, max_size=4),
    )


values = st.recursive(scalars, _children, max_leaves=12)
layer_shapes = st.lists(
    st.lists(st.integers(min_value=-2, max_value=2_000_000), min_size=0, max_size=3),
    max_size=4,
)


def _plausible(default_text: str, doc: str):
    """Values of the key's own kind (its choices, numbers near its range), so that many
    examples get past the first key and exercise the checks behind it."""
    choices = re.search(r"\[one of ([^\]]+)\]", doc)
    if choices:
        return st.sampled_from([c.strip() for c in choices.group(1).split(",")] + ["nope"])
    try:
        default = ast.literal_eval(default_text)
    except (ValueError, SyntaxError):
        default = None
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, int):
        return st.one_of(st.just(default), st.integers(min_value=-1, max_value=300))
    if isinstance(default, float):
        return st.one_of(st.just(default), st.floats(min_value=-200.0, max_value=1e7))
    if isinstance(default, list):
        return layer_shapes
    if isinstance(default, dict):
        names = st.sampled_from(["alpha", "max_train", "k_factor", "rho", "laptop_cpu", "1x"])
        return st.dictionaries(names, scalars, max_size=3)
    if isinstance(default, str):
        return st.text(max_size=8)
    return st.one_of(st.none(), st.floats(min_value=-50.0, max_value=100.0))


PLAUSIBLE = {key: _plausible(default, doc) for key, default, doc in ROWS}


def value_for(key: str):
    """Three times in four a value of the key's kind, else anything."""
    p = PLAUSIBLE[key]
    return st.one_of(p, p, p, values)


@st.composite
def scenario_data(draw):
    """A nested dict: random real keys with random values, sometimes a random extra key."""
    data: dict = {}
    for key in draw(st.lists(st.sampled_from(KEYS), max_size=8, unique=True)):
        value = draw(value_for(key))
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[parts[-1]] = value
    for _ in range(draw(st.integers(0, 9)) // 4):  # 0-2 stray keys (any kind) in any table
        node = data
        for part in filter(None, draw(st.sampled_from(SECTIONS)).split(".")):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[draw(keys)] = draw(values)
    return data


# ---- random files ---------------------------------------------------------------------------


@SETTINGS
@given(text=st.text(max_size=300))
def test_random_text_as_a_yaml_file(folder, text):
    path = folder / "random.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _outcome(lambda: load_scenario(path))


yaml_alphabet = st.sampled_from(list("abn_01.-:[]{},&*!?|>#'\"\n \t%@`~=<") + ["rounds", "seed"])


@SETTINGS
@given(text=st.lists(yaml_alphabet, max_size=80).map("".join))
def test_yaml_punctuation_soup(folder, text):
    path = folder / "soup.yaml"
    path.write_text(text, encoding="utf-8")
    _outcome(lambda: load_scenario(path))


@SETTINGS
@given(raw=st.binary(max_size=200), suffix=st.sampled_from([".yaml", ".toml", ""]))
def test_random_bytes_as_a_file(folder, raw, suffix):
    path = folder / f"bytes{suffix}"
    path.write_bytes(raw)
    _outcome(lambda: load_scenario(path))


@SETTINGS
@given(text=st.text(max_size=200))
def test_random_text_as_a_toml_file(folder, text):
    path = folder / "random.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _outcome(lambda: load_scenario(path))


@SETTINGS
@given(data=scenario_data(), flow=st.booleans())
def test_random_scenario_data_as_yaml(folder, data, flow):
    path = folder / "data.yaml"
    path.write_text(
        yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True), encoding="utf-8"
    )
    scenario = _outcome(lambda: load_scenario(path))
    if scenario is not None:
        _assert_round_trip(scenario, folder)


@SETTINGS
@given(data=scenario_data())
def test_random_scenario_data_as_a_dict(folder, data):
    scenario = _outcome(lambda: scenario_from_dict(data))
    if scenario is not None:
        _assert_round_trip(scenario, folder)


# ---- random --set ---------------------------------------------------------------------------


def _flow(value) -> str:
    """``value`` as one line of YAML (what a user types after ``=``)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000, allow_unicode=True)
    return text.removesuffix("\n...\n").removesuffix("\n").replace("\n", " ")


@st.composite
def override(draw):
    """``KEY=VALUE``: mostly a real key with a value of its kind, written as a user would."""
    kind = draw(st.integers(0, 5))
    if kind <= 3:
        key = draw(st.sampled_from(KEYS))
        value = draw(value_for(key))
        text = value if isinstance(value, str) and draw(st.booleans()) else _flow(value)
    elif kind == 4:
        key = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map(".".join))
        text = draw(st.one_of(values.map(_flow), yaml_alphabet))
    else:
        key = draw(st.text(max_size=12))
        text = draw(st.text(max_size=20))
    return f"{key}={text}"


@SETTINGS
@given(overrides=st.lists(override(), min_size=1, max_size=4))
def test_random_overrides(folder, overrides):
    scenario = _outcome(lambda: scenario_from_dict({}, overrides))
    if scenario is not None:
        _assert_round_trip(scenario, folder)


@SETTINGS
@given(items=st.lists(st.text(max_size=30), min_size=1, max_size=3))
def test_random_override_strings(items):
    _outcome(lambda: scenario_from_dict({"rounds": 5}, items))
