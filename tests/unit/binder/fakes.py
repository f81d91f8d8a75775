"""In-memory API server, publisher and deliveries for binder tests, and JSON builders."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from services.binder.validation import PLACEMENT_ANNOTATION
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey
from services.kube import errors
from services.kube.events import ObjectRef

DECISION_KEY = DecisionKey(b"k" * 32)
"""The key the planner of these tests signs with and their binders check with."""
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid",
         "controller": True}


def make_pod(
    name: str,
    *,
    uid: str | None = None,
    node: str | None = None,
    scheduler: str = "gangsched",
    owned: bool = True,
    namespace: str = "default",
    bound_by: str | None = None,
) -> dict[str, Any]:
    """A pod's API JSON; uid `uid-<name>` by default; owned by a ReplicaSet unless not `owned`;
    `bound_by`: the placement whose binding stamped it (as the API server copies a Binding's
    annotations onto the pod)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    if owned:
        meta["ownerReferences"] = [OWNER]
    if bound_by is not None:
        meta["annotations"] = {PLACEMENT_ANNOTATION: bound_by}
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def make_node(name: str, *, is_ready: bool = True, unschedulable: bool = False) -> dict[str, Any]:
    """A node's API JSON with a Ready condition."""
    status = "True" if is_ready else "False"
    return {
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {"conditions": [{"type": "Ready", "status": status}]},
    }


@dataclass
class Written:
    """An event the fake API server received."""

    about: ObjectRef
    event_type: str
    reason: str
    message: str


class FakeKube:
    """Pods, nodes and PodGroups in dicts; `failures[(op, name)]` scripts errors, in order."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.podgroups: dict[tuple[str, str], dict[str, Any]] = {}
        self.failures: dict[tuple[str, str], list[Exception]] = {}
        self.calls: list[tuple[str, str]] = []
        self.events: list[Written] = []
        self.deleted: list[str] = []
        self.status_patches: list[tuple[str, dict[str, Any]]] = []
        self.lose_bind_answers: set[str] = set()

    def add_pod(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.pods[(meta["namespace"], meta["name"])] = pod

    def add_node(self, node: dict[str, Any]) -> None:
        self.nodes[node["metadata"]["name"]] = node

    def node_of(self, name: str, namespace: str = "default") -> str | None:
        pod = self.pods.get((namespace, name))
        return None if pod is None else pod["spec"].get("nodeName")

    def _fail(self, op: str, name: str) -> None:
        self.calls.append((op, name))
        queue = self.failures.get((op, name))
        if queue:
            raise queue.pop(0)

    async def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._fail("get_pod", name)
        return self.pods.get((namespace, name))

    async def get_node(self, name: str) -> dict[str, Any] | None:
        self._fail("get_node", name)
        return self.nodes.get(name)

    async def get_podgroup(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._fail("get_podgroup", name)
        return self.podgroups.get((namespace, name))

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, *, annotations: dict[str, str]
    ) -> None:
        self._fail("bind", name)
        pod = self.pods.get((namespace, name))
        if pod is None:
            raise errors.KubeNotFound(f"pods {name} not found", status=404)
        if pod["metadata"]["uid"] != uid:
            raise errors.KubeConflict("Precondition failed: UID", status=409)
        if pod["spec"].get("nodeName"):
            raise errors.KubeConflict(f"pod {name} is already assigned", status=409)
        pod["spec"]["nodeName"] = node
        pod["metadata"].setdefault("annotations", {}).update(annotations)
        if name in self.lose_bind_answers:
            self.lose_bind_answers.discard(name)
            raise errors.KubeUnavailable("timeout (the bind was stored)")

    async def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        self._fail("delete_pod", name)
        pod = self.pods.get((namespace, name))
        if pod is None:
            raise errors.KubeNotFound("gone", status=404)
        if pod["metadata"]["uid"] != uid:
            raise errors.KubeConflict("uid", status=409)
        del self.pods[(namespace, name)]
        self.deleted.append(name)

    async def patch_pod_status(
        self, namespace: str, name: str, uid: str, status: dict[str, Any]
    ) -> None:
        self._fail("patch_pod_status", name)
        pod = self.pods.get((namespace, name))
        if pod is None:
            raise errors.KubeNotFound(f"pods {name} not found", status=404)
        if pod["metadata"]["uid"] != uid:
            raise errors.KubeConflict("uid", status=409)
        self.status_patches.append((name, status))
        current = pod.setdefault("status", {})
        for key, value in status.items():
            if key != "conditions":
                current[key] = value
                continue
            types = {condition["type"] for condition in value}  # merged by type
            current["conditions"] = [c for c in current.get("conditions") or []
                                     if c["type"] not in types] + list(value)

    async def update_podgroup_status(
        self, namespace: str, name: str,
        change: Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]],
    ) -> bool:
        self._fail("update_podgroup_status", name)
        podgroup = self.podgroups.get((namespace, name))
        if podgroup is None:
            raise errors.KubeNotFound("no podgroup", status=404)
        patch = await change(podgroup)
        if patch is None:
            return False
        podgroup.setdefault("status", {}).update(patch)
        return True

    async def create_event(
        self, about: ObjectRef, *, event_type: str, reason: str, message: str, action: str,
        now: datetime,
    ) -> None:
        self._fail("create_event", about.name)
        self.events.append(Written(about, event_type, reason, message))


@dataclass
class FakePublisher:
    """Records what was published, in order."""

    published: list[tuple[str, bytes, str]] = field(default_factory=list)
    headers: list[dict[str, str] | None] = field(default_factory=list)

    async def publish(
        self, subject: str, data: bytes, *, msg_id: str, headers: dict[str, str] | None = None
    ) -> int:
        self.published.append((subject, data, msg_id))
        self.headers.append(headers)
        return len(self.published)

    async def publish_many(self, items: Sequence[tuple[str, bytes, str]]) -> None:
        for subject, data, msg_id in items:
            await self.publish(subject, data, msg_id=msg_id)


@dataclass
class FakeDelivery:
    """A fetched decision, signed with `DECISION_KEY` unless `headers` are given; records how
    it was settled."""

    data: bytes
    seq: int = 1
    subject: str = "gangsched.decisions.Placement.default.g"
    num_delivered: int = 1
    num_pending: int = 0
    settled: list[str] = field(default_factory=list)
    headers: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if self.headers is None:
            self.headers = {SIGNATURE_HEADER: DECISION_KEY.sign(self.subject, self.data)}

    async def ack(self) -> None:
        self.settled.append("ack")

    async def nak(self, delay_seconds: float | None = None) -> None:
        self.settled.append("nak")

    async def term(self) -> None:
        self.settled.append("term")
