"""Pod operations: get, bind through `pods/binding`, delete with a uid precondition, patch status.

Layer: kube. Each function is one API request on raw JSON; none retries (the binder decides
what is transient and until when to retry).
"""

from __future__ import annotations

from typing import Any

from services.kube.client import STRATEGIC_MERGE_PATCH, KubeClient
from services.kube.resources import pod_path


async def get_pod(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    """The pod's API JSON, or None when it does not exist.

    Raises:
        KubeError subclasses other than KubeNotFound (`KubeClient.get_if_exists`).
    """
    return await client.get_if_exists(pod_path(namespace, name))


def binding_body(
    namespace: str, name: str, uid: str, node: str, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """The v1 Binding of pod `namespace/name` (uid precondition `uid`) to `node`.

    Source: the API server checks `metadata.uid` of a Binding as a precondition on the pod
    (BindingREST.assignPod), so a pod replaced under the same name is never bound; it copies
    the Binding's `metadata.annotations` onto the pod in the same write as `spec.nodeName`.
    """
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


async def bind(
    client: KubeClient, namespace: str, name: str, uid: str, node: str, *,
    annotations: dict[str, str] | None = None,
) -> None:
    """Bind the pod to `node` (POST `pods/<name>/binding`), setting `annotations` on it in the
    same write; the HTTP status is checked here.

    Raises:
        KubeConflict: the uid differs, the pod is already assigned to a node, is being deleted
            or is scheduling-gated (the API server answers all of these with 409).
        KubeNotFound: no such pod. KubeForbidden: no `pods/binding` create permission.
        KubeUnavailable: transient (429, 5xx, timeout): the binding may or may not have
            been stored; re-read the pod before concluding.
    """
    body = binding_body(namespace, name, uid, node, annotations)
    await client.request("POST", pod_path(namespace, name, "binding"), body=body)


async def delete_pod(client: KubeClient, namespace: str, name: str, uid: str) -> None:
    """Delete the pod if it still has `uid` (its controller, if any, recreates it).

    Raises:
        KubeNotFound: already gone. KubeConflict: the name now belongs to another pod.
        Other KubeError subclasses.
    """
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
    await client.request("DELETE", pod_path(namespace, name), body=body)


async def patch_pod_status(
    client: KubeClient, namespace: str, name: str, uid: str, status: dict[str, Any]
) -> dict[str, Any]:
    """Strategic-merge `status` into the pod's status subresource (conditions merge by type);
    returns the pod as stored after the patch (one request, no read before it).

    `uid` is sent in the patch, so a pod replaced under the same name is refused: the API
    server answers 422 `metadata.uid: field is immutable` (pods/status keeps the uid of the
    patch; verified on v1.36 by tests/e2e/test_binder_requests.py).
    Raises:
        KubeNotFound, KubeConflict or KubeInvalid when the pod is gone or replaced; other
        KubeError subclasses.
    """
    body = {"metadata": {"uid": uid}, "status": status}
    return await client.request(
        "PATCH", pod_path(namespace, name, "status"), body=body, content_type=STRATEGIC_MERGE_PATCH
    )
