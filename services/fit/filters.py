"""Placement filters for one pod on one node, named after the kube-scheduler plugins.

Layer: fit (pure; shared by the planner and the binder). Each filter returns None when the
node passes, else the per-node reason (wording from `services.fit.reasons`, as kube-scheduler's
FailedScheduling message). The resource filter is also evaluated vectorised over all nodes in
the planner's `capacity`; both must agree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from services.contracts.events import (
    HostPort,
    NodeObserved,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodObserved,
    Taint,
    Toleration,
)
from services.fit import reasons

HARD_EFFECTS = ("NoSchedule", "NoExecute")
SOFT_EFFECT = "PreferNoSchedule"
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
ALL_ADDRESSES = "0.0.0.0"
NODE_NAME_FIELD = "metadata.name"
_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def node_ready(node: NodeObserved) -> str | None:
    """The node's Ready condition is True (as the not-ready taint kube-scheduler relies on)."""
    return None if node.is_ready else reasons.NODE_NOT_READY


def node_unschedulable(pod: PodObserved, node: NodeObserved) -> str | None:
    """A cordoned node (`spec.unschedulable`) takes only pods tolerating its taint.

    Source: as NodeUnschedulable, which lets pods tolerating
    `node.kubernetes.io/unschedulable:NoSchedule` through.
    """
    if not node.is_unschedulable or tolerates(pod.tolerations, UNSCHEDULABLE_TAINT):
        return None
    return reasons.NODE_UNSCHEDULABLE


def node_name(pod: PodObserved, node: NodeObserved) -> str | None:
    """A pod naming a node (`spec.nodeName`) fits only that node (as NodeName)."""
    if pod.node_name is None or pod.node_name == node.name:
        return None
    return reasons.NODE_NAME_MISMATCH


def tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    """Whether any toleration tolerates `taint`.

    Source: as `v1.Toleration.ToleratesTaint`: effects match (empty tolerates all), keys match
    (empty key with Exists tolerates every key), and Exists, or Equal (or empty) with equal
    values; any other operator tolerates nothing (it used to be read as Equal).
    """
    for toleration in tolerations:
        if toleration.effect and toleration.effect != taint.effect:
            continue
        if toleration.key and toleration.key != taint.key:
            continue
        if toleration.operator == "Exists" or (toleration.operator in ("Equal", "")
                                               and toleration.value == taint.value):
            return True
    return False


def taint_toleration(pod: PodObserved, node: NodeObserved) -> str | None:
    """Every NoSchedule/NoExecute taint is tolerated; the first one that is not is the reason."""
    for taint in node.taints:
        if taint.effect in HARD_EFFECTS and not tolerates(pod.tolerations, taint):
            return reasons.UNTOLERATED_TAINT
    return None


def prefer_no_schedule_count(pod: PodObserved, node: NodeObserved) -> int:
    """How many PreferNoSchedule taints of the node the pod does not tolerate (scoring only)."""
    return sum(1 for taint in node.taints
               if taint.effect == SOFT_EFFECT and not tolerates(pod.tolerations, taint))


def requirement_matches(requirement: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    """One `matchExpressions` entry against node labels (In, NotIn, Exists, DoesNotExist, Gt, Lt).

    Source: as `labels.Requirement.Matches`: NotIn and DoesNotExist match an absent label; Gt/Lt
    compare integers and never match an absent or non-integer label.
    """
    operator, key = requirement.operator, requirement.key
    if operator == "In":
        return key in labels and labels[key] in requirement.values
    if operator == "NotIn":
        return key not in labels or labels[key] not in requirement.values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and key in labels and len(requirement.values) == 1:
        have, bound = parse_int64(labels[key]), parse_int64(requirement.values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def parse_int64(text: str) -> int | None:
    """`text` as Go's `strconv.ParseInt(text, 10, 64)` reads it, or None where that fails.

    Only an optional sign and ASCII digits, within int64 (Python's `int` also takes spaces,
    underscores and non-ASCII digits).
    """
    if _INT_RE.fullmatch(text) is None:
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def field_matches(requirement: NodeSelectorRequirement, node_name: str) -> bool:
    """One `matchFields` entry against the node's fields (only `metadata.name` exists).

    Source: as `nodeaffinity`'s field selector: In and NotIn with exactly one value compare the
    field (an unknown field reads as ""); any other operator or number of values is a parse
    error, and a term with one matches no node.
    """
    if requirement.operator not in ("In", "NotIn") or len(requirement.values) != 1:
        return False
    have = node_name if requirement.key == NODE_NAME_FIELD else ""
    return (have == requirement.values[0]) is (requirement.operator == "In")


def term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str = "") -> bool:
    """A node selector term: all its expressions (labels) and fields (`node_name`) ANDed; a
    term with neither matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    return (all(requirement_matches(requirement, labels)
                for requirement in term.match_expressions)
            and all(field_matches(requirement, node_name) for requirement in term.match_fields))


def node_affinity(pod: PodObserved, node: NodeObserved) -> str | None:
    """`nodeSelector` labels all equal, and one required node-affinity term (ORed) matches.

    Source: as NodeAffinity (required during scheduling, `matchExpressions` and `matchFields`;
    the preferred part is soft and is not evaluated).
    """
    labels = node.labels
    if any(labels.get(key) != value for key, value in pod.node_selector.items()):
        return reasons.NODE_AFFINITY_MISMATCH
    terms = pod.required_affinity
    if terms is not None and not any(term_matches(term, labels, node.name) for term in terms):
        return reasons.NODE_AFFINITY_MISMATCH
    return None


def ports_conflict(wanted: HostPort, used: HostPort) -> bool:
    """Whether two host ports collide: same port and protocol, and the same host IP or either
    one 0.0.0.0 (every address).

    Source: as NodePorts (`HostPortInfo.CheckConflict`; the watcher already defaulted an empty
    protocol to TCP and an empty host IP to 0.0.0.0).
    """
    return (wanted.port == used.port and wanted.protocol == used.protocol
            and (wanted.host_ip == used.host_ip or ALL_ADDRESSES in (wanted.host_ip,
                                                                     used.host_ip)))


def node_ports(wanted: tuple[HostPort, ...], used: tuple[HostPort, ...]) -> str | None:
    """None when none of the pod's host ports (`wanted`) collides with one in use on the node.

    Shapes: `used` the host ports of every pod bound or reserved on the node, whichever
    scheduler bound it (and, in a gang search, the members placed there before this one).
    Source: as NodePorts.
    """
    if any(ports_conflict(port, other) for port in wanted for other in used):
        return reasons.NODE_PORTS
    return None


def affinity_node_names(pod: PodObserved) -> frozenset[str] | None:
    """The node names the pod's required node affinity pins it to, or None (any node).

    Source: as NodeAffinity's PreFilter: only when every term has a `metadata.name` In field
    requirement; within a term those are ANDed (their values intersected), terms ORed (the
    union). An empty set means the terms conflict and no node can match.
    """
    terms = pod.required_affinity
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for requirement in term.match_fields:
            if requirement.key == NODE_NAME_FIELD and requirement.operator == "In":
                values = set(requirement.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


def node_affinity_prefilter(pod: PodObserved, node: NodeObserved) -> str | None:
    """None when NodeAffinity's PreFilter keeps the node for this pod (`affinity_node_names`);
    else the conflict (no node is kept) or the status of a node left out."""
    names = affinity_node_names(pod)
    if names is None or node.name in names:
        return None
    return reasons.NODE_AFFINITY_PREFILTER if names else reasons.NODE_AFFINITY_CONFLICT


def node_declared_features(pod: PodObserved, node: NodeObserved) -> str | None:
    """None when the node declares every feature the pod requires, else the reason.

    Shapes: `pod.required_features` and `node.declared_features` are feature names; only
    whether the first are all among the second matters (order and repeats do not).
    Source: NodeDeclaredFeatures (`nodedeclaredfeatures.go`): its PreFilter skips a pod that
    requires nothing (here: no set is built), its Filter refuses a node whose declared set
    (`ndf.TryMap` of `status.declaredFeatures`, features kube does not know dropped, which
    no pod requires anyway) lacks one, UnschedulableAndUnresolvable.
    """
    required = pod.required_features
    if not required or set(required).issubset(node.declared_features):
        return None
    return reasons.NODE_DECLARED_FEATURES


def static_reason(pod: PodObserved, node: NodeObserved) -> str | None:
    """The first filter other than resource fit that rejects the node, in kube-scheduler order
    (NodeAffinity's PreFilter before every filter), among those that run before NodePorts:
    NodeDeclaredFeatures, which runs after every other filter, is `node_declared_features`."""
    return (node_affinity_prefilter(pod, node) or node_ready(node)
            or node_unschedulable(pod, node) or node_name(pod, node)
            or taint_toleration(pod, node) or node_affinity(pod, node))
