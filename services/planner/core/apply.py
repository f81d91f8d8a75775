"""Applying one event to the planner state: the projection of the event log.

Layer: planner core (pure). Updates the state in place (ownership passes to the caller, see
`state`). Takes time only from the watcher's events' `at_ms` (see `apply_event`). Never decides
anything: decisions are `plan`'s.
Bind outcomes are applied idempotently (a duplicate or late outcome changes nothing).
Observations arriving out of order are dropped: one of a Pod, Node or PodGroup deleted less
than `TOMBSTONE_MS` ago (by uid), and one older than what is held for the same uid. Kubernetes
calls resourceVersions opaque, so they are compared only when both are decimal integers (as
etcd's are); otherwise the later event wins. A delete removes only the object of its uid: a
late delete of a Node or PodGroup replaced under the same name leaves the new one. (The watcher
publishes in order, but a retried publish may be stored after later ones: `bus.publishing`.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

import msgspec

from services.contracts import versions
from services.contracts.events import (
    KUEUE_GROUP_API,
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
from services.contracts.ids import group_key
from services.fit.volumes import claim_key
from services.planner.core import derived, pods, reasons
from services.planner.core.state import (
    GroupState,
    PlannerState,
    attempted,
    capacity_freed,
    count_change,
    next_moment,
)

OUTCOMES = (MemberBound, MemberBindFailed, GroupBound, GroupRolledBack)
"""The binder's events: their `at_ms` does not move the planner's clock."""
TOMBSTONE_MS = 10 * 60 * 1000
"""How long (event time) a deleted Pod's or Node's uid keeps late observations out."""
PRUNE_SLACK_MS = TOMBSTONE_MS
"""Expired tombstones are dropped together, once the oldest has been expired this long: each
rebuild of the dict then drops about as many entries as it keeps (cost per tombstone O(1); a
one-minute slack rebuilt the whole window ten times over, 3% of a replay)."""


def apply_event(state: PlannerState, event: Event) -> PlannerState:
    """Apply `event` to `state` (in place) and return it.

    The clock (`state.now_ms`) follows the watcher's events only (observations and clock
    ticks): one producer's clock. A bind outcome carries the binder host's time, which may run
    ahead; were it to move the clock, every deadline and backoff would wait for the cluster's
    clock to catch up with it.
    """
    if event.at_ms > state.now_ms and not isinstance(event, OUTCOMES):
        state.now_ms = event.at_ms
        _prune_tombstones(state)
    match event:
        case PodObserved():
            if _is_current(state, event.uid, state.pods.get(event.uid), event):
                _pod_observed(state, event)
        case PodDeleted():
            _bury(state, event.uid)
            gone = state.pods.get(event.uid)
            if gone is not None and gone.node_name is None:
                _wake_group_of(state, gone)
            _pod_gone(state, event.uid)
        case NodeObserved():
            old = state.nodes.get(event.name)
            if _is_current(state, event.uid, old, event):
                _node_observed(state, old, event)
        case NodeDeleted():
            _bury(state, event.uid)
            held_node = state.nodes.get(event.name)
            if held_node is not None and held_node.uid == event.uid:
                del state.nodes[event.name]
                # a node gone may let a spread pod through (its domain's count leaves the
                # global minimum), as PodTopologySpread's hint queues pods on Node Delete
                capacity_freed(state)
                derived.refresh_node(state, event.name, True)
        case PodGroupObserved() | PodGroupDeleted():
            _podgroup_event(state, event)
        case GroupBound():
            _group_bound(state, event)
        case GroupRolledBack():
            _rolled_back(state, event)
        case MemberBindFailed():
            _bind_failed(state, event)
        case (ClaimObserved() | ClaimDeleted() | VolumeObserved() | VolumeDeleted()
              | StorageClassObserved() | StorageClassDeleted()):
            _storage_changed(state, event)
        case NamespaceObserved() | NamespaceDeleted():
            _namespace_changed(state, event)
        case CSINodeObserved() | CSINodeDeleted():
            held_csinode = state.csinodes.get(event.name)
            seen_csinode = event if isinstance(event, CSINodeObserved) else None
            if _keep(state.csinodes, event.name, seen_csinode, event.uid) and (
                    held_csinode is None or seen_csinode is None
                    or held_csinode.limits != seen_csinode.limits):
                capacity_freed(state)  # a limit raised or gone, in-tree migration changed
        case AttachmentObserved():
            _keep(state.attachments, event.name, event, event.uid)  # it frees nothing
        case AttachmentDeleted():
            if _keep(state.attachments, event.name, None, event.uid):
                capacity_freed(state)  # as NodeVolumeLimits' hint on VolumeAttachment Delete
        case DisruptionBudgetObserved():
            state.budgets[claim_key(event.namespace, event.name)] = event
        case DisruptionBudgetDeleted():
            key = claim_key(event.namespace, event.name)
            if key in state.budgets and state.budgets[key].uid == event.uid:
                del state.budgets[key]
        case MemberBound() | ClockTicked():
            pass  # a bound member releases its reservation when its pod is observed bound
    return state


StorageEvent = (ClaimObserved | ClaimDeleted | VolumeObserved | VolumeDeleted
                | StorageClassObserved | StorageClassDeleted)
Stored = TypeVar("Stored", ClaimObserved, VolumeObserved, StorageClassObserved,
                 NamespaceObserved, CSINodeObserved, AttachmentObserved)


def _storage_changed(state: PlannerState, event: StorageEvent) -> None:
    """Keep the claims, volumes and classes the volume filters read; a change may let a
    waiting pod through, as it requeues pods in kube-scheduler (capacity counts as freed)."""
    match event:
        case ClaimObserved() | ClaimDeleted():
            key = claim_key(event.namespace, event.name)
            seen_claim = event if isinstance(event, ClaimObserved) else None
            changed = _keep(state.claims, key, seen_claim, event.uid)
        case VolumeObserved() | VolumeDeleted():
            seen_volume = event if isinstance(event, VolumeObserved) else None
            changed = _keep(state.volumes, event.name, seen_volume, event.uid)
        case _:
            seen_class = event if isinstance(event, StorageClassObserved) else None
            changed = _keep(state.storage_classes, event.name, seen_class, event.uid)
    if changed:
        capacity_freed(state)


def _namespace_changed(state: PlannerState, event: NamespaceObserved | NamespaceDeleted) -> None:
    """Keep the Namespaces whose labels a term's `namespaceSelector` reads; labels that
    changed (a Namespace added, relabelled or deleted) may let a waiting pod through, so
    capacity counts as freed (a relist that changes nothing does not)."""
    held = state.namespaces.get(event.name)
    seen = event if isinstance(event, NamespaceObserved) else None
    if _keep(state.namespaces, event.name, seen, event.uid) and (
            held is None or seen is None or held.labels != seen.labels):
        capacity_freed(state)


def _keep(table: dict[str, Stored], key: str, seen: Stored | None, uid: str) -> bool:
    """Store the observation `seen` (None: the object `uid` was deleted) under `key`; whether
    anything changed. An observation older than the one held (resourceVersion) and a delete
    of an object since replaced under the same name change nothing."""
    held = table.get(key)
    if seen is None:
        if held is None or held.uid != uid:
            return False
        del table[key]
        return True
    if held is not None and held.uid == uid and versions.is_older(seen.resource_version,
                                                                  held.resource_version):
        return False
    table[key] = seen
    return True


def _is_current(state: PlannerState, uid: str, held: PodObserved | NodeObserved | None,
                seen: PodObserved | NodeObserved) -> bool:
    """Whether an observation is not a late one (module docstring)."""
    buried_ms = state.tombstones.get(uid)
    if buried_ms is not None and buried_ms > state.now_ms - TOMBSTONE_MS:
        return False
    if held is None or held.uid != uid:
        return True
    return not versions.is_older(seen.resource_version, held.resource_version)


def _podgroup_event(state: PlannerState, event: PodGroupObserved | PodGroupDeleted) -> None:
    """Apply a PodGroup's observation or delete, unless late (module docstring)."""
    key = group_key(event.namespace, event.name)
    held = state.podgroups.get(key)
    if isinstance(event, PodGroupObserved):
        if _is_current_podgroup(state, held, event):
            _podgroup_changed(state, key, event)
        return
    _bury(state, event.uid)
    if held is not None and held.uid == event.uid:
        _podgroup_changed(state, key, None)


def _is_current_podgroup(state: PlannerState, held: PodGroupObserved | None,
                         seen: PodGroupObserved) -> bool:
    """Whether a PodGroup observation is not a late one (module docstring). A Kueue group's
    `resource_version` is its count, not a version: only its uid's tombstone is checked (it
    has none: the watcher never deletes one)."""
    buried_ms = state.tombstones.get(seen.uid)
    if buried_ms is not None and buried_ms > state.now_ms - TOMBSTONE_MS:
        return False
    if held is None or held.uid != seen.uid or seen.api_version == KUEUE_GROUP_API:
        return True
    return not versions.is_older(seen.resource_version, held.resource_version)


def _bury(state: PlannerState, uid: str) -> None:
    if uid:
        state.tombstones.pop(uid, None)  # re-inserted last: the dict stays oldest first
        state.tombstones[uid] = state.now_ms


def _prune_tombstones(state: PlannerState) -> None:
    """Drop expired tombstones, in bulk once the oldest is `PRUNE_SLACK_MS` past expiry.

    Rebuilding the dict (not deleting from its front one entry at a time) matters: CPython
    leaves a hole per deleted entry, and finding the first live entry scanned them all, per
    event, which was the replay's hottest line. Expired entries still held are ignored
    (`_is_current` compares times), so when pruning happens changes no decision.
    """
    tombstones = state.tombstones
    if not tombstones:
        return
    horizon = state.now_ms - TOMBSTONE_MS
    if next(iter(tombstones.values())) > horizon - PRUNE_SLACK_MS:
        return
    state.tombstones = {uid: at_ms for uid, at_ms in tombstones.items() if at_ms > horizon}


def _node_observed(state: PlannerState, old: NodeObserved | None, node: NodeObserved) -> None:
    state.nodes[node.name] = node
    if old is None or _may_free_capacity(old, node):
        capacity_freed(state)
    derived.refresh_node(state, node.name, old is None)


def _may_free_capacity(old: NodeObserved, new: NodeObserved) -> bool:
    """Whether a changed Node may now take a pod it refused: more allocatable, other taints or
    labels, it became schedulable or Ready, or it declares a feature it did not (a heartbeat
    changes none of these). kube-scheduler's NodeDeclaredFeatures requeues on any change of
    `status.declaredFeatures` (`isSchedulableAfterNodeChange`); one that only drops features
    can only refuse more, so it wakes no one here."""
    return (any(amount > old.allocatable.get(name, 0)
                for name, amount in new.allocatable.items())
            or old.taints != new.taints or old.labels != new.labels
            or (old.is_unschedulable and not new.is_unschedulable)
            or (not old.is_ready and new.is_ready)
            or not set(new.declared_features).issubset(old.declared_features))


def _pod_observed(state: PlannerState, pod: PodObserved) -> None:
    old = state.pods.get(pod.uid)
    was_counted = pod.uid in state.charges
    state.pods[pod.uid] = pod
    if pod.node_name is None and (old is None or _changed(old, pod)):
        _wake_group_of(state, pod)  # a member joined or changed: it may fit now
        if old is not None and old.group_name != pod.group_name:
            _wake_group_of(state, old)  # and the gang it left may fit without it
    reservation = state.reservations.get(pod.uid)
    if reservation is not None and (pod.node_name is not None or pods.is_terminal(pod)
                                    or pod.is_deleting or _group_key(pod) != reservation.group):
        del state.reservations[pod.uid]  # bound, finished, or moved to another group
    derived.refresh_pod(state, pod.uid)
    if (was_counted and old is not None and old.labels != pod.labels
            and pod.uid in state.charges):  # a counted pod relabelled (`wakes`)
        count_change(state, pod, old.labels)


Observed = TypeVar("Observed", PodObserved, PodGroupObserved)


def _changed(old: Observed, new: Observed) -> bool:
    """Whether a pod or PodGroup observed again changed in anything but its resourceVersion
    and the time it was observed (a status written, a relist: no change)."""
    return msgspec.structs.replace(new, at_ms=old.at_ms,
                                   resource_version=old.resource_version) != old


def _wake_group_of(state: PlannerState, pod: PodObserved) -> None:
    """`_wake` the gang of pending `pod`, added, changed or deleted: kube-scheduler requeues an
    unschedulable pod on an update to itself, and Coscheduling requeues a PodGroup's pods when
    a sibling is added or deleted. Without it such a gang would wait for kube-scheduler's
    unschedulable flush (`backoff.UNSCHEDULABLE_FLUSH_MS`): a member recreated without the
    nodeSelector that kept it off every node, a toleration added, a member deleted so that the
    rest fit."""
    key = pods.group_of(pod, pod.scheduler_name)
    if key is not None:
        _wake(state, key)


def _wake(state: PlannerState, key: str) -> None:
    """Let gang `key`, whose pending members or PodGroup changed, retry early if it was found
    unschedulable (`GroupState.woken_at`, paced as after freed capacity:
    `backoff.early_retry_at_ms`). A gang rolled back is not woken: its members recreated by
    their controller must not end its backoff. When it is the gang holding capacity against
    starvation (`PlannerState.starving_group`), what it holds may shrink on the same nodes, so
    that counts as capacity freed for everyone else."""
    group = state.groups.get(key)
    if group is not None and group.may_retry_early:
        group.woken_at = next_moment(state)
    if key == state.starving_group:
        capacity_freed(state)


def _group_key(pod: PodObserved) -> str:
    """The group a reserved pod (ours) is in now (as `pods.group_of` for our pods)."""
    return pods.group_of(pod, pod.scheduler_name) or ""


def _pod_gone(state: PlannerState, uid: str) -> None:
    state.pods.pop(uid, None)
    state.reservations.pop(uid, None)
    derived.refresh_pod(state, uid)


def _podgroup_changed(state: PlannerState, key: str, podgroup: PodGroupObserved | None) -> None:
    """Keep PodGroup `key`'s newest observation (None: deleted). A PodGroup deleted, or
    replaced by one of another uid, ends the run its gang had (`GroupState.has_run`): the
    Succeeded pods of that run do not count for the new one's quorum, and the status told of
    the old object is forgotten (the new one's is told afresh, and an ended run's phase is
    not kept for it: `status.derive`), its `scheduleStartTime` with it (the new one's is its
    own first attempt)."""
    old = state.podgroups.get(key)
    if old is not None and (podgroup is None or podgroup.uid != old.uid):
        group = state.groups.get(key)
        if group is not None:
            group.has_run = False
            group.last_status = None  # the new object has none of the old one's status
            group.schedule_start_ms = None
    if podgroup is None:
        state.podgroups.pop(key, None)
    else:
        if old is not None:
            kept = _creation_kept(state, key, old, podgroup)
            if kept != podgroup.created_at_ms:
                podgroup = msgspec.structs.replace(podgroup, created_at_ms=kept)
        state.podgroups[key] = podgroup
        if old is not None and _may_let_through(old, podgroup):
            capacity_freed(state)
        if old is None or _changed(old, msgspec.structs.replace(
                podgroup, created_at_ms=old.created_at_ms)):
            # created anew or its spec changed: its gang may fit now (not its creation time:
            # the watcher's Kueue PodGroup takes it from whichever member it was seen through)
            _wake(state, key)
    _touch(state, key)


def _creation_kept(state: PlannerState, key: str, old: PodGroupObserved,
                   new: PodGroupObserved) -> int:
    """The creation time (UTC epoch milliseconds) PodGroup `key` keeps when observed again as
    `new`: `new`'s, unless the same uid moved it later, then the earliest creation of a
    member still live (neither finished nor being deleted), no earlier than `old`'s and no
    later than `new`'s.

    An API object's creation never changes, but the watcher's Kueue PodGroup (uid
    `kueue/<ns>/<name>`, never deleted) takes it from whichever member it was seen through:
    a later member's would move a waiting gang behind groups created after it, and so would a
    replacement's once the oldest member failed, while members older than it wait. A group
    run again under the same name, its earlier members all gone or finished, is new and takes
    the new time, even when a member of the new run was observed before its group's event (the
    watcher publishes the group's first, but a retried publish may be stored after it): that
    member is live, but created no earlier than the new time. Reads the group's members from
    the derived index when built (every pod otherwise, as after a snapshot is decoded: the same
    pods), and only when the time moved later.
    """
    if old.uid != new.uid or not 0 < old.created_at_ms < new.created_at_ms:
        return new.created_at_ms
    index = state.derived
    uids: Iterable[str] = (state.pods if index is None else index.members.get(key, ()))
    earliest = new.created_at_ms
    for pod in map(state.pods.get, uids):
        if (pod is not None and pod.created_at_ms < earliest
                and pods.group_of(pod, pod.scheduler_name) == key
                and not pods.is_terminal(pod) and not pod.is_deleting):
            if pod.created_at_ms <= old.created_at_ms:
                return old.created_at_ms  # no earlier than `old`: found (a gang's first)
            earliest = pod.created_at_ms
    return earliest


def _may_let_through(old: PodGroupObserved, new: PodGroupObserved) -> bool:
    """Whether a changed PodGroup may now let its gang be placed: a smaller minMember or
    minResources, or a spec no longer invalid. Coscheduling requeues a PodGroup's pods when it
    is updated (its EventsToRegister); here the gang's backoff is cut short as when capacity is
    freed (`GroupState.may_retry_early`), instead of waited out."""
    return (new.min_member < old.min_member
            or any(amount < old.min_resources.get(name, 0)
                   for name, amount in new.min_resources.items())
            or new.min_resources.keys() < old.min_resources.keys()
            or (old.invalid_reason is not None and new.invalid_reason is None))


def _touch(state: PlannerState, key: str) -> None:
    if state.derived is not None:
        state.derived.dirty.add(key)


def _group_bound(state: PlannerState, event: GroupBound) -> None:
    in_flight = state.placements.pop(event.decision_id, None)
    if in_flight is None:
        return
    group = state.groups.setdefault(in_flight.group, GroupState())
    _forget_in_flight(group, event.decision_id)
    group.failures = 0  # bound: backoff starts over; a placement alone does not reset it
    # a placement brings the gang to minMember bound: it has run, known from this event and
    # not from sampling at plan time, which batching could make miss it (`quorum.has_run`)
    group.has_run = True
    _touch(state, in_flight.group)


def _rolled_back(state: PlannerState, event: GroupRolledBack) -> None:
    in_flight = state.placements.pop(event.decision_id, None)
    if in_flight is None:
        return
    release(state, event.decision_id, in_flight.pod_uids)
    group = state.groups.setdefault(in_flight.group, GroupState())
    _forget_in_flight(group, event.decision_id)
    _touch(state, in_flight.group)
    record_failure(state, group,  # the planner's clock, not the binder host's
                   reasons.rolled_back(in_flight.group, event.decision_id, event.reason))
    forget_told(group)


def forget_told(group: GroupState) -> None:
    """Forget the last Rejection told when a placement's members come back to pending (rolled
    back, expired): it named only the members left out of that placement, so the returning
    ones would read as a changed gang (`attempt._pending_changed`) and be retried at once,
    every round, instead of waiting their backoff; and the new reason is told."""
    group.last_rejection = None


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


def record_failure(state: PlannerState, group: GroupState, reason: str) -> None:
    """Count a failed attempt: the group backs off from now (`state.now_ms`) and queues then.

    The caller sets `may_retry_early` when the failure was "found unschedulable".
    """
    group.failures += 1
    group.failed_at_ms = state.now_ms
    attempted(state, group)
    group.failure_reason = reason
    group.may_retry_early = False
