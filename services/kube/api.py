"""`KubeApi`: the writes and reads the binder makes, bundled on one client.

Layer: kube. A thin facade over `pods`, `nodes`, `volumes`, `podgroups` and `events`, so the
binder can take one `typing.Protocol`-typed parameter (unit tests pass an in-memory fake).
Never retries.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from services.kube import events, nodes, podgroups, pods, volumes
from services.kube.client import KubeClient
from services.kube.events import ObjectRef
from services.kube.node_listing import NodeListing
from services.kube.podgroups import StatusChange, StatusWrite


class KubeApi:
    """Binder-facing operations; every method raises `services.kube.errors` types."""

    def __init__(self, client: KubeClient, *, controller: str = events.COMPONENT,
                 instance: str | None = None, checks: KubeClient | None = None) -> None:
        """`controller`: the events' reportingController, the scheduler name gangsched serves.
        `checks`: the client of the post-bind node checks (`node_exists`, `nodes_listed`),
        default `client`. Apart, with connections and request slots of its own, a check never
        waits behind the binds that fill `client` (each placement's outcome waits for its
        check), as kube-scheduler keeps a client of its own for events."""
        self._client = client
        self._checks = checks or client
        self._node_listing = NodeListing(self._checks)
        self._events = events.EventRecorder(
            client, controller=controller, instance=instance or events.reporting_instance())

    async def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """As `pods.get_pod`."""
        return await pods.get_pod(self._client, namespace, name)

    async def get_node(self, name: str) -> dict[str, Any] | None:
        """As `nodes.get_node`."""
        return await nodes.get_node(self._client, name)

    async def node_exists(self, name: str) -> bool:
        """As `nodes.node_exists`."""
        return await nodes.node_exists(self._checks, name)

    async def nodes_listed(self, names: Sequence[str]) -> frozenset[str]:
        """As `nodes.listed_by_hostname`, in LISTs shared with concurrent callers
        (`node_listing.NodeListing`)."""
        return await self._node_listing.listed(names)

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, *, annotations: dict[str, str]
    ) -> None:
        """As `pods.bind`."""
        await pods.bind(self._client, namespace, name, uid, node, annotations=annotations)

    async def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        """As `pods.delete_pod`."""
        await pods.delete_pod(self._client, namespace, name, uid)

    async def patch_pod_status(
        self, namespace: str, name: str, uid: str, status: dict[str, Any]
    ) -> dict[str, Any]:
        """As `pods.patch_pod_status`."""
        return await pods.patch_pod_status(self._client, namespace, name, uid, status)

    async def get_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        """As `volumes.get_claim`."""
        return await volumes.get_claim(self._client, namespace, name)

    async def get_volume(self, name: str) -> dict[str, Any] | None:
        """As `volumes.get_volume`."""
        return await volumes.get_volume(self._client, name)

    async def pre_bind_volume(self, name: str, volume_version: str,
                              claim: dict[str, Any]) -> None:
        """As `volumes.pre_bind_volume`."""
        await volumes.pre_bind_volume(self._client, name, volume_version, claim)

    async def select_node(self, namespace: str, name: str, uid: str, node: str) -> None:
        """As `volumes.select_node`."""
        await volumes.select_node(self._client, namespace, name, uid, node)

    async def get_podgroup(self, namespace: str, name: str) -> dict[str, Any] | None:
        """As `podgroups.get_podgroup`."""
        return await podgroups.get_podgroup(self._client, namespace, name)

    async def update_podgroup_status(
        self, namespace: str, name: str, change: StatusChange, uid: str | None = None
    ) -> StatusWrite:
        """As `podgroups.update_status`."""
        return await podgroups.update_status(self._client, namespace, name, change, uid)

    async def patch_podgroup_status_at(
        self, podgroup: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        """As `podgroups.patch_status_at`."""
        return await podgroups.patch_status_at(self._client, podgroup, status)

    async def first_podgroup_status(
        self, podgroup: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        """As `podgroups.first_status`."""
        return await podgroups.first_status(self._client, podgroup, status)

    async def create_event(
        self,
        about: ObjectRef,
        *,
        event_type: str,
        reason: str,
        message: str,
        action: str,
        now: datetime,
    ) -> None:
        """Record an event (`events.EventRecorder`: a new one, or a repeat in its series)."""
        await self._events.record(about, event_type=event_type, reason=reason, message=message,
                                  action=action, now=now)
