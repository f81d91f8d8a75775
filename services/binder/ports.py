"""What the binder needs from the outside world, as Protocols (real or in-memory).

Layer: binder. `services.kube.api.KubeApi` and `services.bus.publishing.Publisher` satisfy
these; unit tests pass fakes. Never imports kubernetes_asyncio or nats.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from services.kube.events import ObjectRef
from services.kube.podgroups import StatusWrite

StatusChange = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Current object JSON → the status patch to write, or None when it is current (awaited after
each read of the object)."""

WallClock = Callable[[], int]
"""UTC wall-clock time in epoch milliseconds (deadlines are in that clock)."""


class Kube(Protocol):
    """The API server, as the binder uses it; errors are `services.kube.errors` types."""

    async def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def get_node(self, name: str) -> dict[str, Any] | None: ...

    async def node_exists(self, name: str) -> bool: ...

    async def nodes_listed(self, names: Sequence[str]) -> frozenset[str]: ...

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, *, annotations: dict[str, str]
    ) -> None: ...

    async def delete_pod(self, namespace: str, name: str, uid: str) -> None: ...

    async def patch_pod_status(
        self, namespace: str, name: str, uid: str, status: dict[str, Any]
    ) -> dict[str, Any]: ...

    async def get_claim(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def get_volume(self, name: str) -> dict[str, Any] | None: ...

    async def pre_bind_volume(self, name: str, volume_version: str,
                              claim: dict[str, Any]) -> None: ...

    async def select_node(self, namespace: str, name: str, uid: str, node: str) -> None: ...

    async def get_podgroup(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def update_podgroup_status(
        self, namespace: str, name: str, change: StatusChange, uid: str | None = None
    ) -> StatusWrite: ...

    async def patch_podgroup_status_at(
        self, podgroup: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]: ...

    async def first_podgroup_status(
        self, podgroup: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]: ...

    async def create_event(
        self,
        about: ObjectRef,
        *,
        event_type: str,
        reason: str,
        message: str,
        action: str,
        now: datetime,
    ) -> None: ...


class Publisher(Protocol):
    """JetStream publishing with message ids; retries outages itself (never drops)."""

    async def publish(
        self,
        subject: str,
        data: bytes,
        *,
        msg_id: str,
        headers: dict[str, str] | None = None,
    ) -> int: ...

    async def publish_many(self, items: Sequence[tuple[str, bytes, str]]) -> None: ...
