"""Connecting this process to a Ray cluster, for ``learner.executor: ray`` and ``sweep --executor
ray`` (``docs/scale-out.md``).

Ray is imported only here and only when asked for: the base install has no Ray (the ``[scale]``
extra installs it). The address is the caller's setting, else the ``RAY_ADDRESS`` environment
variable, else a local Ray instance is started (and stops when this process ends). A process
that is already connected (a sweep's Ray task, a notebook that called ``ray.init``) keeps its
connection. An address that does not answer within :data:`PROBE_TIMEOUT_S` is refused with one
line, rather than left to Ray, which retries for minutes.
"""

from __future__ import annotations

import logging
import os
import socket
import warnings
from types import ModuleType

from wirelessfl.errors import ConfigError

__all__ = [
    "PROBE_TIMEOUT_S",
    "cluster_resources",
    "connect",
    "import_ray",
    "node_cpus",
    "task_cause",
]

#: seconds a Ray address gets to accept a TCP connection before it is called unreachable
PROBE_TIMEOUT_S = 5.0
#: the ports Ray listens on by default: the head's GCS, and the Ray Client server (ray://)
GCS_PORT, CLIENT_PORT = 6379, 10001
#: addresses ray.init resolves itself (a cluster on this machine, or a new local instance)
LOCAL_ADDRESSES = ("auto", "local")


def import_ray(key: str) -> ModuleType:
    """The ``ray`` module, or a one-line ``ConfigError`` naming ``key`` when it is missing."""
    try:
        import ray
    except ModuleNotFoundError as err:
        raise ConfigError(
            f"{key}: 'ray' needs the [scale] extra: pip install -e '.[scale]' "
            f"(missing module {err.name!r})"
        ) from None
    return ray


def connect(address: str | None, *, key: str, address_key: str) -> ModuleType:
    """Connect this process to Ray (unless it is connected already) and return the module.

    Args:
        address: ``host:port``, ``ray://host:port``, ``auto`` or ``local``; None: the
            ``RAY_ADDRESS`` environment variable, else a new local instance.
        key: the setting that asked for Ray (named when Ray is not installed).
        address_key: the setting that gave ``address`` (named when it is unreachable).
    """
    ray = import_ray(key)
    if ray.is_initialized():
        return ray
    address = check_reachable(address, address_key=address_key)
    with warnings.catch_warnings():  # Ray's notice about a future change of its GPU masking
        warnings.simplefilter("ignore", FutureWarning)
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    return ray


def check_reachable(address: str | None, *, address_key: str) -> str | None:
    """The cluster address to use (``address``, else ``RAY_ADDRESS``, else None: a local
    instance), after a one-line ``ConfigError`` naming where it came from unless it answers:
    what a command checks before it writes or prints anything."""
    if address is None and os.environ.get("RAY_ADDRESS"):
        address, address_key = os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    if address is not None and address not in LOCAL_ADDRESSES:
        _probe(address, address_key)
    return address


def cluster_resources(ray: ModuleType) -> tuple[int, int]:
    """(CPUs, GPUs) of the whole cluster this process is connected to."""
    resources = ray.cluster_resources()
    return int(resources.get("CPU", 0)), int(resources.get("GPU", 0))


def node_cpus(ray: ModuleType) -> list[int]:
    """CPUs of every live node of the cluster (an actor fits on one node or none)."""
    return [int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive")]


def task_cause(err: Exception) -> BaseException:
    """The exception a Ray task or actor raised (Ray's ``RayTaskError.cause``), as itself, so
    the command line reports it as it would a local one; ``err`` when Ray kept none."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, BaseException) else err


def _probe(address: str, key: str) -> None:
    """A one-line ``ConfigError`` naming ``key`` unless ``address`` accepts a TCP connection."""
    client = address.startswith("ray://")
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host:
        host, port = port, str(CLIENT_PORT if client else GCS_PORT)
    accepted = "host:port, ray://host:port, auto or local"
    if not host or not port.isdigit():
        raise ConfigError(f"{key}: expected {accepted}, got {address!r}")
    try:
        with socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S):
            pass
    except OSError as err:
        raise ConfigError(
            f"{key}: no Ray cluster answers at {address!r} ({err.strerror or err}); start one "
            f"with `ray start --head` there, or give {accepted}"
        ) from None
