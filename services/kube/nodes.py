"""Node reads for the binder's pre-bind validation and its post-bind existence check.

Layer: kube. One API request per call; never retries.
"""

from __future__ import annotations

from typing import Any

from services.kube.client import PARTIAL_OBJECT_METADATA, KubeClient
from services.kube.resources import node_path


async def get_node(client: KubeClient, name: str) -> dict[str, Any] | None:
    """The node's API JSON, or None when it does not exist.

    Raises:
        KubeError subclasses other than KubeNotFound (`KubeClient.get_if_exists`).
    """
    return await client.get_if_exists(node_path(name))


async def node_exists(client: KubeClient, name: str) -> bool:
    """Whether the API server has the node `name` now (a 404 is False).

    Asks for its metadata only (a `PartialObjectMetadata`, as client-go's metadata client
    does), so the API server encodes and sends no spec and no status: a node's images list
    alone is kilobytes.
    Raises:
        KubeError subclasses other than KubeNotFound (`KubeClient.get_if_exists`).
    """
    return await client.get_if_exists(node_path(name), accept=PARTIAL_OBJECT_METADATA) is not None
