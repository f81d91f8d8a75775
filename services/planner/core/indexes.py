"""The indexes derived from `PlannerState`: group membership and the NumPy node index.

Layer: planner core (pure data). One `Derived` lives in the state's declared `derived` field,
which snapshots leave out (`state.encode_state`); `services.planner.core.derived` builds it
from the state on first use and keeps it current as events are applied. Sets here are never
iterated for ordering: callers sort.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, NamedTuple

from services.planner.core import capacity, pods

if TYPE_CHECKING:
    from services.planner.core.state import PlannerState


class Asleep(NamedTuple):
    """Until when rounds may skip a group (`Derived.asleep`): `until_ms` (event time, UTC epoch
    ms; a float where a configured number of seconds makes it one) and, for a backed-off gang,
    `freed_at`, the `PlannerState.capacity_freed_at` it was looked at with (capacity freed
    since may let it retry early); None where freed capacity changes nothing."""

    until_ms: float
    freed_at: int | None = None


class Derived:
    """Membership and node index for one scheduler name.

    Shapes: `members[group]` every pod uid of the group (any class); `pending[group]` the uids
    of class `pending`; `pod_group[uid]` and `pod_class[uid]` for every pod with a group;
    `dirty` the groups whose PodGroup status may have changed since the last round (and
    whose members or PodGroup changed: every change to a group's pods or PodGroup marks it);
    `quiet` the groups whose last round ended in a wait that only such a change can end, and
    `behind_binders` those that waited only for busy binders (`attempt.Round.rest`): a round
    skips them while they are not dirty (the latter while the binders stay busy);
    `asleep[group]` when a group whose next step waits for time is due (`Asleep`,
    `attempt.Round.sleep`): a gang short of quorum, its members still joining, or a backed-off
    gang; a round skips it while it is not dirty and that time has not come (nor capacity been
    freed, for a backed-off one; a gang a pod wakes, `wakes`, loses its entry), as looking at
    it would change nothing.

    `bound_priority[uid]` for every charged pod bound to a node (`state.charges`, `node_name`
    set): its priority and whether it is of `scheduler_name`; `priorities` counts them by
    priority, `our_priorities` those of `scheduler_name` (no zero counts): the pods preemption
    may evict, whose lowest priority `preemption.lowest` reads without a look at every pod.
    """

    def __init__(self, scheduler_name: str) -> None:
        self.scheduler_name = scheduler_name
        self.members: dict[str, set[str]] = {}
        self.pending: dict[str, set[str]] = {}
        self.pod_group: dict[str, str] = {}
        self.pod_class: dict[str, pods.PodClass] = {}
        self.dirty: set[str] = set()
        self.quiet: set[str] = set()
        self.behind_binders: set[str] = set()
        self.asleep: dict[str, Asleep] = {}
        self.index: capacity.NodeIndex | None = None
        self.bound_priority: dict[str, tuple[int, bool]] = {}
        self.priorities: Counter[int] = Counter()
        self.our_priorities: Counter[int] = Counter()

    def set_bound_priority(self, uid: str, entry: tuple[int, bool] | None) -> None:
        """Record a pod's `(priority, is ours)` when it is charged and bound (None: it is not,
        or is gone), keeping `priorities` and `our_priorities` counted."""
        old = self.bound_priority.get(uid)
        if old == entry:
            return
        if old is not None:
            del self.bound_priority[uid]
            _uncount(self.priorities, old[0])
            if old[1]:
                _uncount(self.our_priorities, old[0])
        if entry is not None:
            self.bound_priority[uid] = entry
            self.priorities[entry[0]] += 1
            if entry[1]:
                self.our_priorities[entry[0]] += 1

    def reindex(self, state: PlannerState, uid: str) -> None:
        """Recompute one pod's group and class after its pod or reservation changed."""
        pod = state.pods.get(uid)
        group = None if pod is None else pods.group_of(pod, self.scheduler_name)
        reservation = state.reservations.get(uid)
        is_reserved = reservation is not None and reservation.group == group
        if pod is not None and group is not None and self.pod_group.get(uid) == group:
            self.reclass(uid, group, pods.classify(pod, self.scheduler_name, is_reserved))
            return
        old_group = self.pod_group.pop(uid, None)
        if old_group is not None:
            self.dirty.add(old_group)
            _discard(self.members, old_group, uid)
            if self.pod_class.pop(uid) == "pending":
                _discard(self.pending, old_group, uid)
        if pod is None or group is None:
            return
        pod_class = pods.classify(pod, self.scheduler_name, is_reserved)
        self.pod_group[uid] = group
        self.pod_class[uid] = pod_class
        self.members.setdefault(group, set()).add(uid)
        if pod_class == "pending":
            self.pending.setdefault(group, set()).add(uid)
        self.dirty.add(group)

    def reclass(self, uid: str, group: str, pod_class: pods.PodClass) -> None:
        """Move a pod of `group` (indexed already) to `pod_class`."""
        old_class = self.pod_class[uid]
        self.dirty.add(group)
        if old_class == pod_class:
            return
        self.pod_class[uid] = pod_class
        if old_class == "pending":
            _discard(self.pending, group, uid)
        elif pod_class == "pending":
            self.pending.setdefault(group, set()).add(uid)


def _uncount(counts: Counter[int], priority: int) -> None:
    counts[priority] -= 1
    if not counts[priority]:
        del counts[priority]


def _discard(index: dict[str, set[str]], group: str, uid: str) -> None:
    uids = index.get(group)
    if uids is not None:
        uids.discard(uid)
        if not uids:
            del index[group]
