"""In-memory API server, publisher, status log and deliveries for binder tests; JSON builders."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from services.binder.validation import PLACEMENT_ANNOTATION
from services.contracts.decisions import StatusUpdate
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey
from services.kube import errors, volumes
from services.kube.events import ObjectRef
from services.kube.podgroups import StatusWrite

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


def make_node(name: str, *, is_ready: bool = True, unschedulable: bool = False,
              allocatable: dict[str, str] | None = None,
              hostname: str | None = None) -> dict[str, Any]:
    """A node's API JSON with a Ready condition (and `allocatable`, quantities by resource,
    when given) and, as kubelet sets it, the hostname label (`hostname`, default the node's
    name)."""
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True" if is_ready
                                              else "False"}]}
    if allocatable is not None:
        status["allocatable"] = allocatable
    return {
        "metadata": {"name": name, "uid": f"uid-{name}",
                     "labels": {"kubernetes.io/hostname": hostname or name}},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": status,
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
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.volumes: dict[str, dict[str, Any]] = {}
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

    async def node_exists(self, name: str) -> bool:
        self._fail("node_exists", name)
        return name in self.nodes

    async def nodes_listed(self, names: Sequence[str]) -> frozenset[str]:
        """As a LIST by hostname label: the nodes whose label `kubernetes.io/hostname` is
        one of `names`, by their own name, among `names`."""
        self._fail("nodes_listed", ",".join(names))
        return frozenset(
            name for name, node in self.nodes.items()
            if name in names
            and node["metadata"].get("labels", {}).get("kubernetes.io/hostname") in names)

    async def get_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._fail("get_claim", name)
        return self.claims.get((namespace, name))

    async def get_volume(self, name: str) -> dict[str, Any] | None:
        self._fail("get_volume", name)
        return self.volumes.get(name)

    async def pre_bind_volume(self, name: str, volume_version: str,
                              claim: dict[str, Any]) -> None:
        """As the API server takes `volumes.claim_ref_patch`: 404 when the volume is gone,
        409 when it changed since `volume_version`; else the patch is merged in."""
        self._fail("pre_bind_volume", name)
        volume = self.volumes.get(name)
        if volume is None:
            raise errors.KubeNotFound(f"persistentvolumes {name} not found", status=404)
        if volume["metadata"].get("resourceVersion") != volume_version:
            raise errors.KubeConflict("the object has been modified", status=409)
        patch = volumes.claim_ref_patch(volume_version, claim)
        volume["metadata"].setdefault("annotations", {}).update(
            patch["metadata"]["annotations"])
        volume.setdefault("spec", {}).update(patch["spec"])

    async def select_node(self, namespace: str, name: str, uid: str, node: str) -> None:
        """As the API server takes `volumes.select_node`'s patch: 404 when the claim is gone,
        409 when another uid holds its name; else it is annotated."""
        self._fail("select_node", name)
        claim = self.claims.get((namespace, name))
        if claim is None:
            raise errors.KubeNotFound(f"persistentvolumeclaims {name} not found", status=404)
        if claim["metadata"].get("uid") != uid:
            raise errors.KubeConflict("Precondition failed: UID", status=409)
        claim["metadata"].setdefault("annotations", {})[volumes.SELECTED_NODE] = node

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
    ) -> dict[str, Any]:
        """As the API server: 404 when gone, 422 for another uid; conditions merge by type."""
        self._fail("patch_pod_status", name)
        pod = self.pods.get((namespace, name))
        if pod is None:
            raise errors.KubeNotFound(f"pods {name} not found", status=404)
        if pod["metadata"]["uid"] != uid:
            raise errors.KubeInvalid("metadata.uid: field is immutable", status=422)
        self.status_patches.append((name, status))
        current = pod.setdefault("status", {})
        for key, value in status.items():
            if key != "conditions":
                current[key] = value
                continue
            merged = {c["type"]: c for c in current.get("conditions") or []}  # merged by type
            for condition in value:
                entry = {**merged.get(condition["type"], {}), **condition}
                merged[condition["type"]] = {k: v for k, v in entry.items() if v is not None}
            current["conditions"] = list(merged.values())
        return pod

    def add_podgroup(self, namespace: str, name: str, uid: str = "pg-uid",
                     api_version: str = "scheduling.x-k8s.io/v1alpha1") -> dict[str, Any]:
        """A new PodGroup (no status, generation 1, resourceVersion 1)."""
        podgroup = {"apiVersion": api_version, "metadata": {
            "namespace": namespace, "name": name, "uid": uid, "generation": 1,
            "resourceVersion": "1"}}
        self.podgroups[(namespace, name)] = podgroup
        return podgroup

    def _podgroup(self, namespace: str, name: str) -> dict[str, Any]:
        podgroup = self.podgroups.get((namespace, name))
        if podgroup is None:
            raise errors.KubeNotFound("no podgroup", status=404)
        return podgroup

    def _store_status(self, podgroup: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        meta = podgroup["metadata"]
        meta["resourceVersion"] = str(int(meta.get("resourceVersion") or 0) + 1)
        podgroup.setdefault("status", {}).update(status)
        return copy.deepcopy(podgroup)

    async def update_podgroup_status(
        self, namespace: str, name: str,
        change: Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]],
        uid: str | None = None,
    ) -> StatusWrite:
        """As `podgroups.update_status`: a read (`get_podgroup`), then a write."""
        self._fail("update_podgroup_status", name)
        podgroup = self._podgroup(namespace, name)
        self.calls.append(("get_podgroup", name))
        if uid is not None and podgroup["metadata"]["uid"] != uid:
            raise errors.KubeConflict("recreated", status=409)
        patch = await change(copy.deepcopy(podgroup))
        if patch is None:
            return StatusWrite(False, copy.deepcopy(podgroup))
        return StatusWrite(True, self._store_status(podgroup, patch))

    async def patch_podgroup_status_at(
        self, podgroup: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        """As the API server: 409 unless the stored resourceVersion is the one given."""
        meta = podgroup["metadata"]
        self._fail("patch_podgroup_status_at", meta["name"])
        stored = self._podgroup(meta["namespace"], meta["name"])
        if stored["metadata"]["resourceVersion"] != meta["resourceVersion"]:
            raise errors.KubeConflict("the object has been modified", status=409)
        return self._store_status(stored, status)

    async def first_podgroup_status(
        self, podgroup: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        """As the API server's JSON patch: 422 unless uid and generation match, no status."""
        meta = podgroup["metadata"]
        self._fail("first_podgroup_status", meta["name"])
        stored = self._podgroup(meta["namespace"], meta["name"])
        held = stored["metadata"]
        if (held["uid"], held.get("generation")) != (meta["uid"], meta["generation"]) or (
                "status" in stored):
            raise errors.KubeInvalid("test failed", status=422)
        return self._store_status(stored, status)

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
class FakeStatusLog:
    """`reporter.StatusLog` in memory: the StatusUpdates published, in stream order."""

    published: list[StatusUpdate] = field(default_factory=list)

    async def latest(self, group: str) -> StatusUpdate | None:
        """The last StatusUpdate published for `group`, as `status_log.StreamStatusLog`."""
        return next((update for update in reversed(self.published) if update.group == group),
                    None)


class _Signed(dict[str, str]):
    """`FakeDelivery`'s default headers, replaced by the signature of its subject and data
    (headers given, even none, are kept as given: a forged or unsigned decision)."""


@dataclass
class FakeDelivery:
    """A fetched decision, signed with `DECISION_KEY` unless `headers` are given; records how
    it was settled, and counts its in-progress reports (`beats`)."""

    data: bytes
    seq: int = 1
    subject: str = "gangsched.decisions.Placement.default.g"
    num_delivered: int = 1
    num_pending: int = 0
    settled: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=lambda: _Signed())
    beats: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.headers, _Signed):
            self.headers = {SIGNATURE_HEADER: DECISION_KEY.sign(self.subject, self.data)}

    async def ack(self) -> None:
        self.settled.append("ack")

    async def nak(self, delay_seconds: float | None = None) -> None:
        self.settled.append("nak")

    async def term(self) -> None:
        self.settled.append("term")

    async def in_progress(self) -> None:
        self.beats += 1
