"""channels.registry.Registry: lazy names, register, load, one-line unknown-name errors."""

from __future__ import annotations

import sys

import pytest

from channels.registry import Registry, UnknownNameError


def test_lazy_entries_are_listed_without_import_and_loaded_on_use():
    sys.modules.pop("colorsys", None)
    reg = Registry("codec", {"hls": "colorsys:rgb_to_hls", "ident": len})
    assert reg.names() == ["hls", "ident"] and "hls" in reg and len(reg) == 2
    assert "colorsys" not in sys.modules
    import colorsys

    assert reg.load("hls") is colorsys.rgb_to_hls
    assert reg["ident"] is len
    assert dict(reg.items()) == {"hls": colorsys.rgb_to_hls, "ident": len}


def test_register_as_call_and_decorator_and_name_clashes():
    reg = Registry("rule")

    @reg.register("double")
    def double(x):
        return 2 * x

    reg.register("triple", lambda x: 3 * x)
    assert reg.load("double")(4) == 8 and reg.load("triple")(2) == 6
    reg.register("double", double)  # the same object again: fine
    with pytest.raises(ValueError, match="rule name 'double' is already registered"):
        reg.register("double", len)
    reg.register("double", len, replace=True)
    assert reg.load("double") is len
    reg.unregister("double")
    assert reg.names() == ["triple"]
    with pytest.raises(ValueError, match="non-empty string"):
        reg.register("", len)


def test_unknown_name_is_one_line_listing_the_accepted_names():
    reg = Registry("fading model", {"rayleigh": int, "rician": float})
    with pytest.raises(UnknownNameError) as err:
        reg.load("nakagami")
    assert str(err.value) == "unknown fading model 'nakagami'; accepted: 'rayleigh', 'rician'"
    assert isinstance(err.value, ValueError)
    with pytest.raises(KeyError):
        reg["nakagami"]
    assert reg.get("nakagami") is None
    assert 3 not in reg


def test_a_bad_lazy_target_fails_when_loaded():
    reg = Registry("thing", {"bad": "no_such_module_xyz:attr", "shape": "no_colon"})
    with pytest.raises(ModuleNotFoundError):
        reg.load("bad")
    with pytest.raises(ValueError, match="module:attribute"):
        reg.load("shape")
