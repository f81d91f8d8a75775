"""PodGroup status writes through the status subresource: merge patch, retried on conflict.

Layer: kube. The caller supplies a pure function from the current object to the status fields
to write (or None when nothing changed), so a conflict re-reads and recomputes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from services.kube import errors
from services.kube.client import MERGE_PATCH, KubeClient
from services.kube.resources import (
    NATIVE_PODGROUP_API_VERSION,
    PODGROUP_API_VERSION,
    metadata,
    podgroup_path,
)

log = logging.getLogger(__name__)

CONFLICT_ATTEMPTS = 5
API_VERSIONS = (PODGROUP_API_VERSION, NATIVE_PODGROUP_API_VERSION)
"""Where a PodGroup is looked up, in order: Coscheduling's, then the native one."""

StatusChange = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Current PodGroup JSON → the `status` merge patch to write, or None when it is current.

Awaited after each read of the PodGroup, so it may look up what to write (the binder reads the
newest status decision then: see `services.binder.reporter`)."""


async def get_podgroup(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    """The PodGroup's API JSON, or None when it does not exist.

    Shapes: the first found of each API version in API_VERSIONS (an API that is not served
    answers 404 too); the JSON always carries its `apiVersion`.
    Raises:
        KubeError subclasses other than KubeNotFound.
    """
    for api_version in API_VERSIONS:
        try:
            found = await client.request("GET", podgroup_path(namespace, name, "", api_version))
        except errors.KubeNotFound:
            continue
        return {**found, "apiVersion": found.get("apiVersion") or api_version}
    return None


async def update_status(
    client: KubeClient, namespace: str, name: str, change: StatusChange
) -> bool:
    """Merge-patch the PodGroup's status with `change(current)`; False when already current.

    The patch carries the read `resourceVersion`, so a concurrent writer makes it fail with a
    conflict; then the object is read again and `change` recomputed (up to CONFLICT_ATTEMPTS).
    `change` runs after the read, so whatever it looks up is at least as new as the object.
    Raises:
        KubeNotFound: no such PodGroup. KubeConflict: still conflicting after every attempt.
        Other KubeError subclasses.
    """
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        current = await get_podgroup(client, namespace, name)
        if current is None:
            raise errors.KubeNotFound(f"PodGroup {namespace}/{name} not found", status=404)
        status = await change(current)
        if status is None:
            return False
        version = metadata(current).get("resourceVersion")
        body = {"metadata": {"resourceVersion": version}, "status": status}
        try:
            path = podgroup_path(namespace, name, "status", str(current["apiVersion"]))
            await client.request("PATCH", path, body=body, content_type=MERGE_PATCH)
            return True
        except errors.KubeConflict:
            log.debug("PodGroup %s/%s status conflict (attempt %d)", namespace, name, attempt)
    raise errors.KubeConflict(
        f"PodGroup {namespace}/{name} status: still conflicting after {CONFLICT_ATTEMPTS} attempts",
        status=409,
    )
