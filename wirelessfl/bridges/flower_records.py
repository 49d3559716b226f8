"""Our messages and plans as Flower records, and back (the ServerApp and ClientApp share these).

A :class:`~wirelessfl.algorithms.message.Message` travels as two records of a Flower
``RecordDict``:

- ``"shared"``: an ``ArrayRecord`` of its shared tensors (what the algorithm sends; a sparse
  update travels as its dense tensor with zeros, while its bits are counted from its index
  spaces, as in the simulator);
- ``"layout"``: a ``ConfigRecord`` with its index spaces (JSON), its side bits and its
  diagnostics (``torch.save`` bytes: what the simulation measures, such as SOFT's local
  factors for eq. 12; never counted as payload).

The private part never leaves the client. A :class:`~wirelessfl.plans.ClientPlan` (or an
algorithm's subclass, e.g. FSLoRA's ``SketchPlan``) travels as JSON naming its class, which
must be a ``ClientPlan``. Tensors cross as numpy arrays and land on the receiver's device.
"""

from __future__ import annotations

import dataclasses
import io
import json
from typing import TYPE_CHECKING, Any

from channels.registry import resolve_target
from wirelessfl.algorithms.message import IndexSpace, LoraTensors, Message
from wirelessfl.plans import ClientPlan

if TYPE_CHECKING:
    import torch
    from flwr.app import RecordDict

__all__ = [
    "content_to_message",
    "from_bytes",
    "message_to_content",
    "plan_from_text",
    "plan_to_text",
    "to_bytes",
]


def to_bytes(value: Any) -> bytes:
    """``value`` (tensors, numbers, lists, tuples, dicts) as ``torch.save`` bytes, on the CPU."""
    import torch

    from wirelessfl.training.transfer import to_device

    buffer = io.BytesIO()
    torch.save(to_device(value, "cpu"), buffer)
    return buffer.getvalue()


def from_bytes(data: bytes, device: torch.device | str) -> Any:
    """What :func:`to_bytes` wrote (plain data only: ``weights_only``), tensors on ``device``."""
    import torch

    return torch.load(io.BytesIO(data), map_location=device, weights_only=True)


def message_to_content(message: Message) -> RecordDict:
    """``message`` without its private part as a Flower ``RecordDict``."""
    from flwr.app import ArrayRecord, ConfigRecord, RecordDict

    spaces = [dataclasses.asdict(space) for space in message.sparse]
    lora = [dataclasses.asdict(group) for group in message.lora]
    layout = {
        "sparse": json.dumps(spaces),
        "lora": json.dumps(lora),
        "side_bits": float(message.side_bits),
        "diagnostics": to_bytes(message.diagnostics),
    }
    return RecordDict(
        {
            "shared": ArrayRecord.from_torch_state_dict(dict(message.shared)),
            "layout": ConfigRecord(layout),
        }
    )


def content_to_message(content: RecordDict, device: torch.device | str) -> Message:
    """The :class:`Message` of :func:`message_to_content`, tensors on ``device``."""
    layout = content["layout"]
    shared = {
        name: tensor.to(device) for name, tensor in content["shared"].to_torch_state_dict().items()
    }
    spaces = [
        IndexSpace(tuple(s["names"]), s["n_sent"], s["n_total"], s["copies"])
        for s in json.loads(str(layout["sparse"]))
    ]
    lora = [
        LoraTensors(
            g["layer"], g["b"], g["a"], None if g["components"] is None else tuple(g["components"])
        )
        for g in json.loads(str(layout["lora"]))
    ]
    return Message(
        shared=shared,
        sparse=spaces,
        diagnostics=from_bytes(bytes(layout["diagnostics"]), device),
        side_bits=float(layout["side_bits"]),
        lora=lora,
    )


def plan_to_text(plan: ClientPlan) -> str:
    """``plan`` as JSON: its class (``module:qualname``) and its fields."""
    kind = type(plan)
    fields = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    return json.dumps({"class": f"{kind.__module__}:{kind.__qualname__}", "fields": fields})


def plan_from_text(text: str) -> ClientPlan:
    """The plan of :func:`plan_to_text` (lists back to tuples); its class must be a ClientPlan."""
    data = json.loads(text)
    kind = resolve_target(data["class"])
    if not (isinstance(kind, type) and issubclass(kind, ClientPlan)):
        raise TypeError(f"{data['class']} is not a wirelessfl ClientPlan")
    return kind(**{name: _tuples(value) for name, value in data["fields"].items()})


def _tuples(value: Any) -> Any:
    """JSON lists as the tuples a frozen plan holds."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
