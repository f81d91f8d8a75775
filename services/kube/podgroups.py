"""PodGroup status writes through the status subresource, each refused by the API server when
the PodGroup is not the one the caller means.

Layer: kube. Three writes, each one request and each returning the PodGroup as stored:
`patch_status_at` (a merge patch with a `resourceVersion` precondition, when the caller holds
the object as last written), `first_status` (a JSON patch testing `metadata.uid` and that the
PodGroup has no status yet, when the caller knows only its uid), and `update_status` (read,
then a merge patch with the read `resourceVersion`, retried on conflict). A `metadata.uid` in a
merge patch is no precondition on a custom resource: its status strategy copies the stored
metadata over the patched object (apiextensions `statusStrategy.PrepareForUpdate`), so the
write lands on a PodGroup recreated under the same name; a `resourceVersion` and a JSON patch
`test` are checked (verified on v1.36 by tests/e2e/test_binder_requests.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from services.kube import errors
from services.kube.client import JSON_PATCH, MERGE_PATCH, KubeClient
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
        return _with_api_version(found, api_version)
    return None


class StatusWrite(NamedTuple):
    """How `update_status` ended: whether it wrote, and the PodGroup as stored now (the written
    object, or the one read when its status was already current)."""

    changed: bool
    podgroup: dict[str, Any]


async def patch_status_at(
    client: KubeClient, podgroup: dict[str, Any], status: dict[str, Any]
) -> dict[str, Any]:
    """Merge-patch `status` into `podgroup` if it is still at the `resourceVersion` it has
    (a PodGroup as this process last wrote or read it); returns the PodGroup as stored.

    Shapes: `podgroup` is API JSON with `apiVersion` and `metadata` (namespace, name,
    resourceVersion). One request.
    Raises:
        KubeConflict: the PodGroup changed since (or was recreated). KubeNotFound: gone.
        Other KubeError subclasses.
    """
    meta = metadata(podgroup)
    api_version = str(podgroup.get("apiVersion") or PODGROUP_API_VERSION)
    body = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": status}
    path = podgroup_path(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                         "status", api_version)
    found = await client.request("PATCH", path, body=body, content_type=MERGE_PATCH)
    return _with_api_version(found, api_version)


async def first_status(
    client: KubeClient, podgroup: dict[str, Any], status: dict[str, Any]
) -> dict[str, Any]:
    """Set the whole `status` of `podgroup` if the stored one still has its uid and generation
    and no status yet (a JSON patch: test `/metadata/uid`, test `/metadata/generation`, test
    `/status` absent, add `/status`); returns the PodGroup as stored. One request, no read: the
    first status write of a new PodGroup.

    Shapes: `podgroup` is API JSON with `apiVersion` and `metadata` (namespace, name, uid,
    generation), e.g. the PodGroup as a watch showed it.
    Raises:
        KubeInvalid: a test failed (another uid holds the name, the spec changed, or it already
            has a status: read it and merge instead). KubeNotFound: gone. Other KubeError
            subclasses.
    """
    meta = metadata(podgroup)
    api_version = str(podgroup.get("apiVersion") or PODGROUP_API_VERSION)
    operations = [
        {"op": "test", "path": "/metadata/uid", "value": meta.get("uid")},
        {"op": "test", "path": "/metadata/generation", "value": meta.get("generation")},
        {"op": "test", "path": "/status", "value": None},
        {"op": "add", "path": "/status", "value": status},
    ]
    path = podgroup_path(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                         "status", api_version)
    found = await client.request("PATCH", path, body=operations, content_type=JSON_PATCH)
    return _with_api_version(found, api_version)


def _with_api_version(found: dict[str, Any], api_version: str) -> dict[str, Any]:
    """`found` (API JSON), sure to carry its `apiVersion`."""
    return {**found, "apiVersion": found.get("apiVersion") or api_version}


async def update_status(
    client: KubeClient, namespace: str, name: str, change: StatusChange,
    uid: str | None = None,
) -> StatusWrite:
    """Merge-patch the PodGroup's status with `change(current)` (nothing written when it
    returns None: already current).

    The patch carries the read `resourceVersion`, so a concurrent writer makes it fail with a
    conflict; then the object is read again and `change` recomputed (up to CONFLICT_ATTEMPTS).
    `change` runs after the read, so whatever it looks up is at least as new as the object.
    `uid`, when given, is the PodGroup meant: one read with another uid is refused.
    Raises:
        KubeNotFound: no such PodGroup. KubeConflict: still conflicting after every attempt,
        or the name is held by a PodGroup of another uid. Other KubeError subclasses.
    """
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        current = await get_podgroup(client, namespace, name)
        if current is None:
            raise errors.KubeNotFound(f"PodGroup {namespace}/{name} not found", status=404)
        if uid is not None and metadata(current).get("uid") != uid:
            raise errors.KubeConflict(
                f"PodGroup {namespace}/{name} was recreated (uid {metadata(current).get('uid')}, "
                f"not {uid})", status=409)
        status = await change(current)
        if status is None:
            return StatusWrite(False, current)
        try:
            return StatusWrite(True, await patch_status_at(client, current, status))
        except errors.KubeConflict:
            log.debug("PodGroup %s/%s status conflict (attempt %d)", namespace, name, attempt)
    raise errors.KubeConflict(
        f"PodGroup {namespace}/{name} status: still conflicting after {CONFLICT_ATTEMPTS} attempts",
        status=409,
    )
