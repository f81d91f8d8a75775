"""The binder's view of pods and nodes, built from the watcher's events on the bus.

Layer: binder, pure: events in (with their EVENTS stream sequence), lookups out; no I/O.
The pre-bind survey reads members and nodes from here instead of one API GET per pod and per
node (two thirds of the binder's API calls before). It is used only once it has applied the
placement's plan point (so it is never older than what the planner saw), and only for objects
it holds: an object it does not know (not yet seen, deleted, or older than the stream's
retention) is read from the API as before. The objects are shown as the API shows the fields
`validation.check_member` reads, so one set of rules judges both.
"""

from __future__ import annotations

from typing import Any

from services.contracts.events import (
    Event,
    NodeDeleted,
    NodeObserved,
    PodDeleted,
    PodObserved,
    Toleration,
)


class ClusterView:
    """Latest observed pods (by namespace and name) and nodes (by name).

    Shapes: `applied_seq` is the EVENTS stream sequence of the last event applied (0: none).
    """

    def __init__(self) -> None:
        self._pods: dict[tuple[str, str], PodObserved] = {}
        self._nodes: dict[str, NodeObserved] = {}
        self.applied_seq = 0

    def __len__(self) -> int:
        return len(self._pods) + len(self._nodes)

    def apply(self, seq: int, event: Event) -> None:
        """Apply one event at stream sequence `seq` (any other event type only moves the seq)."""
        if isinstance(event, PodObserved):
            self._pods[(event.namespace, event.name)] = event
        elif isinstance(event, PodDeleted):
            known = self._pods.get((event.namespace, event.name))
            if known is not None and known.uid == event.uid:
                del self._pods[(event.namespace, event.name)]
        elif isinstance(event, NodeObserved):
            self._nodes[event.name] = event
        elif isinstance(event, NodeDeleted):
            node = self._nodes.get(event.name)
            if node is not None and node.uid == event.uid:
                del self._nodes[event.name]
        self.applied_seq = max(self.applied_seq, seq)

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod as the API would show the fields the survey checks; None when unknown."""
        pod = self._pods.get((namespace, name))
        return pod_as_api(pod) if pod is not None else None

    def node(self, name: str) -> dict[str, Any] | None:
        """The node as the API would show the fields the survey checks; None when unknown."""
        node = self._nodes.get(name)
        return node_as_api(node) if node is not None else None


def pod_as_api(pod: PodObserved) -> dict[str, Any]:
    """The API JSON fields of `pod` that `validation` reads: uid, deletion, node, scheduler,
    gates (one placeholder gate when gated), tolerations and phase."""
    spec: dict[str, Any] = {
        "schedulerName": pod.scheduler_name,
        "tolerations": [_toleration(t) for t in pod.tolerations],
    }
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    if pod.is_scheduling_gated:
        spec["schedulingGates"] = [{"name": "gated"}]
    metadata: dict[str, Any] = {"uid": pod.uid, "namespace": pod.namespace, "name": pod.name}
    if pod.is_deleting:
        metadata["deletionTimestamp"] = "deleting"
    return {"metadata": metadata, "spec": spec, "status": {"phase": pod.phase}}


def node_as_api(node: NodeObserved) -> dict[str, Any]:
    """The API JSON fields of `node` that `validation` reads: cordon and the Ready condition."""
    ready = {"type": "Ready", "status": "True" if node.is_ready else "False"}
    return {"metadata": {"name": node.name, "uid": node.uid},
            "spec": {"unschedulable": node.is_unschedulable},
            "status": {"conditions": [ready]}}


def _toleration(toleration: Toleration) -> dict[str, str]:
    return {"key": toleration.key, "operator": toleration.operator, "value": toleration.value,
            "effect": toleration.effect}
