"""One-line human summaries of events and decisions, for the timeline and explanations.

Layer: audit (pure). Names pods by namespace/name where the message only carries a uid, from
the names the caller has seen (`names`: uid → "ns/name").
"""

from __future__ import annotations

from collections.abc import Mapping

from services.contracts import resources
from services.contracts.decisions import (
    Decision,
    Placement,
    Preemption,
    Rejection,
    StatusUpdate,
)
from services.contracts.events import (
    AttachmentDeleted,
    AttachmentObserved,
    ClaimDeleted,
    ClaimObserved,
    ClockTicked,
    CSINodeDeleted,
    CSINodeObserved,
    DisruptionBudgetDeleted,
    DisruptionBudgetObserved,
    Event,
    GroupBound,
    GroupRolledBack,
    MemberBindFailed,
    MemberBound,
    NamespaceDeleted,
    NamespaceObserved,
    NodeDeleted,
    NodeObserved,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
    StorageClassDeleted,
    StorageClassObserved,
    VolumeDeleted,
    VolumeObserved,
)


def amounts(values: Mapping[str, int]) -> str:
    """`cpu 3, memory 1Gi, pods 1`: a resource list in human units, sorted by name."""
    return ", ".join(f"{name} {resources.format_amount(name, amount)}"
                     for name, amount in sorted(values.items())) or "nothing"


def name_of(event: Event) -> str:
    """The object an event is about: node name, `ns/name` of a pod or PodGroup, group key."""
    match event:
        case (NodeObserved() | NodeDeleted() | VolumeObserved() | VolumeDeleted()
              | StorageClassObserved() | StorageClassDeleted() | NamespaceObserved()
              | NamespaceDeleted() | CSINodeObserved() | CSINodeDeleted() | AttachmentObserved()
              | AttachmentDeleted()):
            return event.name
        case (PodObserved() | PodDeleted() | PodGroupObserved() | PodGroupDeleted()
              | ClaimObserved() | ClaimDeleted() | DisruptionBudgetObserved()
              | DisruptionBudgetDeleted()):
            return f"{event.namespace}/{event.name}"
        case ClockTicked():
            return ""
        case _:
            return event.group


def pod_state(pod: PodObserved) -> str:
    """`Pending`, `Running on n1`, `Pending, deleting`, ...: what a pod is doing."""
    text = pod.phase + (f" on {pod.node_name}" if pod.node_name else "")
    flags = [flag for flag, is_set in (("deleting", pod.is_deleting),
                                       ("scheduling-gated", pod.is_scheduling_gated)) if is_set]
    return ", ".join([text, *flags])


def event_summary(event: Event, names: Mapping[str, str]) -> str:
    """One line describing `event` (see module docstring for `names`)."""
    match event:
        case NodeObserved():
            ready = "ready" if event.is_ready else "not ready"
            cordon = ", unschedulable" if event.is_unschedulable else ""
            return f"node {event.name}: allocatable {amounts(event.allocatable)}; {ready}{cordon}"
        case NodeDeleted():
            return f"node {event.name} deleted"
        case PodObserved():
            group = f", group {event.group_name}" if event.group_name else ""
            return (f"pod {event.namespace}/{event.name} {pod_state(event)}{group}; "
                    f"requests {amounts(event.requests)}; scheduler {event.scheduler_name}")
        case PodDeleted():
            return f"pod {event.namespace}/{event.name} deleted"
        case PodGroupObserved():
            extra = f", minResources {amounts(event.min_resources)}" if event.min_resources else ""
            timeout = (f", scheduleTimeoutSeconds {event.schedule_timeout_seconds}"
                       if event.schedule_timeout_seconds is not None else "")
            return f"PodGroup {event.namespace}/{event.name} minMember {event.min_member}" \
                   f"{extra}{timeout}"
        case PodGroupDeleted():
            return f"PodGroup {event.namespace}/{event.name} deleted"
        case DisruptionBudgetObserved():
            disrupted = (f", {len(event.disrupted_pods)} disrupted" if event.disrupted_pods
                         else "")
            return (f"PodDisruptionBudget {event.namespace}/{event.name}: disruptionsAllowed "
                    f"{event.disruptions_allowed}{disrupted}")
        case DisruptionBudgetDeleted():
            return f"PodDisruptionBudget {event.namespace}/{event.name} deleted"
        case NamespaceObserved():
            shown = ", ".join(f"{key}={value}" for key, value in sorted(event.labels.items()))
            return f"namespace {event.name}: labels {shown or 'none'}"
        case NamespaceDeleted():
            return f"namespace {event.name} deleted"
        case CSINodeObserved():
            shown = ", ".join(f"{driver} {count}" for driver, count in sorted(event.limits.items()))
            return f"CSINode {event.name}: volume limits {shown or 'none'}"
        case CSINodeDeleted():
            return f"CSINode {event.name} deleted"
        case AttachmentObserved():
            volume = f"volume {event.volume}" if event.volume else "an inline volume"
            return (f"VolumeAttachment {event.name}: {event.attacher or 'no attacher'} attaches "
                    f"{volume} to node {event.node or '(none)'}")
        case AttachmentDeleted():
            return f"VolumeAttachment {event.name} deleted"
        case ClockTicked():
            return "clock ticked"
        case _:
            return outcome_summary(event, names)


def outcome_summary(event: Event, names: Mapping[str, str]) -> str:
    """One line for a binder outcome (MemberBound, MemberBindFailed, GroupBound, rollback)."""
    match event:
        case MemberBound():
            return f"bound {names.get(event.pod_uid, event.pod_uid)} to {event.node} " \
                   f"(decision {event.decision_id})"
        case MemberBindFailed():
            kind = "permanently" if event.is_permanent else "transiently"
            return (f"binding {names.get(event.pod_uid, event.pod_uid)} to {event.node} failed "
                    f"{kind}: {event.reason} (decision {event.decision_id})")
        case GroupBound():
            return f"gang {event.group} bound (decision {event.decision_id})"
        case GroupRolledBack():
            failed = (f"; first failure {names.get(event.failed_pod, event.failed_pod)}"
                      if event.failed_pod else "")
            return f"gang {event.group} rolled back (decision {event.decision_id}): " \
                   f"{event.reason}{failed}"
        case _:
            return type(event).__name__


def decision_summary(decision: Decision) -> str:
    """One line describing `decision`."""
    match decision:
        case Placement():
            members = ", ".join(f"{m.name}→{m.node}" for m in decision.members)
            return f"place {decision.group} (attempt {decision.attempt}): {members}"
        case Rejection():
            return f"{len(decision.pods)} pod(s) wait: {decision.reason}"
        case StatusUpdate():
            return (f"{decision.group} {decision.phase}: running {decision.running}, "
                    f"succeeded {decision.succeeded}, failed {decision.failed}")
        case Preemption():
            victims = ", ".join(f"{v.namespace}/{v.name}@{v.node}" for v in decision.victims)
            return (f"preempt for {decision.group} (priority {decision.priority}): "
                    f"{len(decision.victims)} victim(s): {victims}")
