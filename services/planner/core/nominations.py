"""Capacity nominated for a preemptor gang while its victims leave (its nominated nodes).

Layer: planner core (pure; NumPy). A Preemption records a `Nomination`: what the preemptor's
members are expected to take on each nominated node. Every round, before any group is planned,
each live nomination takes from the free capacity every other group sees as much of that as is
free now (as a starving gang's hold does), so what the victims give back goes to the preemptor
and to nobody else; the preemptor sees it again while it is planned itself. A nomination ends
when its gang is placed, when the gang no longer has pending members or its PodGroup (deleted
or invalid), when a nominated node is gone or no longer passes its member's non-resource
filters (the gang may preempt again at once, as kube-scheduler's `PodEligibleToPreemptOthers`
lets a pod whose nominated node is UnschedulableAndUnresolvable), or at its deadline (the gang
may then preempt again, counting its victims still terminating as gone: `leaving`).
kube-scheduler keeps the nominated pod's requests on its node for pods of lower or equal
priority only; gangsched holds them against every other group, so a gang
that preempted is never overtaken while its victims terminate.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from services.contracts import ids
from services.planner.core import starvation, topology_placement
from services.planner.core.capacity import Hold, IntArray, NodeIndex
from services.planner.core.indexes import Derived
from services.planner.core.state import Nomination, PlannerState


def lapse(state: PlannerState, current: Derived, index: NodeIndex) -> list[str]:
    """Drop nominations past their deadline, whose gang no longer waits, whose gang can no
    longer be placed (its PodGroup deleted, invalid or unsupported: it waits for the PodGroup,
    and holding its room meanwhile would only keep others out) or now has scheduling
    constraints (such a gang never preempts: its victims were chosen over every domain), or one of
    whose nominated nodes its member can no longer go to (`_node_lost`); their keys, sorted."""
    ended = sorted(key for key, nomination in state.nominations.items()
                   if nomination.deadline_ms <= state.now_ms or key not in current.pending
                   or _lost_pod_group(state, key) or _node_lost(state, index, nomination))
    for key in ended:
        del state.nominations[key]
    return ended


def _node_lost(state: PlannerState, index: NodeIndex, nomination: Nomination) -> bool:
    """Whether a member's nominated node is gone, or now fails the member's non-resource
    filters (cordoned, tainted, relabelled out of its node affinity): kube-scheduler's
    `PodEligibleToPreemptOthers` lets a pod preempt again at once when its nominated node is
    UnschedulableAndUnresolvable for it (a node not found reads so), rather than wait out its
    victims there."""
    for uid, node in sorted(nomination.placed.items()):
        row = index.row.get(node)
        if row is None:
            return True
        pod = state.pods.get(uid)
        if pod is not None and not pod.node_name and not index.static_fit(pod).mask[row]:
            return True
    return False


def _lost_pod_group(state: PlannerState, key: str) -> bool:
    """Whether the gang `key` waits for its PodGroup (deleted, a gang, not a singleton;
    invalid; asking for a constraint the planner does not implement) or may not keep its
    nomination (its PodGroup has scheduling constraints, so it never preempts:
    `topology_placement.refuses_preemption`)."""
    podgroup = state.podgroups.get(key)
    if podgroup is None:
        return not ids.is_singleton(ids.GroupKey(key))
    return bool(podgroup.invalid_reason or podgroup.unsupported
                or topology_placement.refuses_preemption(podgroup))


def victims(state: PlannerState) -> set[str]:
    """Uids already evicted for some live nomination (never evicted for another one)."""
    return {uid for nomination in state.nominations.values() for uid in nomination.victims}


def _amounts(index: NodeIndex, nomination: Nomination) -> IntArray:
    """The nomination's amounts on the index (resources by rows)."""
    amounts: IntArray = np.zeros_like(index.alloc)
    for node, requests in sorted(nomination.amounts.items()):
        row = index.row.get(node)
        if row is None:
            continue
        for name, amount in requests.items():
            col = index.col.get(name)
            if col is not None:
                amounts[col, row] += amount
    return amounts


class Held(Hold):
    """What a nomination holds on the index this round: capacity (`Hold`), and `pods` the
    uids of its nominated members put on their nominated nodes, so that every other pod's
    filters see them there (inter-pod affinity, topology spread, host ports), as
    kube-scheduler's `addNominatedPods` runs the filters with the nominated pods present."""

    def __init__(self, group: str, amounts: IntArray, rows: list[int], pods: list[str]) -> None:
        super().__init__(group, amounts, rows)
        self.pods = pods


def take(index: NodeIndex, key: str, nomination: Nomination, state: PlannerState) -> Held:
    """Hold what is free now of the nomination's amounts from every other group, and put its
    nominated members on their nodes (`Held`); `give` undoes it."""
    held = np.minimum(_amounts(index, nomination), np.maximum(index.free, 0))
    placed: list[str] = []
    for uid, node in sorted(nomination.placed.items()):
        pod = state.pods.get(uid)
        if pod is None or node not in index.row or uid in index.pod_users:
            continue  # gone, or on the index already (reserved, bound)
        index.set_pod(uid, node, pod)
        if pod.host_ports and uid not in index.port_users:
            index.set_ports(uid, node, pod.host_ports)
        placed.append(uid)
    hold = Held(key, held, [int(row) for row in np.flatnonzero(held.any(axis=0))], placed)
    starvation.apply_hold(index, hold)
    return hold


def give(index: NodeIndex, hold: Held) -> None:
    """Undo `take`: the capacity back to every group, the nominated members off their nodes."""
    starvation.lift_hold(index, hold)
    for uid in hold.pods:
        index.set_pod(uid, None, None)
        if uid in index.port_users:
            index.set_ports(uid, None, ())


def amounts_of(index: NodeIndex, assigned: list[tuple[dict[str, int], int]]
               ) -> dict[str, dict[str, int]]:
    """The requests of the preemptor's members summed by node name.

    Shapes: `assigned` (requests, row) per member; result by node name, then resource.
    """
    amounts: dict[str, dict[str, int]] = {}
    for requests, row in assigned:
        on_node = amounts.setdefault(index.names[row], {})
        for name, amount in sorted(requests.items()):
            on_node[name] = on_node.get(name, 0) + amount
    return amounts


def leaving(state: PlannerState, priority: int) -> list[str]:
    """Uids whose room is already coming for a preemptor of `priority`, sorted: every live
    nomination's victims, and every terminating pod of lower priority (a victim of a lapsed
    nomination still in its grace period, too: kube-scheduler's `PodEligibleToPreemptOthers`
    does not preempt again while a lower-priority pod terminates on the nominated node)."""
    uids = victims(state)
    for uid in state.charges:
        pod = state.pods.get(uid)
        if pod is not None and pod.is_deleting and pod.priority < priority:
            uids.add(uid)
    return sorted(uids)


@contextmanager
def settled(state: PlannerState, index: NodeIndex, held: dict[str, Held],
            priority: int) -> Iterator[None]:
    """The index as it will be once the pods `leaving` a preemptor of `priority` are gone and
    every live nomination's gang has what was nominated for it, for the time of the block:
    the preemptor then sees the room those evictions leave beyond the nominated, and does not
    evict for room that is already coming (`held`: what each nomination holds now, `take`).
    Restored afterwards."""
    changes: list[tuple[str, int, IntArray, IntArray | None, str]] = []
    extra: IntArray = np.zeros_like(index.alloc)
    for uid in leaving(state, priority):
        charge, pod = state.charges.get(uid), state.pods.get(uid)
        row = None if charge is None else index.row.get(charge.node)
        if pod is None or charge is None or row is None:
            continue  # gone already: its room is free
        vec = index.vector(pod.requests)[0]
        counted_extra = index.vector(charge.extra)[0] if charge.extra else None
        index.give(row, vec, counted_extra)
        changes.append((uid, row, vec, counted_extra, charge.node))
    for key, nomination in sorted(state.nominations.items()):
        hold = held.get(key)
        extra += _amounts(index, nomination) - (0 if hold is None else hold.amounts)
    index.shift(extra, 1)
    parked = {uid: index.pod_users.get(uid) for uid, _, _, _, _ in changes}
    ports = {uid: index.port_users.get(uid) for uid, _, _, _, _ in changes}
    for uid, _, _, _, _ in changes:
        index.set_pod(uid, None, None)
        if ports[uid] is not None:
            index.set_ports(uid, None, ())
    try:
        yield
    finally:
        index.shift(extra, -1)
        for uid, row, vec, counted_extra, node in reversed(changes):
            index.take(row, vec, counted_extra)
            counted, used = parked[uid], ports[uid]
            if counted is not None:
                index.set_pod(uid, node, counted[1], counted[2])
            if used is not None:
                index.set_ports(uid, node, used[1], used[2])
