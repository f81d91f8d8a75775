"""The planner's public pure API: `apply` events, `plan` a round, or `step` (both).

Layer: planner core (pure). Imports only `services.contracts`, the standard library and NumPy:
no asyncio, clock, randomness or I/O. Time comes only from events' `at_ms`; every ordering from
an explicit sort key. The same events, config and plan sequences give byte-identical decisions.

Ownership: these functions update the state they are given in place (its `derived` indexes
with it) and return it; the caller keeps only the returned state and must not reuse the one it
passed in (nor share it between threads while a call runs). A caller that needs the state as it
was keeps a snapshot (`state.encode_state`), as `planner.isolation` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.contracts.decisions import Decision, StatusUpdate
from services.contracts.events import NATIVE_GROUP_API, Event, PodGroupObserved, PodObserved
from services.planner.core import apply as projection
from services.planner.core import (
    derived,
    pods,
    queue,
    quorum,
    reasons,
    starvation,
    status,
    wakes,
)
from services.planner.core.attempt import Round
from services.planner.core.config import PlannerConfig
from services.planner.core.indexes import Derived
from services.planner.core.state import GroupState, PlannerState


def apply(state: PlannerState, event: Event) -> PlannerState:
    """Apply one event to the state (in place; see Ownership) and return it."""
    return projection.apply_event(state, event)


def step(state: PlannerState, events: Sequence[Event], config: PlannerConfig,
         plan_seq: int) -> tuple[PlannerState, list[Decision]]:
    """Apply every event in order, then plan once (the planner's unit of work per batch)."""
    for event in events:
        state = projection.apply_event(state, event)
    return plan(state, config, plan_seq)


def plan(state: PlannerState, config: PlannerConfig,
         plan_seq: int) -> tuple[PlannerState, list[Decision]]:
    """Plan one round at the state's current time and return the decisions it makes.

    Shapes: decisions in order — Rejections for expired placements' groups and Placements /
    Rejections in queue order, then StatusUpdates sorted by group key; ids
    `ids.decision_id(plan_seq, i)`. A round that changes nothing returns no decisions (a
    Rejection is repeated only when its reason, its pods or its retry time changed).
    Raises: nothing for expected outcomes (no fit, no quorum, unsupported): those are
    Rejections; an exception means a bug.
    """
    current = derived.ensure(state, config.scheduler_name)
    assert current.index is not None  # ensure() builds it
    rnd = Round(state, config, plan_seq, current, current.index)
    for key in wakes.wake(state, current, config):
        current.asleep.pop(key, None)  # may retry early now: look at it again
    _expire(rnd)
    try:
        rnd.hold_nominations()
        for key, group, podgroup, members in _queue(rnd):
            if not rnd.is_behind_binders(key, group):
                rnd.plan_group(key, group, podgroup, sorted(members, key=pods.sort_key))
    finally:
        rnd.lift_hold()
    _settle(rnd)
    return state, rnd.decisions


def _expire(rnd: Round) -> None:
    """Release placements neither bound nor rolled back by deadline + grace; back them off."""
    state, grace_ms = rnd.state, round(rnd.config.release_grace_seconds * 1000)
    expired = sorted((in_flight.deadline_ms, decision) for decision, in_flight
                     in state.placements.items() if in_flight.deadline_ms + grace_ms <= rnd.now)
    for _, decision in expired:
        in_flight = state.placements.pop(decision)
        projection.release(state, decision, in_flight.pod_uids)
        group = state.groups.setdefault(in_flight.group, GroupState())
        if decision in group.in_flight:
            group.in_flight.remove(decision)
        projection.record_failure(state, group, reasons.placement_expired(
            in_flight.group, decision, rnd.config.release_grace_seconds))
        projection.forget_told(group)
        rnd.derived.dirty.add(in_flight.group)


def _queue(rnd: Round) -> list[tuple[str, GroupState, PodGroupObserved | None, list[PodObserved]]]:
    """Groups with pending members, in queue order (see `queue.queue_key`), each with its
    pending members unsorted (`plan` sorts those of the groups it plans); but for those
    resting in a wait only a change to the group can end, those waiting for a time not come yet
    that did not change (`Derived.asleep`), and those behind binders busy from
    the start of the round (`Round.rest`; `plan` skips those behind binders that become busy
    during the round)."""
    state, current = rnd.state, rnd.derived
    quiet, dirty = current.quiet, current.dirty
    busy = rnd.binders_busy()  # busy now, busy all round: placements are only added
    entries = []
    asleep, nominated, freed = current.asleep, state.nominations, state.capacity_freed_at
    for key, uids in current.pending.items():
        if key not in dirty:
            if key in quiet:
                continue  # waits for a change to its pods or PodGroup
            sleep = asleep.get(key)
            if (sleep is not None and rnd.now < sleep.until_ms and key not in nominated
                    and sleep.freed_at in (None, freed)):
                continue  # waits for time (quorum telling, backoff): nothing due yet
        group = state.groups.get(key)
        if group is None:
            group = state.groups[key] = GroupState()
        elif busy and rnd.is_behind_binders(key, group):
            continue
        pending = [state.pods[uid] for uid in uids]
        podgroup = state.podgroups.get(key)
        starving = starvation.is_starving(group, rnd.now, rnd.config)
        stranded = False
        if podgroup is not None:
            counts = rnd.queued_counts[key] = quorum.count(current, key, group,
                                                           podgroup.min_member)
            stranded = quorum.is_stranded(counts, podgroup.min_member)
        entries.append((queue.queue_key(key, group, podgroup, pending, starving, stranded),
                        key, group, podgroup, pending))
    entries.sort(key=lambda entry: entry[0])
    return [(key, group, podgroup, pending) for _, key, group, podgroup, pending in entries]


def _settle(rnd: Round) -> None:
    """Status updates for changed PodGroups, then forget groups nothing refers to any more."""
    state, current = rnd.state, rnd.derived
    touched = sorted(current.dirty)
    current.dirty = set()
    for key in touched:
        if key not in current.pending:
            current.quiet.discard(key)
            current.behind_binders.discard(key)
            current.asleep.pop(key, None)
        group = state.groups.get(key)
        if group is not None and key not in current.pending:
            group.last_rejection = None  # nobody waits any more: the condition clears
            group.pending_since_ms = None  # members created later start a wait of their own
        podgroup = state.podgroups.get(key)
        if podgroup is None:
            if group is not None and key not in current.pending and not group.in_flight:
                del state.groups[key]
            continue
        if group is None:
            group = state.groups[key] = GroupState()
        quorum.count(current, key, group, podgroup.min_member)  # remembers whether it has run
        if podgroup.api_version == NATIVE_GROUP_API and is_others(state, current, key):
            continue  # kube-scheduler tells its status (`is_others`)
        memo = status.derive(state, current, podgroup, group)
        if memo != group.last_status:
            group.last_status = memo
            rnd.decisions.append(StatusUpdate(
                id=rnd.next_id(), plan_seq=rnd.plan_seq, at_ms=rnd.now, group=key,
                phase=memo.phase, running=memo.running, succeeded=memo.succeeded,
                failed=memo.failed, occupied_by=memo.occupied_by,
                schedule_start_ms=memo.schedule_start_ms,
                condition_reason=memo.condition_reason,
                condition_message=memo.condition_message))


def is_others(state: PlannerState, current: Derived, key: str) -> bool:
    """Whether every pod of group `key` is another scheduler's (`spec.schedulerName`): it has
    members and none is gangsched's. A native PodGroup's status (its `PodGroupScheduled`
    condition) is then kube-scheduler's to write for the pods it gangs, so gangsched tells
    none: two writers of one condition overwrite each other. A Coscheduling PodGroup is still
    told: gangsched stands in for scheduler-plugins' PodGroup controller, which counts every
    pod with the label, whichever scheduler's. A PodGroup with no pod yet is told (Waiting)."""
    uids = current.members.get(key, ())
    return bool(uids) and not any(pods.is_ours(state.pods[uid], current.scheduler_name)
                                  for uid in uids)
