"""Building and maintaining the indexes derived from `PlannerState` (`indexes.Derived`).

Layer: planner core (pure). Group membership (group → pod uids, by class) and the NumPy node
index live in the state's `derived` field, never encoded: they are rebuilt from the state on
first use (after a snapshot load, or for another scheduler name) and then maintained by
`refresh_pod` / `refresh_node` as events are applied, in the same call that changes the state.
"""

from __future__ import annotations

from services.contracts import resources
from services.planner.core import capacity, pods
from services.planner.core.indexes import Derived
from services.planner.core.state import (
    Charge,
    PlannerState,
    Reservation,
    capacity_freed,
    count_change,
)


def ensure(state: PlannerState, scheduler_name: str) -> Derived:
    """The derived indexes for `scheduler_name`, building membership and node index if needed."""
    derived = state.derived
    if derived is None or derived.scheduler_name != scheduler_name:
        derived = Derived(scheduler_name)
        for uid in state.pods:
            derived.reindex(state, uid)
        for uid in state.charges:
            derived.set_bound_priority(uid, _bound_priority(state, derived, uid))
        derived.dirty.update(state.podgroups)
        derived.dirty.update(state.groups)  # outcomes applied while unbuilt marked nothing
        state.derived = derived
    if derived.index is None:
        derived.index = capacity.build(state.nodes, state.node_used)
        derived.index.namespaces = state.namespaces
        for uid in sorted(state.charges):
            _hold_ports(state, derived, uid)
            charge = state.charges[uid]
            if charge.extra and charge.node in derived.index.row:
                derived.index.count_extra(derived.index.row[charge.node], charge.extra, 1)
    return derived


def refresh_pod(state: PlannerState, uid: str, index_charged: bool = False) -> None:
    """Bring the pod's capacity charge and (if built) its membership up to date.

    A pod is charged to its node while it uses capacity there (`pods.uses_capacity`), else to
    its reservation's node while it is reserved; never twice. A charge on a node it had none
    on is recorded in `state.counted_changes`. `index_charged`: a placement
    trial already took the new charge from the node index.
    """
    _recharge(state, uid, index_charged)
    derived = state.derived
    if derived is not None:
        derived.reindex(state, uid)
        derived.set_bound_priority(uid, _bound_priority(state, derived, uid))


def reserve(state: PlannerState, uid: str, reservation: Reservation) -> None:
    """Reserve a pending pod on `reservation.node`, whose capacity a trial already took from
    the node index (the placement fast path of `refresh_pod`)."""
    state.reservations[uid] = reservation
    derived = state.derived
    if uid in state.charges or derived is None or derived.pod_class.get(uid) != "pending":
        refresh_pod(state, uid, index_charged=True)
        return
    pod = state.pods[uid]
    state.charges[uid] = Charge(node=reservation.node, requests=pod.requests,
                                extra=pod.nonzero_extra)
    count_change(state, pod)
    used = state.node_used.setdefault(reservation.node, {})
    for name, amount in pod.requests.items():
        used[name] = used.get(name, 0) + amount
    derived.reclass(uid, derived.pod_group[uid], "reserved")


def _bound_priority(state: PlannerState, derived: Derived, uid: str) -> tuple[int, bool] | None:
    """`Derived.bound_priority`'s entry for `uid` in `state` now. (`reserve`'s fast path
    charges an unbound pod: no entry, as before.)"""
    pod = state.pods.get(uid)
    if pod is None or pod.node_name is None or uid not in state.charges:
        return None
    return pod.priority, pods.is_ours(pod, derived.scheduler_name)


def _recharge(state: PlannerState, uid: str, index_charged: bool) -> None:
    pod = state.pods.get(uid)
    new: Charge | None = None
    if pod is not None and pods.uses_capacity(pod) and pod.node_name is not None:
        new = Charge(node=pod.node_name, requests=pod.requests, extra=pod.nonzero_extra)
    elif pod is not None and uid in state.reservations:
        new = Charge(node=state.reservations[uid].node, requests=pod.requests,
                     extra=pod.nonzero_extra)
    old = state.charges.get(uid)
    if old == new:
        derived = state.derived
        if pod is not None and derived is not None and derived.index is not None:
            counted = derived.index.pod_users.get(uid)
            if counted is not None and counted[1] is not pod:  # e.g. its labels changed
                derived.index.set_pod(uid, old.node if old else None, pod, counted[2])
        return
    if old is not None:
        _use(state, old, -1, True)
        del state.charges[uid]
    if new is not None:
        _use(state, new, 1, not index_charged)
        state.charges[uid] = new
        if pod is not None and (old is None or old.node != new.node):  # anew (`wakes`)
            count_change(state, pod)
    derived = state.derived
    if derived is not None and derived.index is not None:
        _hold_ports(state, derived, uid)


def _hold_ports(state: PlannerState, derived: Derived, uid: str) -> None:
    """Keep the index's host ports in use (NodePorts) and pods counted (InterPodAffinity) in
    step with the pod's charge."""
    assert derived.index is not None
    pod, charge = state.pods.get(uid), state.charges.get(uid)
    if pod is not None and charge is not None:
        derived.index.set_pod(uid, charge.node, pod, pod.scheduler_name == derived.scheduler_name)
    elif uid in derived.index.pod_users:
        derived.index.set_pod(uid, None, None)
    if pod is not None and pod.host_ports and charge is not None:
        derived.index.set_ports(uid, charge.node, pod.host_ports,
                                pod.scheduler_name == derived.scheduler_name)
    elif uid in derived.index.port_users:
        derived.index.set_ports(uid, None, ())


def _use(state: PlannerState, charge: Charge, sign: int, touch_index: bool) -> None:
    if sign < 0:
        capacity_freed(state)
    resources.accumulate(state.node_used, charge.node, charge.requests, sign)
    derived = state.derived
    if touch_index and derived is not None and derived.index is not None:
        derived.index.charge(charge.node, charge.requests, sign, charge.extra)


def refresh_node(state: PlannerState, name: str, is_new_or_gone: bool) -> None:
    """Keep the node index current after a Node changed (rebuilt lazily when it cannot be)."""
    derived = state.derived
    if derived is None or derived.index is None:
        return
    node = state.nodes.get(name)
    if is_new_or_gone or node is None or not derived.index.covers(node):
        derived.index = None
    else:
        derived.index.update_node(node)
