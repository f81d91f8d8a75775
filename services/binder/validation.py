"""Pre-bind validation: is this member still bindable to its planned node, right now?

Layer: binder, pure: API JSON in, verdict out; no I/O, no clock. Mirrors the checks the API
server and kube-scheduler make before a bind, so the bind itself rarely fails and a gang is
rarely half-bound (DESIGN §4).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from services.contracts.decisions import Assignment

TERMINAL_PHASES = ("Succeeded", "Failed")


class Verdict(enum.Enum):
    """What to do with one member."""

    BINDABLE = "bindable"
    """Unbound, ours, and the node is fit to receive it: bind it."""
    BOUND = "bound"
    """Already bound to the planned node (a redelivered decision): success, nothing to do."""
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
) -> Check:
    """Judge `member` against the pod and node as they are now.

    Shapes: `pod`/`node` are API JSON, or None when they do not exist.
    A pod (same uid) already bound to the planned node is BOUND, whatever else changed: the
    bind happened. Refused when the pod is gone, replaced (other uid), bound to another node,
    being deleted, finished, no longer ours (schedulerName) or scheduling-gated; or the node
    is gone, cordoned (`spec.unschedulable`) or not Ready.
    Source: BindingREST.assignPod (deleting, already assigned, gated) and kube-scheduler's
    NodeUnschedulable filter and node readiness.
    """
    if pod is None:
        return _refuse(member, "was deleted")
    uid = _meta(pod).get("uid")
    if uid != member.pod_uid:
        return _refuse(member, f"was replaced (uid {uid}, planned {member.pod_uid})")
    node_name = _spec(pod).get("nodeName") or ""
    if node_name == member.node:
        return BOUND
    if node_name:
        return _refuse(member, f"is already bound to node {node_name}, not {member.node}")
    refusal = _pod_refusal(member, pod, scheduler_name)
    return refusal if refusal is not None else _node_check(member, node)


def is_bound_to_planned_node(member: Assignment, pod: dict[str, Any] | None) -> bool:
    """Whether `pod` is the member (same uid) and bound to the member's planned node."""
    if pod is None or _meta(pod).get("uid") != member.pod_uid:
        return False
    return bool(_spec(pod).get("nodeName") == member.node)


def conflict_reason(member: Assignment, pod: dict[str, Any] | None) -> str:
    """Why a bind of `member` conflicted, judging the pod as read after the conflict.

    Shapes: a refusal reason naming the pod, or empty when the pod shows no cause (then the
    caller reports the API server's own message).
    """
    if pod is None:
        return _refuse(member, "was deleted").reason
    uid = _meta(pod).get("uid")
    if uid != member.pod_uid:
        return _refuse(member, f"was replaced (uid {uid}, planned {member.pod_uid})").reason
    node_name = _spec(pod).get("nodeName") or ""
    if node_name and node_name != member.node:
        return _refuse(member, f"is already bound to node {node_name}, not {member.node}").reason
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
    """Whether the node's `Ready` condition is `True`."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )


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


def _node_check(member: Assignment, node: dict[str, Any] | None) -> Check:
    """BINDABLE when the planned node exists, is schedulable and Ready; else refused."""
    if node is None:
        return _refuse(member, f"cannot go to node {member.node}: the node was deleted")
    if _spec(node).get("unschedulable"):
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
