"""How long PodGroups took to be scheduled: creation to all minMember members bound.

Layer: planner shell, pure (decisions and PodGroups in, durations out): the planner feeds
`gangsched_podgroup_scheduling_duration_seconds` from it. A group counts once per time it
becomes scheduled (its `Scheduled` condition, `core.status`), measured in event time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.contracts.decisions import Decision, StatusUpdate
from services.contracts.events import PodGroupObserved
from services.planner.core import status


class SchedulingTimes:
    """Remembers which groups are scheduled now, so each becoming scheduled counts once."""

    def __init__(self) -> None:
        self._scheduled: set[str] = set()

    def newly_scheduled(self, decisions: Sequence[Decision],
                        podgroups: Mapping[str, PodGroupObserved]) -> list[float]:
        """The durations (seconds, from PodGroup creation) of the groups that became
        scheduled in `decisions`, in decision order.

        Shapes: a StatusUpdate whose condition reason is `Scheduled` makes its group
        scheduled (the first one counts); any other StatusUpdate of the group ends that.
        A group without a PodGroup (a singleton) is not measured. After a planner restart a
        group already scheduled counts once more at its next status change.
        """
        durations: list[float] = []
        for decision in decisions:
            if not isinstance(decision, StatusUpdate):
                continue
            if decision.condition_reason != status.SCHEDULED:
                self._scheduled.discard(decision.group)
                continue
            if decision.group in self._scheduled:
                continue
            self._scheduled.add(decision.group)
            podgroup = podgroups.get(decision.group)
            if podgroup is not None:
                durations.append(max(0, decision.at_ms - podgroup.created_at_ms) / 1000)
        return durations
