"""Counting a group's members for quorum: bound + reserved + pending against minMember, and
whether the gang has run (then its Succeeded members keep their places).

Layer: planner core (pure). Failed members, terminating members and scheduling-gated pods never
count; pods of other schedulers carrying the label do not count either. Succeeded members count
only once the gang has run (`has_run`): a member that finished after the gang ran whole did its
part, so a replacement of another member is placed without waiting for minMember new pods
(docs/design-notes.md, "Members replaced after the gang ran"); a Succeeded pod of a gang that
never ran (a completed member) does not count.

Mirrored from Coscheduling (scheduler-plugins `pkg/coscheduling/core`): its Permit lets a pod
through once the pods assigned to the group (bound or assumed), itself included, reach
minMember, so a replacement joins the members still running. Coscheduling sees no Succeeded
pod (kube-scheduler's pod informer drops phases Succeeded and Failed), so a gang whose members
finished waits forever for replacements of the others; gangsched remembers that the gang ran.
"""

from __future__ import annotations

from typing import NamedTuple

from services.contracts.events import PodObserved
from services.planner.core.indexes import Derived
from services.planner.core.state import GroupState


class Counts(NamedTuple):
    """How a group's pods of ours stand (numbers of pods).

    `succeeded` counts the members in phase Succeeded that count toward quorum: all of them once
    the gang has run (`has_run`), none before.
    """

    bound: int
    reserved: int
    pending: int
    gated: int
    succeeded: int = 0

    @property
    def held(self) -> int:
        """Members that hold their place in the gang: bound, reserved, or done after it ran."""
        return self.bound + self.reserved + self.succeeded

    @property
    def usable(self) -> int:
        """Members that count toward quorum."""
        return self.held + self.pending


def count(derived: Derived, key: str, group: GroupState, min_member: int) -> Counts:
    """Count the group's members by class, and remember in `group.has_run` whether the gang has
    run (`has_run`; the one field this updates). A GroupBound outcome sets it too, when it is
    applied (`apply`): counting at plan time alone would miss a gang that was bound and lost a
    member within one batch (a planner catching up, or back from a restart)."""
    bound = reserved = pending = gated = succeeded = 0
    classes = derived.pod_class
    for uid in derived.members.get(key, ()):
        pod_class = classes[uid]
        if pod_class == "bound":
            bound += 1
        elif pod_class == "reserved":
            reserved += 1
        elif pod_class == "pending":
            pending += 1
        elif pod_class == "gated":
            gated += 1
        elif pod_class == "succeeded":
            succeeded += 1
    group.has_run = has_run(group.has_run, bound, succeeded, min_member)
    return Counts(bound, reserved, pending, gated, succeeded if group.has_run else 0)


def has_run(ran_before: bool, bound: int, succeeded: int, min_member: int) -> bool:
    """Whether the gang has reached quorum once and some member of that run is still there.

    Reached: bound + Succeeded members of ours reach minMember, at least one of them bound (the
    PodGroup controller's rule for phase Running, running + succeeded >= minMember, with bound
    for running: a bound member is Running once its kubelet starts it). Succeeded pods alone
    cannot tell a gang that ran from the leftovers of an earlier run: a PodGroup deleted and
    created again beside its last run's Succeeded pods is a new gang (`apply` forgets the run
    then), and a gang bound whole is known to have run from its GroupBound. Forgotten once no
    member is bound or Succeeded: when every member was deleted (or failed) and its controller
    recreated them, the new members are a new gang, placed whole again.
    """
    if bound + succeeded == 0:
        return False
    return ran_before or (bound > 0 and bound + succeeded >= min_member)


def has_quorum(counts: Counts, min_member: int) -> bool:
    """Whether enough members exist to place the gang (the usable members reach minMember)."""
    return counts.usable >= min_member


def is_stranded(counts: Counts, min_member: int) -> bool:
    """Whether the group has members bound but fewer held (bound, reserved, Succeeded after it
    ran) than minMember: a partial gang at rest (a rollback that could not unbind its bare pods,
    or bound members lost), holding capacity no complete gang uses until it completes
    (docs/design-notes.md, "Deadlines, rollback and expiry")."""
    return counts.bound > 0 and counts.held < min_member


def still_needed(counts: Counts, min_member: int) -> int:
    """How many pending members one placement must include (0 once quorum is held: the rest
    are members beyond quorum, each placed as it fits)."""
    return max(0, min_member - counts.held)


QUIET_MS = 1000
"""How long no member may have joined a gang short of quorum before it is told so. Units:
milliseconds of event time (`PodObserved.at_ms`)."""
JOIN_LAG_MS = 2000
"""A member counts as joined when observed, and no later than this after its creationTimestamp
(second precision, hence two seconds), however often it is observed again: an update to a
member (a controller's label, its own condition written) is not a member joining, or a member
re-written more often than `QUIET_MS` would hold the telling forever. Units: milliseconds."""
RETELL_INITIAL_MS = 1000
RETELL_MAX_MS = 10_000
"""How soon a gang short of quorum may be told again after its n-th telling: 1 s doubling per
telling up to 10 s, kube-scheduler's pod backoff (podInitialBackoffSeconds,
podMaxBackoffSeconds), which bounds how often Coscheduling's PreFilter refuses the same pod.
Units: milliseconds of event time."""


def told_from_ms(pending: list[PodObserved], group: GroupState) -> int:
    """When a gang short of quorum may be told so (UTC epoch milliseconds; `pending`
    non-empty): `QUIET_MS` after its newest pending member joined (`_joined_ms`), and not
    sooner than the retell backoff after its last telling (`GroupState.quorum_tells`).

    A Job, JobSet or RayCluster creates its pods in a burst: each arrival would otherwise be a
    Rejection ("3 of 8 members exist", then 4, ...), a condition write on every member waiting
    and a PodGroup status write, work that grows with the square of the gang's size and tells
    nothing a moment later. Coscheduling refuses each pod it attempts while the gang is short
    (PreFilter), each pod at most once per its backoff; gangsched tells the gang once its
    members stop arriving, then at most as often (docs/design-notes.md, "Quorum told once
    members stop arriving").
    """
    quiet = max(_joined_ms(pod) for pod in pending) + QUIET_MS
    if group.quorum_told_at_ms is None or group.quorum_tells <= 0:
        return quiet
    backoff = min(RETELL_INITIAL_MS << min(group.quorum_tells - 1, 30), RETELL_MAX_MS)
    return max(quiet, group.quorum_told_at_ms + backoff)


def _joined_ms(pod: PodObserved) -> int:
    """When `pod` joined its gang: observed (`at_ms`), at the latest `JOIN_LAG_MS` after its
    creation (a `created_at_ms` of 0 is unknown: the observation alone counts)."""
    if pod.created_at_ms <= 0:
        return pod.at_ms
    return min(pod.at_ms, pod.created_at_ms + JOIN_LAG_MS)
