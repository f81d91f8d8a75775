"""The texts the binder shows users in events and rollback reasons.

Layer: binder, pure. The planner writes the reasons for unschedulable pods
(`services/planner/core/reasons.py`); these are the binder's own: binds and rollbacks.
"""

from __future__ import annotations

from services.contracts.decisions import Assignment
from services.contracts.ids import GroupKey, is_singleton, split_key


def scheduled(member: Assignment) -> str:
    """The `Scheduled` event message, as kube-scheduler writes it."""
    return f"Successfully assigned {member.namespace}/{member.name} to {member.node}"


def group_label(group: str) -> str:
    """`gang <ns>/<name>` for a PodGroup, `pod <ns>/<name>` for a singleton group."""
    namespace, name = split_key(GroupKey(group))
    if is_singleton(GroupKey(group)):
        return f"pod {namespace}/{name.split(':', 1)[1]}"
    return f"gang {namespace}/{name}"


def deadline_passed(bound: int, total: int, last_error: str = "") -> str:
    """Reason of a rollback at the deadline: how far binding got, and the last error if any."""
    text = f"deadline passed with {bound} of {total} members bound"
    return f"{text} (last error: {last_error})" if last_error else text


def bound_too_late(total: int, grace_seconds: float) -> str:
    """Reason of a rollback of a gang found wholly bound only after the planner may have
    released its placement (`binding_window.CONFIRM_GRACE_MS`)."""
    return (f"all {total} members bound, but more than {grace_seconds:.0f}s after the deadline: "
            "too late to confirm")


def rolled_back(group: str, attempt: int, reason: str, deleted: int, kept: int) -> str:
    """The FailedScheduling message of a rollback: the gang, the failing member, what was undone.

    Shapes: e.g. `gang ml/train: placement attempt 2 rolled back: pod ml/w-3 was deleted;
    1 bound member deleted for its controller to recreate`.
    """
    text = f"{group_label(group)}: placement attempt {attempt} rolled back: {reason}"
    if deleted:
        text += f"; {deleted} bound member{'s' if deleted != 1 else ''} deleted for"
        text += f" {'their controllers' if deleted != 1 else 'its controller'} to recreate"
    if kept:
        text += f"; {kept} bound member{'s' if kept != 1 else ''} without a controller kept"
    return text


def bind_error(error: BaseException) -> str:
    """A one-line description of a failed API call (for MemberBindFailed and events): the
    server's answer when there is one, else the error itself."""
    return " ".join(str(getattr(error, "detail", "") or error).split())[:512]


def bind_refused(member: Assignment, error: BaseException) -> str:
    """Reason of a bind refused for good (RBAC, invalid): the member and the server's answer.

    Shapes: e.g. `pod ml/w-3: bind refused: HTTP 403 Forbidden: pods "w-3" is forbidden: ...`.
    """
    return f"pod {member.namespace}/{member.name}: bind refused: {bind_error(error)}"


def node_vanished(member: Assignment) -> str:
    """Reason of a member bound to a node deleted meanwhile (found gone right after binding)."""
    return (f"pod {member.namespace}/{member.name} was bound to node {member.node}, "
            "which was deleted meanwhile")


def claim_not_bound(member: Assignment, claim: str) -> str:
    """Reason of a rollback: a member's claim did not become bound before the deadline."""
    return (f"pod {member.namespace}/{member.name}: persistentvolumeclaim \"{claim}\" "
            "was not bound before the deadline")


def volume_refused(member: Assignment, claim: str, why: str) -> str:
    """Reason of a rollback: a member's claim could not be bound as planned (`why`)."""
    return f"pod {member.namespace}/{member.name}: persistentvolumeclaim \"{claim}\": {why}"


def preemptor_kind(group: str) -> str:
    """What kube-scheduler calls a preemptor of this group in its texts: `pod` for a
    singleton group, `podgroup` for a gang (its ExecutorPreemptor `Type()`, v1.36)."""
    return "pod" if is_singleton(GroupKey(group)) else "podgroup"


def preempting(scheduler_name: str, group: str) -> str:
    """The victim's `DisruptionTarget` condition message, kube-scheduler's wording (v1.36):
    e.g. `gangsched: preempting to accommodate a higher priority podgroup`."""
    return f"{scheduler_name}: preempting to accommodate a higher priority {preemptor_kind(group)}"


def preempted(group: str, preemptor_uid: str, node: str, reason: str = "") -> str:
    """The victim's `Preempted` event message: kube-scheduler's `Preempted by <type> <uid> on
    node <node>` (v1.36), then the gang (or pod) gangsched preempts for and the planner's
    reason, if any.

    Shapes: e.g. `Preempted by podgroup 5f0c... on node n1 (gangsched gang ml/train)`;
    `preemptor_uid` is the PodGroup's uid for a gang, the pod's for a singleton (the group's
    name when unknown).
    """
    text = (f"Preempted by {preemptor_kind(group)} {preemptor_uid} on node {node} "
            f"(gangsched {group_label(group)})")
    return f"{text}: {reason}" if reason else text
