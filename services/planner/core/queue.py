"""Queue order of groups: stranded gangs first, then priority, queue time, group key.

Layer: planner core (pure). A group that does not fit never blocks the groups behind it; the
order only decides who gets contested capacity first.
"""

from __future__ import annotations

from services.contracts.events import PodGroupObserved, PodObserved
from services.planner.core.state import GroupState

QueueKey = tuple[int, int, int, str]


def priority(pending: list[PodObserved]) -> int:
    """The group's priority: the highest priority among its pending members that can be
    placed as they are (0 if none is pending). A member that is invalid or asks for an
    unsupported constraint waits apart (`attempt.Round._leave_out`) and does not raise its
    gang's priority, as Coscheduling queues each pod by its own; it counts only when every
    pending member is such."""
    placeable = [pod.priority for pod in pending if not (pod.invalid_reason or pod.unsupported)]
    return max(placeable or [pod.priority for pod in pending], default=0)


def priorities(pending: list[PodObserved]) -> list[int]:
    """The distinct priorities of the pending members, highest first."""
    return sorted({pod.priority for pod in pending}, reverse=True)


def queue_time_ms(group: GroupState, podgroup: PodGroupObserved | None,
                  pending: list[PodObserved], is_starving: bool) -> int:
    """When the group joined the queue.

    Units: UTC epoch milliseconds. A starving gang keeps the time it started waiting (so newer
    groups queue behind it); else the last failure time; else the PodGroup's creation time (for a
    singleton or a missing PodGroup, the earliest member creation time).
    """
    if is_starving and group.pending_since_ms is not None:
        return group.pending_since_ms
    if group.failed_at_ms is not None:
        return group.failed_at_ms
    if podgroup is not None:
        return podgroup.created_at_ms
    return min((pod.created_at_ms for pod in pending), default=0)


def queue_key(key: str, group: GroupState, podgroup: PodGroupObserved | None,
              pending: list[PodObserved], is_starving: bool,
              is_stranded: bool = False) -> QueueKey:
    """Sort key: stranded gangs first (`quorum.is_stranded`: members bound below minMember
    must complete before any other gang takes capacity), then highest priority, earliest
    queue time, group key."""
    return (0 if is_stranded else 1, -priority(pending),
            queue_time_ms(group, podgroup, pending, is_starving), key)
