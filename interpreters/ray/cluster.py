"""What the driver knows of the cluster: Ray itself (imported on first use), the alive nodes
(read in a background thread, so that a slow answer never holds results back), and which Ray
errors mean that a worker or its node went away.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["NodeInfo", "NodeWatcher", "alive_nodes", "ensure_ray", "is_lost", "is_unavailable", "ray_module",
           "worker_nodes"]


def ray_module() -> Any:
    """Import ray on first use (it is an optional dependency)."""
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "interpreters.ray needs Ray: pip install 'agentcore-fx[ray]' (or 'ray>=2.60')"
        ) from exc
    return ray


def ensure_ray(address: str | None, init_options: Mapping[str, Any] | None) -> Any:
    """Ray, initialised with ``ray.init(address=address, **init_options)`` unless it already is."""
    ray = ray_module()
    if not ray.is_initialized():
        ray.init(address=address, **dict(init_options or {}))
    return ray


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """An alive node: its Ray id and how many CPUs it offers."""

    node_id: str
    cpus: float


def alive_nodes(ray: Any) -> tuple[NodeInfo, ...]:
    """Every alive node of the cluster (one call to the GCS)."""
    return tuple(NodeInfo(n["NodeID"], float(n.get("Resources", {}).get("CPU", 0.0)))
                 for n in ray.nodes() if n.get("Alive"))


def worker_nodes(nodes: tuple[NodeInfo, ...]) -> tuple[NodeInfo, ...]:
    """The nodes that get workers: those with CPUs (a head node started with ``--num-cpus 0`` is
    kept free), or every node when none has a CPU."""
    with_cpu = tuple(n for n in nodes if n.cpus > 0)
    return with_cpu or nodes


class NodeWatcher:
    """Reads the alive nodes every ``interval`` seconds in a daemon thread.

    :attr:`latest` is the last answer (the first is read before :meth:`start` returns), so the
    driver's loop looks at the cluster without ever waiting on it: if the GCS is slow to answer,
    the loop goes on with what it knew.
    """

    def __init__(self, ray: Any, interval: float) -> None:
        self._ray = ray
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.latest: tuple[NodeInfo, ...] = ()

    def start(self) -> None:
        self.latest = alive_nodes(self._ray)
        self._thread = threading.Thread(target=self._watch, name="agentcore-ray-nodes", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.latest = alive_nodes(self._ray)
            except Exception:  # Ray shut down under us, or a GCS hiccup: keep the last answer
                if not self._ray.is_initialized():
                    return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def is_lost(ray: Any, exc: BaseException) -> bool:
    """True when ``exc``, raised by a call to a worker, means the worker (or its node, or the
    result on it) went away, rather than the call itself failing."""
    e = ray.exceptions
    return isinstance(exc, (e.RayActorError, e.ActorUnschedulableError, e.ObjectLostError, e.WorkerCrashedError,
                            e.NodeDiedError, e.OutOfMemoryError))


def is_unavailable(ray: Any, exc: BaseException) -> bool:
    """True when ``exc`` says a worker cannot be reached *for now*: Ray has not decided yet whether
    it (or its node) is dead, so it may still be running what it was given."""
    return isinstance(exc, ray.exceptions.ActorUnavailableError)
