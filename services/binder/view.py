"""The binder's view of pods, nodes and PodGroups, built from the watcher's events on the bus.

Layer: binder, pure: events in (with their EVENTS stream sequence), lookups out; no I/O.
The pre-bind survey reads members and nodes from here instead of one API GET per pod and per
node (two thirds of the binder's API calls before). It is used only once it has applied the
placement's plan point (so it is never older than what the planner saw), and only for objects
it holds: an object it does not know (not yet seen, deleted, or older than the stream's
retention) is read from the API as before. The objects are shown as the API shows the fields
`validation.check_member` reads, so one set of rules judges both. The reporter asks it which
pods are bound or replaced (to skip their rejection without a GET) and which uid and API a
PodGroup has (to write its first status and its events without a GET).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

from services.contracts import resources, versions
from services.contracts.events import (
    Event,
    NodeDeleted,
    NodeObserved,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
    Toleration,
)
from services.contracts.usage import uses_capacity
from services.fit import filters

BURIED_UIDS = 65536
"""Deleted uids remembered so a late observation cannot bring them back (bounded: the
oldest is forgotten first; the planner keeps them 10 minutes of event time)."""


Observed = PodObserved | NodeObserved | PodGroupObserved


class _Taken(NamedTuple):
    """A member a placement of this binder claimed room for (`ClusterView.claim`): the
    placement's id, the node, and the member's requests (gangsched units)."""

    placement: str
    node: str
    requests: resources.ResourceList


class ClusterView:
    """Latest observed pods and PodGroups (by namespace and name) and nodes (by name).

    Shapes: `applied_seq` is the EVENTS stream sequence of the last event applied (0: none).
    """

    def __init__(self) -> None:
        self._pods: dict[tuple[str, str], PodObserved] = {}
        self._nodes: dict[str, NodeObserved] = {}
        self._groups: dict[tuple[str, str], PodGroupObserved] = {}
        self._used: dict[str, dict[str, int]] = {}
        self._buried: dict[str, None] = {}
        self._taken: dict[tuple[str, str], _Taken] = {}
        self._taken_on: dict[str, set[tuple[str, str]]] = {}
        """The members `_taken` holds, by node (what `claim` adds up for one node)."""
        self.applied_seq = 0

    def __len__(self) -> int:
        return len(self._pods) + len(self._nodes) + len(self._groups)

    def apply(self, seq: int, event: Event) -> None:
        """Apply one event at stream sequence `seq` (any other event type only moves the seq)."""
        if isinstance(event, PodObserved):
            held = self._pods.get((event.namespace, event.name))
            if self._is_current(event.uid, held, event):
                self._count(held, -1)
                self._pods[(event.namespace, event.name)] = event
                self._count(event, 1)
                if event.node_name is not None or not uses_capacity(event):
                    self._drop_taken((event.namespace, event.name))  # `_used` has it now
        elif isinstance(event, PodDeleted):
            self._bury(event.uid)
            self._drop_taken((event.namespace, event.name))
            known = self._pods.get((event.namespace, event.name))
            if known is not None and known.uid == event.uid:
                self._count(known, -1)
                del self._pods[(event.namespace, event.name)]
        elif isinstance(event, NodeObserved):
            if self._is_current(event.uid, self._nodes.get(event.name), event):
                self._nodes[event.name] = event
        elif isinstance(event, NodeDeleted):
            self._bury(event.uid)
            node = self._nodes.get(event.name)
            if node is not None and node.uid == event.uid:
                del self._nodes[event.name]
        elif isinstance(event, PodGroupObserved | PodGroupDeleted):
            self._apply_group(event)
        self.applied_seq = max(self.applied_seq, seq)

    def _apply_group(self, event: PodGroupObserved | PodGroupDeleted) -> None:
        key = (event.namespace, event.name)
        if isinstance(event, PodGroupObserved):
            if self._is_current(event.uid, self._groups.get(key), event):
                self._groups[key] = event
            return
        self._bury(event.uid)
        known = self._groups.get(key)
        if known is not None and known.uid == event.uid:
            del self._groups[key]

    def _is_current(self, uid: str, held: Observed | None, seen: Observed) -> bool:
        """Whether an observation is not a late one, by the planner's rule (`planner.core.apply`):
        not of an object deleted recently, not older than the one held (both decimal
        resourceVersions). A second watcher's resync can publish an old version late."""
        if uid in self._buried:
            return False
        if held is None or held.uid != uid:
            return True
        return not versions.is_older(seen.resource_version, held.resource_version)

    def _bury(self, uid: str) -> None:
        """Remember a deleted uid (the last BURIED_UIDS of them)."""
        self._buried[uid] = None
        while len(self._buried) > BURIED_UIDS:
            del self._buried[next(iter(self._buried))]

    def claim(self, node_name: str, members: Sequence[tuple[str, str]],
              placement: str) -> str | None:
        """Why binding `members` (namespace, name) of `placement` to `node_name` would
        over-commit it, or None, and then their requests are held there for `placement`.

        Judged by every pod the view sees bound there (whichever scheduler bound it) and the
        members other placements of this binder hold there (claimed and not yet seen bound:
        the watch trails the binds); members already bound there, and members or nodes the
        view does not hold, add nothing (the API server and the planner vouch for those).
        A member's hold ends when the view sees it bound (then its use counts) or deleted,
        or when `release` says its placement left it unbound. Check and hold are one step
        (no await), so two placements running at once cannot both take the last room.
        Rule: count every bound pod, and re-check just before binding; kube-scheduler's
        NodeResourcesFit with its assumed pods (`cache.AssumePod`).
        """
        node = self._nodes.get(node_name)
        if node is None:
            return None
        extra: dict[str, int] = {}
        claims: dict[tuple[str, str], _Taken] = {}
        for key in members:
            pod = self._pods.get(key)
            if pod is not None and pod.node_name is None:
                extra = resources.add(extra, pod.requests)
                claims[key] = _Taken(placement, node_name, pod.requests)
        used = dict(self._used.get(node_name, {}))
        for key in self._taken_on.get(node_name, ()):
            taken = self._taken[key]
            if taken.placement != placement and key not in claims:
                used = resources.add(used, taken.requests)
        for name, amount in sorted(extra.items()):
            free = node.allocatable.get(name, 0) - used.get(name, 0)
            if amount > 0 and amount > free:  # a zero request fits anywhere, as the planner says
                return (f"it has {resources.format_amount(name, max(free, 0))} {name} free "
                        f"(other pods were bound there meanwhile) and the members "
                        f"planned there request {resources.format_amount(name, amount)} {name}")
        for key, taken in claims.items():
            self._drop_taken(key)
            self._taken[key] = taken
            self._taken_on.setdefault(node_name, set()).add(key)
        return None

    def release(self, placement: str, bound: Collection[tuple[str, str]]) -> None:
        """End the holds of `placement`'s members (`claim`) but those of `bound` (namespace,
        name), which it left bound: those end when the view sees them bound or deleted."""
        for key in [key for key, taken in self._taken.items()
                    if taken.placement == placement and key not in bound]:
            self._drop_taken(key)

    def _drop_taken(self, key: tuple[str, str]) -> None:
        """End the hold of the member `key` (namespace, name), if any."""
        taken = self._taken.pop(key, None)
        if taken is not None:
            on_node = self._taken_on[taken.node]
            on_node.discard(key)
            if not on_node:
                del self._taken_on[taken.node]

    def misfit(self, namespace: str, name: str, node_name: str) -> str | None:
        """Why the pod `namespace/name` may not go to `node_name` by the filters that read only
        the pod and the node, other than resource fit (readiness, cordon, spec.nodeName,
        taints/tolerations, node affinity and nodeSelector, then the node features it
        requires), or None: the same rules, in the same order, the planner placed by
        (`services.fit.filters.static_reason`, then `node_declared_features`); None too when
        the view lacks either object. Source: kube-scheduler's NodeUnschedulable, NodeName,
        TaintToleration, NodeAffinity and, last, NodeDeclaredFeatures.
        """
        pod, node = self._pods.get((namespace, name)), self._nodes.get(node_name)
        if pod is None or node is None:
            return None
        return filters.static_reason(pod, node) or filters.node_declared_features(pod, node)

    def _count(self, pod: PodObserved | None, sign: int) -> None:
        """Add (or take back) a pod's requests to its node's use, if it uses capacity."""
        if pod is None or pod.node_name is None or not uses_capacity(pod):
            return
        resources.accumulate(self._used, pod.node_name, pod.requests, sign)

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod as the API would show the fields the survey checks; None when unknown or
        bound (who bound a pod is proven only by the API object's annotations, which events
        do not carry, so a bound member is always read from the API)."""
        pod = self._pods.get((namespace, name))
        return pod_as_api(pod) if pod is not None and pod.node_name is None else None

    def is_settled(self, namespace: str, name: str, uid: str) -> bool:
        """Whether the pod `uid` is known bound, deleted, or replaced by another pod under its
        name (nothing more to report about it as unschedulable); False when unknown."""
        if uid in self._buried:
            return True
        pod = self._pods.get((namespace, name))
        return pod is not None and (pod.uid != uid or pod.node_name is not None)

    def podgroup(self, namespace: str, name: str) -> tuple[str, str] | None:
        """The (uid, apiVersion) of the PodGroup `namespace/name`, or None when unknown."""
        group = self._groups.get((namespace, name))
        return (group.uid, group.api_version) if group is not None else None

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
