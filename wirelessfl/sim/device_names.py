"""The list of devices in the simulator's one-line warnings: the first few indices, then "..."."""

from __future__ import annotations

from collections.abc import Sequence

#: devices named in a warning before "..."
NAMED = 5


def named_devices(indices: Sequence[int]) -> str:
    """``"0, 3, 9"``: the first :data:`NAMED` of the device indices (n,), then ``", ..."`` when
    there are more."""
    named = ", ".join(str(int(k)) for k in indices[:NAMED])
    return named + (", ..." if len(indices) > NAMED else "")
