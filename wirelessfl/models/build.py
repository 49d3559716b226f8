"""``build_model``: a model by registry name or ``hub:<name-or-path>``, options checked."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from wirelessfl.errors import UserError
from wirelessfl.models.bundle import ModelBundle
from wirelessfl.models.hub import build_hub
from wirelessfl.registries import HUB_PREFIX, MODELS

__all__ = ["build_model", "model_option_names"]


def _builder(name: str) -> Callable[..., ModelBundle]:
    """The builder ``(*, n_classes, seed, **options)`` of ``name``; ``UserError`` if unknown."""
    if name.startswith(HUB_PREFIX):
        spec = name[len(HUB_PREFIX) :]
        if not spec:
            raise UserError(f"model {HUB_PREFIX!r} needs a name or path after the colon")
        return functools.partial(build_hub, spec=spec)
    if name not in MODELS:
        raise UserError(f"{MODELS.unknown(name)}, {HUB_PREFIX}<name-or-path>")
    return MODELS.load(name)


def _accepted(builder: Callable[..., ModelBundle]) -> list[str]:
    """The option names ``builder`` takes (besides ``n_classes`` and ``seed``)."""
    params = inspect.signature(builder).parameters
    return [p for p in params if p not in ("n_classes", "seed", "spec")]


def model_option_names(name: str) -> list[str]:
    """The options (``build_model`` keyword arguments) model ``name`` takes, in the builder's
    order; ``UserError`` if ``name`` is unknown."""
    return _accepted(_builder(name))


def _check_options(name: str, builder: Callable[..., ModelBundle], options: dict[str, Any]) -> None:
    """One-line ``UserError`` for an option that ``builder`` does not take."""
    accepted = _accepted(builder)
    for key in options:
        if key not in accepted:
            raise UserError(
                f"unknown option {key!r} for model {name!r}; accepted: "
                f"{', '.join(accepted + ['target_modules'])}"
            )


def build_model(
    name: str,
    *,
    n_classes: int,
    seed: int = 0,
    target_modules: Sequence[str] | None = None,
    **options: Any,
) -> ModelBundle:
    """Build the model ``name``.

    Args:
        name: A ``wirelessfl.registries.MODELS`` name, or ``hub:`` plus a local
            ``save_pretrained`` folder / hub model id.
        n_classes: Width of the new task head (>= 1).
        seed: Seeds every random initialisation (head, random-init backbones); the global
            torch RNG is left as it was.
        target_modules: Override the default LoRA targets; each key must match an adaptable
            layer.
        **options: Family options (see each builder's docstring).

    Returns:
        The bundle, with ``name`` set and its LoRA targets checked.

    Raises:
        UserError: One line for an unknown name, option or target.
    """
    if not isinstance(n_classes, int) or isinstance(n_classes, bool) or n_classes < 1:
        raise UserError(f"n_classes must be an integer >= 1, got {n_classes!r}")
    builder = _builder(name)
    _check_options(name, builder, options)
    bundle = builder(n_classes=n_classes, seed=seed, **options)
    bundle.name = name
    if target_modules is not None:
        bundle.target_names(target_modules)  # validates every key
        bundle.target_modules = list(target_modules)
    else:
        bundle.target_names()  # the defaults must resolve too
    return bundle
