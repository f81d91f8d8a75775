"""Small kubectl-based readers for end-to-end assertions (pods, events, PodGroups)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import yaml

from tests.cluster.fixture import ControlPlane

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO_NODE = Path(__file__).resolve().parents[1] / "cluster" / "demo-node.yaml"
"""The seed examples the repository ships (the acceptance cases of the README's demo)."""


class Kubectl(Protocol):
    """What the tests need of the control plane fixture."""

    def kubectl(self, *args: str, input: str | None = None) -> str: ...


def get_json(cp: Kubectl, *args: str) -> dict[str, Any]:
    """`kubectl get ... -o json` parsed."""
    result: dict[str, Any] = json.loads(cp.kubectl("get", *args, "-o", "json"))
    return result


def pods(cp: Kubectl, namespace: str) -> list[dict[str, Any]]:
    """Every pod of `namespace` that is not being deleted."""
    items = get_json(cp, "pods", "-n", namespace)["items"]
    return [pod for pod in items if not pod["metadata"].get("deletionTimestamp")]


def bound(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods with `spec.nodeName` set."""
    return [pod for pod in items if pod["spec"].get("nodeName")]


def running(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods in phase Running."""
    return [pod for pod in items if pod.get("status", {}).get("phase") == "Running"]


def events(cp: Kubectl, namespace: str, reason: str) -> list[dict[str, Any]]:
    """Events of `namespace` with `reason`."""
    items: list[dict[str, Any]] = get_json(cp, "events", "-n", namespace)["items"]
    return [event for event in items if event.get("reason") == reason]


def example_documents(name: str, namespace: str, *, min_member: int | None = None,
                      skip_kinds: tuple[str, ...] = ("Node",)) -> str:
    """A seed example as YAML, moved into `namespace` (optionally with another minMember)."""
    documents = [doc for doc in yaml.safe_load_all((EXAMPLES / name).read_text()) if doc]
    kept = []
    for document in documents:
        if document["kind"] in skip_kinds:
            continue
        document["metadata"]["namespace"] = namespace
        if document["kind"] == "PodGroup" and min_member is not None:
            document["spec"]["minMember"] = min_member
        kept.append(document)
    return yaml.safe_dump_all(kept)


def demo_node() -> dict[str, Any]:
    """The Node of `make demo` and of the seed example's simulation (tests/cluster/demo-node.yaml;
    the examples a user applies hold no Node)."""
    node: dict[str, Any] = yaml.safe_load(DEMO_NODE.read_text())
    return node


@contextlib.contextmanager
def fresh_namespace(cp: Kubectl, prefix: str) -> Iterator[str]:
    """A namespace `<prefix>-<random>` for one test, deleted (without waiting) after it."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cp.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        cp.kubectl("delete", "namespace", name, "--wait=false")


def token_kubeconfig(cp: ControlPlane, path: Path, token: str) -> Path:
    """Write a kubeconfig with only the API server, its CA and a ServiceAccount `token`."""
    return user_kubeconfig(cp, path, {"token": token})


def user_kubeconfig(cp: ControlPlane, path: Path, user: dict[str, Any]) -> Path:
    """Write a kubeconfig with only the API server, its CA and the credentials `user` (a
    kubeconfig `user` entry: `token`, `exec`, ...)."""
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "testbed", "cluster": {
            "server": cp.server, "certificate-authority": str(cp.ca_file)}}],
        "users": [{"name": "sa", "user": user}],
        "contexts": [{"name": "sa", "context": {"cluster": "testbed", "user": "sa"}}],
    }
    path.write_text(yaml.safe_dump(config))
    return path
