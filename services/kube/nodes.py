"""Node reads for the binder's pre-bind validation.

Layer: kube. One API request per call; never retries.
"""

from __future__ import annotations

from typing import Any

from services.kube.client import KubeClient
from services.kube.resources import node_path


async def get_node(client: KubeClient, name: str) -> dict[str, Any] | None:
    """The node's API JSON, or None when it does not exist.

    Raises:
        KubeError subclasses other than KubeNotFound (`KubeClient.get_if_exists`).
    """
    return await client.get_if_exists(node_path(name))
