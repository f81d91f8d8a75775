"""The oracle: the real kube-scheduler binary on the real control plane, offered one pod at a time.

Talks to the API server with gangsched's own client (`services.kube.client`) and keeps the
nodes, pods, claims, volumes, storage classes and namespaces current with its informer-style
list/watch
(`services.kube.listwatch`), so no state is polled. `offer` creates the pod and waits for
what kube-scheduler did: bound it (`spec.nodeName` set), or found it unschedulable (condition
PodScheduled=False, reason Unschedulable, whose message is the FailedScheduling message).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from services.config.settings import KubeSettings
from services.kube import listwatch
from services.kube.client import KubeClient, connect
from services.kube.resources import (
    NAMESPACES,
    NODES,
    PODS,
    VOLUME_LIMIT_RESOURCES,
    VOLUME_RESOURCES,
    Resource,
    pod_path,
)

Obj = dict[str, Any]
T = TypeVar("T")
OUTCOME_TIMEOUT_SECONDS = 30.0
SYSTEM_TAINT_PREFIX = "node.kubernetes.io/"
"""Taints the node controllers set (not-ready, unreachable, ...); `unschedulable` excepted."""


@dataclass(frozen=True)
class Outcome:
    """What kube-scheduler did with a pod: bound it to `node`, or refused it with `message`."""

    node: str | None
    message: str | None


class Mirror:
    """Every object of one resource, kept current by a list/watch in the background."""

    def __init__(self, client: KubeClient, resource: Resource) -> None:
        self.objects: dict[str, Obj] = {}
        self.listeners: list[Callable[[Obj], None]] = []
        """Called with every object the watch delivers (added, modified or deleted), first."""
        self._changed = asyncio.Condition()
        self._synced = asyncio.Event()
        self._task = asyncio.create_task(self._follow(client, resource))

    async def _follow(self, client: KubeClient, resource: Resource) -> None:
        async for observation in listwatch.observe(client, resource):
            if isinstance(observation, listwatch.Synced):
                self._synced.set()
                continue
            uid = observation.obj["metadata"]["uid"]
            for listener in self.listeners:
                listener(observation.obj)
            if observation.type == "deleted":
                self.objects.pop(uid, None)
            else:
                self.objects[uid] = observation.obj
            async with self._changed:
                self._changed.notify_all()

    async def wait_for(self, check: Callable[[], Any], what: str,
                       timeout: float = OUTCOME_TIMEOUT_SECONDS) -> Any:
        """Wait until `check()` returns a truthy value (re-checked on every change); return it.

        Raises:
            TimeoutError: naming `what`, after `timeout` seconds.
        """
        await self._synced.wait()

        async def until() -> Any:
            async with self._changed:
                while not (value := check()):
                    await self._changed.wait()
                return value

        try:
            return await asyncio.wait_for(until(), timeout)
        except TimeoutError:
            raise TimeoutError(f"no {what} after {timeout:.0f}s") from None

    def by_name(self, namespace: str, name: str) -> Obj | None:
        for obj in self.objects.values():
            meta = obj["metadata"]
            if meta["name"] == name and meta.get("namespace", "") == namespace:
                return obj
        return None

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@dataclass(frozen=True)
class Mirrors:
    """A mirror per resource the run follows (`namespaces`: their labels, what a
    `namespaceSelector` reads); `storage` by resource kind (`pvc`, `pv`, `storageclass`,
    `csinode`, `attachment`)."""

    nodes: Mirror
    pods: Mirror
    storage: dict[str, Mirror]
    namespaces: Mirror


@contextlib.asynccontextmanager
async def mirrors(client: KubeClient) -> AsyncIterator[Mirrors]:
    """Mirrors of the nodes, the pods, the storage objects and the namespaces, closed on exit."""
    followed = Mirrors(Mirror(client, NODES), Mirror(client, PODS),
                       {resource.kind: Mirror(client, resource)
                        for resource in (*VOLUME_RESOURCES, *VOLUME_LIMIT_RESOURCES)},
                       Mirror(client, NAMESPACES))
    try:
        yield followed
    finally:
        for mirror in (followed.nodes, followed.pods, *followed.storage.values(),
                       followed.namespaces):
            await mirror.close()


async def with_client(kubeconfig: Path, run: Callable[[KubeClient], Awaitable[T]]) -> T:
    """`run(client)` with a client of the control plane at `kubeconfig`, closed afterwards."""
    client = await connect(KubeSettings(kubeconfig=kubeconfig))
    try:
        return await run(client)
    finally:
        await client.close()


def _collection(obj: Obj) -> str:
    kind, version = obj["kind"], obj["apiVersion"]
    prefix = f"/api/{version}" if "/" not in version else f"/apis/{version}"
    namespace = obj["metadata"].get("namespace")
    plural = kind.lower() + "es" if kind.endswith("s") else kind.lower() + "s"
    return f"{prefix}/namespaces/{namespace}/{plural}" if namespace else f"{prefix}/{plural}"


async def create(client: KubeClient, obj: Obj, dry_run: bool = False) -> Obj:
    """POST `obj` to its collection (`dry_run`: admitted and defaulted, not stored)."""
    query = [("dryRun", "All")] if dry_run else []
    return await client.request("POST", _collection(obj), query=query, body=obj)


def is_settled(node: Obj) -> bool:
    """Ready, and without taints the node controllers add while a node is not (yet) Ready."""
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in node.get("status", {}).get("conditions", []))
    return ready and not any(
        taint["key"].startswith(SYSTEM_TAINT_PREFIX) and not taint["key"].endswith(
            "/unschedulable") for taint in node.get("spec", {}).get("taints", []))


def outcome_of(pod: Obj | None) -> Outcome | None:
    """The pod's scheduling outcome, if kube-scheduler has made one."""
    if pod is None:
        return None
    if pod["spec"].get("nodeName"):
        return Outcome(node=pod["spec"]["nodeName"], message=None)
    for condition in pod.get("status", {}).get("conditions", []):
        if (condition.get("type") == "PodScheduled" and condition.get("status") == "False"
                and condition.get("reason") == "Unschedulable"):
            return Outcome(node=None, message=condition.get("message", ""))
    return None


async def offer(client: KubeClient, pods: Mirror, pod: Obj) -> Outcome:
    """Create `pod` and wait for kube-scheduler's outcome (module docstring); an unschedulable
    pod is deleted again, so the cluster only grows by bound pods."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    await create(client, pod)
    result: Outcome = await pods.wait_for(
        lambda: outcome_of(pods.by_name(namespace, name)),
        f"scheduling outcome for {namespace}/{name}")
    if result.node is None:
        await client.request("DELETE", pod_path(namespace, name),
                             body={"gracePeriodSeconds": 0})
    return result
