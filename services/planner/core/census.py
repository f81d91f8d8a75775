"""Counts over the planner's state for the shell's gauges (pods waiting to be placed).

Layer: planner core (pure). Reads the state; `pending_pods` reads its derived indexes only
when built (else it scans), `bound_members` builds them when missing, as the next round would;
nothing else in the state changes. Never reads a clock.
"""

from __future__ import annotations

from collections import Counter

from services.planner.core import derived, pods
from services.planner.core.state import PlannerState

PHASES = ("Pending", "Scheduling", "Running", "Finished", "Failed")
"""Every PodGroup phase the planner reports (`status.phase`), in lifecycle order."""


def pending_pods(state: PlannerState, scheduler_name: str) -> int:
    """How many pods of `scheduler_name` wait to be placed (class `pending`: unbound, phase
    Pending, not deleting, not scheduling-gated, not reserved by an in-flight placement).

    Source: the derived membership when it is built for `scheduler_name` (after a round: one
    step per group), else a scan of every pod.
    """
    current = state.derived
    if current is not None and current.scheduler_name == scheduler_name:
        return sum(len(uids) for uids in current.pending.values())
    return sum(
        1 for uid, pod in state.pods.items()
        if pods.classify(pod, scheduler_name, uid in state.reservations) == "pending"
    )


def bound_members(state: PlannerState, scheduler_name: str, group: str) -> int:
    """How many pods of `group` are bound (class `bound`), by the derived membership for
    `scheduler_name` (built on demand)."""
    current = derived.ensure(state, scheduler_name)
    classes = current.pod_class
    return sum(1 for uid in current.members.get(group, ()) if classes[uid] == "bound")


def podgroups_by_phase(state: PlannerState) -> dict[str, int]:
    """How many observed PodGroups are in each phase, every phase of `PHASES` present.

    Source: the phase last decided for the group (the status the binder writes); a PodGroup
    no round has judged yet counts as Pending, as a new PodGroup is.
    """
    counts = Counter({phase: 0 for phase in PHASES})
    for key in state.podgroups:
        group = state.groups.get(key)
        memo = group.last_status if group is not None else None
        counts[memo.phase if memo is not None else PHASES[0]] += 1
    return dict(counts)
