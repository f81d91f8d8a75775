"""gangsched's verdict on one pod, through its own code path: the watcher's `slim`, `volumes`,
`attachments` and `namespaces` turn the listed API objects (nodes, bound pods, claims, volumes,
storage classes, CSINodes, VolumeAttachments, namespaces) into events, and the engine
`gangsched simulate` runs (`planner.simulate.engine`, the production planner core with an
ideal binder) plans the pod as a gang of one.

`judge` answers two questions: where would gangsched place the pod, else why not (the
`0/N nodes are available: ...` reason); and `feasible_on`: would it place it on a given node.
The second runs the planner on the same state with every other node made not Ready (pods on
them still count for inter-pod affinity), so the only placement left is that node.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from services.contracts.events import Event, NodeObserved, PodObserved
from services.planner.core.config import PlannerConfig
from services.planner.simulate import engine
from services.watcher import attachments, namespaces, slim, volumes

CONFIG = PlannerConfig()
AT_MS = 1_000_000
OBSERVED: dict[str, Callable[[dict[str, Any], int], Event]] = {
    "node": slim.node_event, "pod": slim.pod_event, "pvc": volumes.claim_event,
    "pv": volumes.volume_event, "storageclass": volumes.storage_class_event,
    "namespace": namespaces.namespace_event, "csinode": attachments.csinode_event,
    "attachment": attachments.attachment_event}
"""The watcher's slimming function per resource kind (`services.kube.resources` kinds)."""
STORAGE_KINDS = ("pvc", "pv", "storageclass", "csinode", "attachment")


@dataclass(frozen=True)
class Snapshot:
    """What gangsched judges a pod on: the Node objects, the pods bound to a node (API objects
    with `spec.nodeName`), per storage kind (STORAGE_KINDS) its API objects, and the
    Namespace objects (their labels: what a `namespaceSelector` reads)."""

    nodes: list[dict[str, Any]]
    bound: list[dict[str, Any]]
    storage: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    namespaces: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    """Where gangsched places the pod (`node`), else why it does not (`reason`)."""

    node: str | None
    reason: str | None


class Slimmer:
    """The watcher's events for API objects, cached by uid and resourceVersion."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str, str], Event] = {}

    def event(self, kind: str, obj: dict[str, Any]) -> Event:
        meta = obj["metadata"]
        key = (kind, meta.get("uid", ""), meta.get("resourceVersion", ""))
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = OBSERVED[kind](obj, AT_MS)
        return cached

    def storage(self, snapshot: Snapshot) -> list[Event]:
        """The snapshot's claims, volumes and storage classes as events, and its namespaces."""
        return [*(self.event(kind, obj) for kind in STORAGE_KINDS
                  for obj in snapshot.storage.get(kind, [])),
                *(self.event("namespace", obj) for obj in snapshot.namespaces)]


def as_ours(pod: dict[str, Any]) -> dict[str, Any]:
    """The candidate pod as one of gangsched's (`spec.schedulerName`), unbound."""
    ours = copy.deepcopy(pod)
    ours["spec"]["schedulerName"] = CONFIG.scheduler_name
    ours["spec"].pop("nodeName", None)
    ours["metadata"].setdefault("uid", f"candidate-{ours['metadata']['name']}")
    ours["metadata"].setdefault("resourceVersion", "0")
    return ours


def _run(nodes: Sequence[Event], pods: Sequence[Event], candidate: Event) -> Verdict:
    assert isinstance(candidate, PodObserved)  # `slimmer.event("pod", ...)`
    arrivals = [engine.Arrival(at_ms=AT_MS, event=event) for event in (*nodes, *pods, candidate)]
    result = engine.run(arrivals, CONFIG)
    outcome = result.pods[candidate.uid]
    return Verdict(node=outcome.node, reason=outcome.reason)


def judge(slimmer: Slimmer, snapshot: Snapshot, pod: dict[str, Any]) -> Verdict:
    """gangsched's placement of `pod` (an admitted API object) on the `snapshot`."""
    return _run([slimmer.event("node", node) for node in snapshot.nodes],
                [*slimmer.storage(snapshot),
                 *(slimmer.event("pod", other) for other in snapshot.bound)],
                slimmer.event("pod", as_ours(pod)))


def feasible_on(slimmer: Slimmer, snapshot: Snapshot, pod: dict[str, Any],
                name: str) -> Verdict:
    """gangsched's placement of `pod` when node `name` is the only Ready node (module
    docstring): placed there iff every filter passes on it."""
    events = []
    for node in snapshot.nodes:
        event = slimmer.event("node", node)
        assert isinstance(event, NodeObserved)
        events.append(event if event.name == name
                      else msgspec.structs.replace(event, is_ready=False))
    return _run(events, [*slimmer.storage(snapshot),
                         *(slimmer.event("pod", other) for other in snapshot.bound)],
                slimmer.event("pod", as_ours(pod)))
