"""How long PodGroups took to be scheduled: creation to minMember members bound.

Layer: planner shell, pure (applied events and the state in, durations out): the planner feeds
`gangsched_podgroup_scheduling_duration_seconds` from it, in event time.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.contracts import ids
from services.contracts.events import Event, GroupBound, GroupRolledBack, PodGroupDeleted
from services.planner.core import census
from services.planner.core.state import PlannerState


class SchedulingTimes:
    """Remembers which groups have reached minMember bound, so each counts once per time."""

    def __init__(self, scheduler_name: str) -> None:
        self._scheduler_name = scheduler_name
        self._scheduled: set[str] = set()

    def newly_scheduled(self, applied: Sequence[Event], state: PlannerState) -> list[float]:
        """The durations (seconds, from PodGroup creation to the GroupBound that brought its
        bound members to minMember) of the groups that got there in `applied`.

        Shapes: one duration per group that got there, in event order. A rollback or the
        PodGroup's deletion starts the count again; a group without a PodGroup (a singleton)
        is not measured. After a planner restart a running group counts once more at its next
        GroupBound (members beyond minMember).
        """
        durations: list[float] = []
        for event in applied:
            if isinstance(event, GroupRolledBack | PodGroupDeleted):
                self._scheduled.discard(_group_of(event))
            if not isinstance(event, GroupBound) or event.group in self._scheduled:
                continue
            podgroup = state.podgroups.get(event.group)
            if podgroup is None or census.bound_members(
                    state, self._scheduler_name, event.group) < podgroup.min_member:
                continue
            self._scheduled.add(event.group)
            durations.append(max(0, event.at_ms - podgroup.created_at_ms) / 1000)
        return durations


def _group_of(event: GroupRolledBack | PodGroupDeleted) -> str:
    if isinstance(event, GroupRolledBack):
        return event.group
    return ids.group_key(event.namespace, event.name)
