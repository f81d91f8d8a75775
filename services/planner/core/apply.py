"""Applying one event to the planner state: the projection of the event log.

Layer: planner core (pure). Updates the state in place (ownership passes to the caller, see
`state`). Takes time only from `event.at_ms`. Never decides anything: decisions are `plan`'s.
Bind outcomes are applied idempotently (a duplicate or late outcome changes nothing).
"""

from __future__ import annotations

from services.contracts.events import (
    ClockTicked,
    Event,
    GroupBound,
    GroupRolledBack,
    MemberBindFailed,
    MemberBound,
    NodeDeleted,
    NodeObserved,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
)
from services.contracts.ids import group_key
from services.planner.core import derived, pods, reasons
from services.planner.core.state import GroupState, PlannerState


def apply_event(state: PlannerState, event: Event) -> PlannerState:
    """Apply `event` to `state` (in place) and return it."""
    state.now_ms = max(state.now_ms, event.at_ms)
    match event:
        case PodObserved():
            _pod_observed(state, event)
        case PodDeleted():
            _pod_gone(state, event.uid)
        case NodeObserved():
            is_new = event.name not in state.nodes
            state.nodes[event.name] = event
            state.capacity_freed_ms = state.now_ms
            derived.refresh_node(state, event.name, is_new)
        case NodeDeleted():
            if state.nodes.pop(event.name, None) is not None:
                derived.refresh_node(state, event.name, True)
        case PodGroupObserved():
            _podgroup_changed(state, group_key(event.namespace, event.name), event)
        case PodGroupDeleted():
            _podgroup_changed(state, group_key(event.namespace, event.name), None)
        case GroupBound():
            _group_bound(state, event)
        case GroupRolledBack():
            _rolled_back(state, event)
        case MemberBindFailed():
            _bind_failed(state, event)
        case MemberBound() | ClockTicked():
            pass  # a bound member releases its reservation when its pod is observed bound
    return state


def _pod_observed(state: PlannerState, pod: PodObserved) -> None:
    state.pods[pod.uid] = pod
    if pod.node_name is not None or pods.is_terminal(pod) or pod.is_deleting:
        state.reservations.pop(pod.uid, None)
    derived.refresh_pod(state, pod.uid)


def _pod_gone(state: PlannerState, uid: str) -> None:
    state.pods.pop(uid, None)
    state.reservations.pop(uid, None)
    derived.refresh_pod(state, uid)


def _podgroup_changed(state: PlannerState, key: str, podgroup: PodGroupObserved | None) -> None:
    if podgroup is None:
        state.podgroups.pop(key, None)
    else:
        state.podgroups[key] = podgroup
    _touch(state, key)


def _touch(state: PlannerState, key: str) -> None:
    current = derived.peek(state)
    if current is not None:
        current.dirty.add(key)


def _group_bound(state: PlannerState, event: GroupBound) -> None:
    in_flight = state.placements.pop(event.decision_id, None)
    if in_flight is None:
        return
    group = state.groups.setdefault(in_flight.group, GroupState())
    _forget_in_flight(group, event.decision_id)
    _touch(state, in_flight.group)


def _rolled_back(state: PlannerState, event: GroupRolledBack) -> None:
    in_flight = state.placements.pop(event.decision_id, None)
    if in_flight is None:
        return
    release(state, event.decision_id, in_flight.pod_uids)
    group = state.groups.setdefault(in_flight.group, GroupState())
    _forget_in_flight(group, event.decision_id)
    _touch(state, in_flight.group)
    record_failure(group, event.at_ms,
                   reasons.rolled_back(in_flight.group, event.decision_id, event.reason))


def _bind_failed(state: PlannerState, event: MemberBindFailed) -> None:
    in_flight = state.placements.get(event.decision_id)
    if in_flight is not None and event.is_permanent and in_flight.permanent_failure is None:
        in_flight.permanent_failure = event.reason


def _forget_in_flight(group: GroupState, decision_id: str) -> None:
    if decision_id in group.in_flight:
        group.in_flight.remove(decision_id)


def release(state: PlannerState, decision_id: str, pod_uids: tuple[str, ...]) -> None:
    """Release the reservations `decision_id` still holds for `pod_uids` (idempotent)."""
    for uid in pod_uids:
        reservation = state.reservations.get(uid)
        if reservation is not None and reservation.decision_id == decision_id:
            del state.reservations[uid]
            derived.refresh_pod(state, uid)


def record_failure(group: GroupState, at_ms: int, reason: str) -> None:
    """Count a failed attempt: the group backs off from `at_ms` and queues at `at_ms`.

    The caller sets `may_retry_early` when the failure was "found unschedulable".
    """
    group.failures += 1
    group.failed_at_ms = at_ms
    group.last_attempt_ms = at_ms
    group.failure_reason = reason
    group.may_retry_early = False
