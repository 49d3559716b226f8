"""``controller``: the settings every controller reads; each controller's own extend them.

The section is chosen by ``controller.name`` (:func:`~wirelessfl.config.schema.chosen_section`):
its dataclass is the running controller's ``Settings``, a subclass of
:class:`ControllerSettings` declared next to the controller (``Fixed.Settings`` in
``controllers/fixed.py``), so a controller's settings live with it and a plug-in controller
declares its own. Keys stay flat (``controller.V``). A key of another registered controller is
accepted and kept (one file can switch controller, a sweep can run several) but read by none:
results leave it out of the run's group and label. :meth:`ControllerSettings.given` reads such a
key where a rule refuses it for the running controller (a budget for one that keeps none).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from wirelessfl.config.limits import MAX_RANK
from wirelessfl.config.schema import chosen_section, hidden_option, missing_setting, option
from wirelessfl.config.sections import stage_follows_controller
from wirelessfl.errors import ConfigError
from wirelessfl.registries import CONTROLLERS


@dataclass
class ControllerSettings:
    """How rank r, sparsification O^t and shares b_k^t are chosen: the registry name and the
    settings every controller reads (the base's virtual queue, rank and bound)."""

    name: str = option("tsfa", choices=CONTROLLERS, doc="a controller registry name")
    d_th_s: float = option(
        1.0,
        gt=0.0,
        doc="average upload-delay threshold D_th (event-driven modes: the time-average "
        "compute + upload latency per update)",
    )
    r_max: int = option(
        64, ge=1, le=MAX_RANK, doc="largest rank considered (TSFA) / r_max of the bound"
    )
    rank: int = option(
        8, ge=1, doc="rank for osfa, fixed and energy_min; the global rank r for sketch"
    )
    others: dict[str, Any] = hidden_option(
        doc="keys of the controllers that do not run (validated, kept, written back)", flat=True
    )

    def validate(self, prefix: str) -> None:
        if self.rank > self.r_max:
            raise ConfigError(
                f"{prefix}.rank: must be <= {prefix}.r_max ({self.r_max}), got {self.rank}"
            )

    def given(self, key: str, default: Any = None) -> Any:
        """The value of ``controller.<key>``: the running controller's setting, else the value
        written for another controller (kept in :attr:`others`), else ``default``."""
        if key in {f.name for f in fields(self)} and key != "others":
            return getattr(self, key)
        return self.others.get(key, default)

    def __getattr__(self, name: str) -> Any:
        """Reading a setting the running controller does not declare: one line that says
        where to declare it (a plug-in controller reading another controller's key)."""
        raise missing_setting("controller", self, name)


@dataclass
class FixedRatioSettings(ControllerSettings):
    """The settings of a controller that sends one given ratio O every round (fixed,
    energy_min)."""

    sparsification: float = option(
        1.0,
        gt=0.0,
        le=1.0,
        doc="O for the fixed and energy_min controllers",
        applies=stage_follows_controller,
    )


def controller_settings(name: str = "tsfa", **values: Any) -> ControllerSettings:
    """The validated settings of controller ``name`` with ``values`` over its defaults (keys
    of other controllers kept in ``others``), as the scenario's ``controller`` section builds
    them."""
    return build_section({"name": name, **values})


def build_section(data: dict[str, Any]) -> ControllerSettings:
    """The ``controller`` section from plain data (``{"name": "osfa", "V": 1e-3}``)."""
    from wirelessfl.config.schema import build

    @dataclass
    class _Holder:
        controller: ControllerSettings = chosen_section(CONTROLLERS, ControllerSettings)

    return build(_Holder, {"controller": data}).controller


def settings_for(settings: ControllerSettings, name: str) -> ControllerSettings:
    """Controller ``name``'s settings from the same section's values (its own keys and the
    ones kept for other controllers): what the section would give if it named ``name``."""
    from wirelessfl.config.schema import to_dict

    return build_section({**to_dict(settings), "name": name})
