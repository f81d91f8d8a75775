"""The planner's whole in-memory state, and its snapshot encoding.

Layer: planner core (pure data). Everything the planner knows lives in `PlannerState`; it is a
projection of the event log plus the planner's own bookkeeping (reservations, backoff, what it
last told subscribers). The indexes derived from it (group membership, the NumPy node index)
are its one field that is not encoded: `derived`, left out of snapshots and rebuilt on demand
(`services.planner.core.derived`).

Ownership: `apply`, `plan` and `step` update a state in place, its `derived` indexes with it,
and return it; the caller keeps only the returned value and never reuses the one it passed in.
A copy is made through a snapshot (`decode_state(encode_state(state))`), which starts without
indexes.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from services.contracts.events import (
    AttachmentObserved,
    ClaimObserved,
    CSINodeObserved,
    DisruptionBudgetObserved,
    NamespaceObserved,
    NodeObserved,
    PodGroupObserved,
    PodObserved,
    StorageClassObserved,
    VolumeObserved,
)
from services.contracts.resources import ResourceList
from services.planner.core.indexes import Derived


class Reservation(msgspec.Struct):
    """Capacity a placed pod holds on `node` until it is observed bound, deleted or released."""

    node: str
    decision_id: str
    group: str


class Charge(msgspec.Struct, frozen=True, omit_defaults=True):
    """What one pod currently takes from one node: its requests, bound or reserved there, and
    what NodeResourcesFit's score counts beyond them (`PodObserved.nonzero_extra`)."""

    node: str
    requests: ResourceList
    extra: ResourceList = {}


class InFlight(msgspec.Struct):
    """A placement the binder has not yet reported bound or rolled back.

    Units: `at_ms`, `deadline_ms` UTC epoch milliseconds. `permanent_failure` holds the first
    permanent bind failure reported for it (its reservations stay until the rollback arrives).
    """

    group: str
    at_ms: int
    deadline_ms: int
    pod_uids: tuple[str, ...]
    permanent_failure: str | None = None


class Nomination(msgspec.Struct):
    """Capacity held for a preemptor gang while its victims leave (kube-scheduler's nominated
    node, for a whole gang).

    Shapes: `amounts` by node name: what the preemptor's members are expected to take there
    (the Preemption's nominated nodes); `victims` the evicted pods' uids, sorted; `placed` the
    nominated node of each of the preemptor's nominated members, by uid (what other pods'
    filters see there). Units: `at_ms`, `deadline_ms` UTC epoch
    milliseconds; after the deadline the hold lapses and the gang may preempt again.
    """

    decision_id: str
    at_ms: int
    deadline_ms: int
    amounts: dict[str, ResourceList]
    victims: tuple[str, ...]
    placed: dict[str, str]


class CountedChange(msgspec.Struct, frozen=True):
    """A pod newly counted on a node (bound or reserved there: a new charge), or a counted pod
    whose labels changed, that the next round has not yet looked at (`wakes`): it may let a
    pending pod's required pod affinity or topology spread pass.

    Shapes: `uid` the pod's; `at` the moment it happened (`next_moment`); `namespace` and
    `labels` the pod's as this change left them (a later relabel is a change of its own, as
    kube-scheduler judges each Pod event on the object it carries); `was` its labels before
    for a relabelled pod, None for a newly counted one. A change a snapshot of core revision 32
    or before holds has only `uid` and `was` (`namespace` ""): `wakes` reads the pod as it is
    then, as those revisions did."""

    uid: str
    was: dict[str, str] | None = None
    at: int = 0
    namespace: str = ""
    labels: dict[str, str] = {}


class RejectionMemo(msgspec.Struct, frozen=True):
    """The last Rejection told for a group, so an unchanged one is not repeated."""

    reason: str
    pods: tuple[str, ...]
    retry_at_ms: int | None


class StatusMemo(msgspec.Struct, frozen=True):
    """The last StatusUpdate told for a PodGroup (all its fields but id, plan_seq and at_ms)."""

    phase: str
    running: int
    succeeded: int
    failed: int
    occupied_by: str
    schedule_start_ms: int | None
    condition_reason: str
    condition_message: str


class GroupState(msgspec.Struct):
    """The planner's bookkeeping for one group.

    Units: every `*_ms` UTC epoch milliseconds from events. `failures` counts consecutive
    unsuccessful attempts and `failed_at_ms` is the last one's time: with the config's backoff
    (and, found unschedulable, kube-scheduler's 5-minute flush) they give the retry time
    (`backoff.retry_at_ms`), and `failed_at_ms` is the group's queue time. `failure_reason` is
    what subscribers are told while the group is backed off. `pending_since_ms` is when the group
    started waiting unplaced (drives anti-starvation; forgotten in a round where none of its
    members waits, so members created later start a wait of their own). A group found
    unschedulable (not one rolled back) `may_retry_early`: when capacity frees after its last
    attempt, or a counted pod its pod affinity or topology spread may need changes, or one of
    its pending members (`woken_at`), it is tried again before its retry time, quietly (see
    `attempt`); "after" is in event order (`last_attempt_at`, a moment: `next_moment`), so one
    such change gives one early retry.
    `has_run`: the gang reached quorum once and a member of that run is still bound or
    Succeeded (`quorum.has_run`).
    """

    failures: int = 0
    failed_at_ms: int | None = None
    failure_reason: str = ""
    pending_since_ms: int | None = None
    last_attempt_ms: int | None = None
    last_attempt_at: int = 0
    """The moment of the last attempt (`next_moment`; 0: none), set with `last_attempt_ms`."""
    may_retry_early: bool = False
    early_retries: int = 0
    """Early retries (`may_retry_early`) that failed since the group was last placed: the next
    comes no sooner than `backoff.early_retry_ms` of them after `last_attempt_ms`."""
    woken_at: int = 0
    """The moment (`next_moment`) of the latest change to a counted pod that may let a pending
    member's required pod affinity or DoNotSchedule topology spread pass, as a round found
    (`wakes`), or to one of its own pending members (`apply._wake_group_of`): like
    `PlannerState.capacity_freed_at`, but for this group only; 0 when never."""
    schedule_start_ms: int | None = None
    attempts: int = 0
    in_flight: list[str] = []
    last_rejection: RejectionMemo | None = None
    last_status: StatusMemo | None = None
    has_run: bool = False
    quorum_told_from_ms: int | None = None
    """While the gang is short of quorum and may not be told so yet: when it may
    (`quorum.told_from_ms`), a time the planner wakes up for; None otherwise."""
    quorum_tells: int = 0
    """Rejections telling the gang it is short of quorum since it last had quorum."""
    quorum_told_at_ms: int | None = None
    """When the last of those was made (event time); None when there was none."""
    preempted_by: str = ""
    """Why the gang's members were evicted (a Preemption's reason) until it is placed again."""


class PlannerState(msgspec.Struct):
    """Everything the planner knows; msgspec-encodable for the database snapshot (every field
    but `derived`).

    Shapes: `nodes` by node name; `pods`, `reservations` and `charges` by pod uid; `podgroups`
    and `groups` by group key (`ids.GroupKey`); `placements` by decision id; `node_used` by node
    name (sum of `charges` on it, nodes not (yet) observed included). `starving_group` and
    `starving_nodes` name the gang that held capacity in the last round and where (sorted).
    `moments` counts the moments whose order early retries compare (`next_moment`).
    `capacity_freed_at` is the last moment capacity was given back, or a Node, a volume object
    or a PodGroup changed so that a waiting gang may now fit (every unschedulable group then
    retries early once, `GroupState.may_retry_early`).
    `tombstones` maps the uid of each deleted Pod, Node or PodGroup to when (event time), oldest
    first,
    so a late observation cannot bring it back; entries count for `apply.TOMBSTONE_MS` and are
    dropped in bulk up to one more window later (`apply.PRUNE_SLACK_MS`).
    `claims` by `namespace/name`, `volumes` (PersistentVolumes) and `storage_classes` by name:
    what the volume filters read (`services.fit.volumes.Book`). `budgets`
    (PodDisruptionBudgets) by `namespace/name`: what preemption counts violations of.
    `nominations` by preemptor group key: capacity held while its victims leave.
    `counted_changes`: pods newly counted on a node or relabelled while counted since the last
    round looked (`CountedChange`, in the order applied or reserved); the next round wakes the
    gangs they may matter to (`wakes`) and empties it.
    `namespaces` (Namespaces) by name: the labels an inter-pod term's `namespaceSelector`
    reads (`services.fit.pod_affinity.in_namespaces`); the derived node index holds this dict.
    `csinodes` (CSINodes) and `attachments` (VolumeAttachments) by name: what NodeVolumeLimits
    reads (`services.fit.volume_limits`).
    `derived`: the indexes over all of the above, None until first used; never encoded.
    Units: `now_ms` is the latest `at_ms` applied (never moves backwards).
    """

    now_ms: int = 0
    nodes: dict[str, NodeObserved] = {}
    pods: dict[str, PodObserved] = {}
    podgroups: dict[str, PodGroupObserved] = {}
    groups: dict[str, GroupState] = {}
    reservations: dict[str, Reservation] = {}
    placements: dict[str, InFlight] = {}
    charges: dict[str, Charge] = {}
    node_used: dict[str, ResourceList] = {}
    starving_group: str | None = None
    starving_nodes: list[str] = []
    moments: int = 0
    capacity_freed_at: int = 0
    tombstones: dict[str, int] = {}
    claims: dict[str, ClaimObserved] = {}
    volumes: dict[str, VolumeObserved] = {}
    storage_classes: dict[str, StorageClassObserved] = {}
    budgets: dict[str, DisruptionBudgetObserved] = {}
    nominations: dict[str, Nomination] = {}
    counted_changes: list[CountedChange] = []
    namespaces: dict[str, NamespaceObserved] = {}
    csinodes: dict[str, CSINodeObserved] = {}
    attachments: dict[str, AttachmentObserved] = {}
    derived: Derived | None = None


_ENCODED_FIELDS = tuple(name for name in PlannerState.__struct_fields__ if name != "derived")
"""The fields a snapshot holds, in declaration order (as msgspec encodes a Struct)."""
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(PlannerState)


def empty_state() -> PlannerState:
    """A state that has seen no events."""
    return PlannerState()


def next_moment(state: PlannerState) -> int:
    """Count a moment and return it: capacity freed, a counted pod changed, a group attempted.

    Moments order what happened, events and a round's steps alike, where event time cannot
    (capacity freed in the millisecond of an attempt but after it still counts, an attempt
    in the round that saw a change uses it up): an early retry needs a change at a moment
    after the group's last attempt, as kube-scheduler moves an unschedulable pod once per
    event and a failed attempt sends it back to wait for the next. Only their order decides
    (their values differ with how events are batched into rounds; no decision does).
    """
    state.moments += 1
    return state.moments


def attempted(state: PlannerState, group: GroupState) -> None:
    """Record that `group` is attempted now (`last_attempt_ms`, `last_attempt_at`): capacity
    freed and pods changed before this count as seen by it."""
    group.last_attempt_ms = state.now_ms
    group.last_attempt_at = next_moment(state)


def capacity_freed(state: PlannerState) -> None:
    """Record that a waiting gang may fit now (`PlannerState.capacity_freed_at`)."""
    state.capacity_freed_at = next_moment(state)


def count_change(state: PlannerState, pod: PodObserved,
                 was: Mapping[str, str] | None = None) -> None:
    """Record that `pod` was newly counted on a node (`was` None) or, counted, relabelled from
    `was` (`PlannerState.counted_changes`), as it is now."""
    state.counted_changes.append(CountedChange(
        pod.uid, None if was is None else dict(was), next_moment(state), pod.namespace,
        dict(pod.labels)))


def snapshot_fields(state: PlannerState) -> dict[str, object]:
    """What a snapshot of `state` holds: every field but `derived`, by name, in order."""
    return {name: getattr(state, name) for name in _ENCODED_FIELDS}


def encode_state(state: PlannerState) -> bytes:
    """Snapshot bytes (JSON) of a state: its fields but `derived`, as msgspec encodes the
    Struct (the same bytes as when the indexes were not a field)."""
    return _encoder.encode(snapshot_fields(state))


class _EarlierGroup(msgspec.Struct):
    """What a snapshot of core revision 32 or before says of a group's early retry."""

    last_attempt_ms: int | None = None
    may_retry_early: bool = False
    woken_ms: int = 0


class _Earlier(msgspec.Struct):
    """What a snapshot of core revision 32 or before says of early retries, by time (UTC epoch
    ms of event time) rather than by moment: `moments` absent (None) marks such a snapshot."""

    moments: int | None = None
    capacity_freed_ms: int = 0
    groups: dict[str, _EarlierGroup] = {}


_earlier_decoder = msgspec.json.Decoder(_Earlier)


def decode_state(data: bytes) -> PlannerState:
    """The state a snapshot holds; derived indexes are rebuilt on first use.

    A snapshot of core revision 32 or before (no `moments`) ordered early retries by time:
    a group found unschedulable was due one when capacity was freed, or it was woken, at or
    after its last attempt (`capacity_freed_ms`, `woken_ms` >= `last_attempt_ms`). That is
    carried over as moments: every attempt at moment 1, such a group woken at moment 2, so an
    upgrade restart keeps the early retry it was owed instead of waiting out its backoff.
    Raises:
        msgspec.DecodeError: the bytes are not a snapshot of this state version (also when
            they name `derived`, which no snapshot holds).
    """
    state = _decoder.decode(data)
    earlier = _earlier_decoder.decode(data)
    if earlier.moments is None:
        _carry_over(state, earlier)
    return state


def _carry_over(state: PlannerState, earlier: _Earlier) -> None:
    """Moments for the early retries a snapshot of core revision 32 or before recorded by
    time (`decode_state`)."""
    state.moments = max(state.moments, 2)
    for key, was in earlier.groups.items():
        group = state.groups.get(key)
        if group is None or was.last_attempt_ms is None:
            continue
        group.last_attempt_at = 1
        if was.may_retry_early and max(earlier.capacity_freed_ms,
                                       was.woken_ms) >= was.last_attempt_ms:
            group.woken_at = 2
