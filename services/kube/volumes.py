"""Claim and volume operations of VolumeBinding's PreBind: read, pre-bind, select a node.

Layer: kube. Each function is one API request on raw JSON; none retries (the binder decides
what is transient and until when to retry).
"""

from __future__ import annotations

from typing import Any

from services.kube.client import MERGE_PATCH, KubeClient
from services.kube.resources import claim_path, volume_path

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


async def get_claim(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    """The PersistentVolumeClaim's API JSON, or None when it does not exist.

    Raises:
        KubeError subclasses other than KubeNotFound (`KubeClient.get_if_exists`).
    """
    return await client.get_if_exists(claim_path(namespace, name))


async def get_volume(client: KubeClient, name: str) -> dict[str, Any] | None:
    """The PersistentVolume's API JSON, or None when it does not exist.

    Raises:
        KubeError subclasses other than KubeNotFound (`KubeClient.get_if_exists`).
    """
    return await client.get_if_exists(volume_path(name))


def claim_ref_patch(volume_version: str, claim: dict[str, Any]) -> dict[str, Any]:
    """The merge patch pre-binding a volume (at `volume_version`) to `claim`.

    Source: as VolumeBinding's `bindAPIUpdate` with `GetBindVolumeToClaim`: the claimRef
    names the claim (kind, namespace, name, uid, resourceVersion) and the volume is annotated
    bound-by-controller; the PV controller then binds the claim. The resourceVersion makes
    the write conditional (a volume changed since it was read is refused with 409).
    """
    meta = claim.get("metadata") or {}
    return {"metadata": {"resourceVersion": volume_version,
                         "annotations": {BOUND_BY_CONTROLLER: "yes"}},
            "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                  "namespace": meta.get("namespace"), "name": meta.get("name"),
                                  "uid": meta.get("uid"),
                                  "resourceVersion": meta.get("resourceVersion")}}}


async def pre_bind_volume(client: KubeClient, name: str, volume_version: str,
                          claim: dict[str, Any]) -> None:
    """Set the volume's claimRef to `claim` (`claim_ref_patch`).

    Raises:
        KubeConflict: the volume changed since `volume_version`. KubeNotFound: it is gone.
        Other KubeError subclasses.
    """
    await client.request("PATCH", volume_path(name), body=claim_ref_patch(volume_version, claim),
                         content_type=MERGE_PATCH)


async def select_node(client: KubeClient, namespace: str, name: str, uid: str, node: str) -> None:
    """Annotate the claim `volume.kubernetes.io/selected-node: <node>` (dynamic provisioning
    for that node, as VolumeBinding's PreBind asks the provisioner). `uid` is sent in the
    patch, so a claim replaced under the same name is refused.

    Raises:
        KubeNotFound, KubeConflict or KubeInvalid when the claim is gone or replaced; other
        KubeError subclasses.
    """
    body = {"metadata": {"uid": uid, "annotations": {SELECTED_NODE: node}}}
    await client.request("PATCH", claim_path(namespace, name), body=body,
                         content_type=MERGE_PATCH)


def is_fully_bound(claim: dict[str, Any]) -> bool:
    """A volume name and the bind-completed annotation (VolumeBinding's `isPVCFullyBound`)."""
    meta, spec = claim.get("metadata") or {}, claim.get("spec") or {}
    return bool(spec.get("volumeName")) and BIND_COMPLETED in (meta.get("annotations") or {})
