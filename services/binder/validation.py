"""Pre-bind validation: is this member still bindable to its planned node, right now?

Layer: binder, pure: API JSON in, verdict out; no I/O, no clock. Mirrors the checks the API
server and kube-scheduler make before a bind, so the bind itself rarely fails and a gang is
rarely half-bound (a gang is bound all or nothing).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from services.contracts.decisions import Assignment

TERMINAL_PHASES = ("Succeeded", "Failed")
PLACEMENT_ANNOTATION = "gangsched.io/placement"
"""Set on a pod by the binding that bound it (the API server copies a Binding's annotations
onto the pod in the same write as `spec.nodeName`): the id of the Placement whose bind it was.
It is the binder's only proof that it bound a pod, so a pod found bound without it, or with
another placement's id, is never counted as bound and never deleted."""
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE_TAINT_EFFECT = "NoSchedule"


class Verdict(enum.Enum):
    """What to do with one member."""

    BINDABLE = "bindable"
    """Unbound, ours, and the node is fit to receive it: bind it."""
    BOUND = "bound"
    """Already bound to the planned node by this placement (a redelivered decision whose
    answers were lost): success, nothing to do."""
    REFUSED = "refused"
    """Can never be bound by this placement: the placement must be rolled back."""


@dataclass(frozen=True)
class Check:
    """The verdict on one member; `reason` says why it is refused (human, for events)."""

    verdict: Verdict
    reason: str = ""


BINDABLE = Check(Verdict.BINDABLE)
BOUND = Check(Verdict.BOUND)


def check_member(
    member: Assignment,
    pod: dict[str, Any] | None,
    node: dict[str, Any] | None,
    scheduler_name: str,
    placement_id: str,
) -> Check:
    """Judge `member` of placement `placement_id` against the pod and node as they are now.

    Shapes: `pod`/`node` are API JSON, or None when they do not exist.
    BOUND only when this placement bound the pod (`is_bound_by`): then nothing else matters,
    the bind happened. A pod bound anywhere by anyone else is refused and never touched.
    Refused too when the pod is gone, replaced (other uid), being deleted, finished, not ours
    (schedulerName) or scheduling-gated; or the node is gone, cordoned (`spec.unschedulable`)
    and the pod does not tolerate `node.kubernetes.io/unschedulable:NoSchedule`, or not Ready
    (see `is_node_ready`).
    Source: BindingREST.assignPod (deleting, already assigned, gated) and kube-scheduler's
    NodeUnschedulable filter and node readiness.
    """
    if pod is None:
        return _refuse(member, "was deleted")
    uid = _meta(pod).get("uid")
    if uid != member.pod_uid:
        return _refuse(member, f"was replaced (uid {uid}, planned {member.pod_uid})")
    if is_bound_by(member, pod, placement_id, scheduler_name):
        return BOUND
    node_name = _spec(pod).get("nodeName") or ""
    if node_name:
        return _refuse(member, f"is already bound to node {node_name}, not by this placement")
    refusal = _pod_refusal(member, pod, scheduler_name)
    return refusal if refusal is not None else _node_check(member, pod, node)


def is_bound_by(
    member: Assignment, pod: dict[str, Any] | None, placement_id: str, scheduler_name: str
) -> bool:
    """Whether `pod` is the member (same uid), ours (schedulerName), bound to the member's
    planned node, and stamped by placement `placement_id` (`PLACEMENT_ANNOTATION`): the
    proof that this placement's bind put it there, and so that its rollback may undo it."""
    if pod is None or _meta(pod).get("uid") != member.pod_uid:
        return False
    spec = _spec(pod)
    annotations = _meta(pod).get("annotations")
    stamp = annotations.get(PLACEMENT_ANNOTATION) if isinstance(annotations, dict) else None
    return (spec.get("nodeName") == member.node and spec.get("schedulerName") == scheduler_name
            and stamp == placement_id)


def conflict_reason(member: Assignment, pod: dict[str, Any] | None) -> str:
    """Why a bind of `member` conflicted, judging the pod as read after the conflict (the
    caller has found it not bound by this placement, `is_bound_by`).

    Shapes: a refusal reason naming the pod, or empty when the pod shows no cause (then the
    caller reports the API server's own message).
    """
    if pod is None:
        return _refuse(member, "was deleted").reason
    uid = _meta(pod).get("uid")
    if uid != member.pod_uid:
        return _refuse(member, f"was replaced (uid {uid}, planned {member.pod_uid})").reason
    node_name = _spec(pod).get("nodeName") or ""
    if node_name:
        return _refuse(member, f"is already bound to node {node_name}, not by this placement"
                       ).reason
    if _meta(pod).get("deletionTimestamp"):
        return _refuse(member, "is being deleted").reason
    if _spec(pod).get("schedulingGates"):
        return _refuse(member, "is scheduling-gated").reason
    return ""


def has_controller(pod: dict[str, Any] | None) -> bool:
    """Whether the pod has a controller owner (`ownerReferences[].controller: true`)."""
    owners = _meta(pod or {}).get("ownerReferences") or []
    return any(isinstance(owner, dict) and owner.get("controller") is True for owner in owners)


def is_node_ready(node: dict[str, Any]) -> bool:
    """Whether the node counts as Ready; the rule shared with the planner's side,
    `services.watcher.slim` (keep the two in step).

    A node with no conditions at all counts as Ready (hand-written and simulated nodes often
    have none). With conditions, it is Ready only when condition `Ready` has status "True";
    Ready "False" or "Unknown" (or no Ready among other conditions, as slim.py) is not Ready.
    """
    status = node.get("status")
    conditions = (status if isinstance(status, dict) else {}).get("conditions") or []
    if not isinstance(conditions, list) or not conditions:
        return True
    return any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )


def tolerates_unschedulable(pod: dict[str, Any]) -> bool:
    """Whether the pod tolerates `node.kubernetes.io/unschedulable:NoSchedule`, the taint a
    cordoned node stands for (kube-scheduler's NodeUnschedulable filter; the planner's
    `filters.node_unschedulable`). As `v1.Toleration.ToleratesTaint`: an empty effect tolerates
    every effect, an empty key with Exists every key, else Exists, or Equal (or no operator)
    with an equal (empty) value; any other operator tolerates nothing."""
    for toleration in _spec(pod).get("tolerations") or []:
        if not isinstance(toleration, dict):
            continue
        effect = toleration.get("effect") or ""
        if effect and effect != UNSCHEDULABLE_TAINT_EFFECT:
            continue
        key = toleration.get("key") or ""
        if key and key != UNSCHEDULABLE_TAINT_KEY:
            continue
        operator = toleration.get("operator") or ""
        if operator == "Exists" or (operator in ("Equal", "")
                                    and not (toleration.get("value") or "")):
            return True
    return False


def _pod_refusal(
    member: Assignment, pod: dict[str, Any], scheduler_name: str
) -> Check | None:
    """The refusal for an unbound pod's own state, or None when it may be bound."""
    if _meta(pod).get("deletionTimestamp"):
        return _refuse(member, "is being deleted")
    phase = (pod.get("status") or {}).get("phase")
    if phase in TERMINAL_PHASES:
        return _refuse(member, f"has finished (phase {phase})")
    scheduler = _spec(pod).get("schedulerName")
    if scheduler != scheduler_name:
        return _refuse(member, f"is no longer ours (schedulerName {scheduler})")
    if _spec(pod).get("schedulingGates"):
        return _refuse(member, "is scheduling-gated")
    return None


def _node_check(member: Assignment, pod: dict[str, Any], node: dict[str, Any] | None) -> Check:
    """BINDABLE when the planned node exists, is schedulable (or the pod tolerates the
    cordon) and Ready; else refused."""
    if node is None:
        return _refuse(member, f"cannot go to node {member.node}: the node was deleted")
    if _spec(node).get("unschedulable") and not tolerates_unschedulable(pod):
        return _refuse(member, f"cannot go to node {member.node}: the node is cordoned")
    if not is_node_ready(node):
        return _refuse(member, f"cannot go to node {member.node}: the node is not Ready")
    return BINDABLE


def _refuse(member: Assignment, what: str) -> Check:
    """A refusal whose reason names the pod: `pod ns/name <what>`."""
    return Check(Verdict.REFUSED, f"pod {member.namespace}/{member.name} {what}")


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}
