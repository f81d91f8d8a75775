"""Decisions: what the planner decided, published on the DECISIONS stream.

Layer: contracts. Pure; never does I/O.

Every decision carries its deterministic `id` (`"<plan_seq>-<index>"`), the `plan_seq` (stream
sequence of the last event applied before the round that produced it) and `at_ms` (the planner's
event-derived time, UTC epoch milliseconds). New fields are added only with defaults, so old
subscribers keep decoding newer messages (unknown fields are ignored by msgspec and JSON readers).

Every message type is a frozen msgspec Struct with `gc=False`: immutable data that can never
take part in a reference cycle, so the cyclic GC need not track the millions a replay or a busy
planner holds.
"""

from __future__ import annotations

from typing import get_args

import msgspec

from services.contracts import subjects
from services.contracts.ids import GroupKey, split_key
from services.contracts.integers import EpochMs, Int64


class VolumeChoice(msgspec.Struct, frozen=True, gc=False):
    """What one unbound WaitForFirstConsumer claim of a member gets before the member is bound
    (as VolumeBinding's PreBind): the static PersistentVolume `volume` bound to it through the
    volume's claimRef, or, `volume` "", dynamic provisioning on the member's node (the claim's
    `volume.kubernetes.io/selected-node` annotation). `claim` is in the member's namespace."""

    claim: str
    volume: str = ""


class Assignment(msgspec.Struct, frozen=True, gc=False):
    """One member of a placement: pod (uid, namespace, name) to node; `volumes` the choices
    for its unbound WaitForFirstConsumer claims, made before it is bound."""

    pod_uid: str
    namespace: str
    name: str
    node: str
    volumes: tuple[VolumeChoice, ...] = ()


class PodRef(msgspec.Struct, frozen=True, gc=False):
    """A pod named by uid, namespace and name."""

    uid: str
    namespace: str
    name: str


class Placement(msgspec.Struct, frozen=True, gc=False, tag="Placement"):
    """Bind these members now, all of them, before `deadline_ms`, or roll the group back.

    `members` holds every pod placed in this round (at least enough for quorum when the group
    had not reached it yet), sorted by namespace/name. `attempt` counts placements of the group.
    Units: `deadline_ms` UTC epoch milliseconds (at_ms + scheduleTimeoutSeconds).
    """

    id: str
    plan_seq: Int64
    at_ms: EpochMs
    group: str
    attempt: Int64
    deadline_ms: Int64
    members: tuple[Assignment, ...]


class Rejection(msgspec.Struct, frozen=True, gc=False, tag="Rejection"):
    """The group (or some of its pods) could not be placed in this round, and why.

    `reason` is the user-facing message (shape in `services/planner/core/reasons.py`), meant for
    FailedScheduling events and the PodScheduled condition. `retry_at_ms` is when the group
    leaves backoff, if it is backed off.
    """

    id: str
    plan_seq: Int64
    at_ms: EpochMs
    group: str
    reason: str
    pods: tuple[PodRef, ...]
    is_unschedulable: bool = True
    retry_at_ms: Int64 | None = None


class StatusUpdate(msgspec.Struct, frozen=True, gc=False, tag="StatusUpdate"):
    """The derived status of a PodGroup changed; the binder writes it to `status`.

    `phase` is Pending, Scheduling, Running, Finished or Failed (rules: docs/design-notes.md
    "PodGroup status", a failure only making the group Failed when running + succeeded < minMember).
    Units: `schedule_start_ms` UTC epoch milliseconds or None before the first attempt.
    """

    id: str
    plan_seq: Int64
    at_ms: EpochMs
    group: str
    phase: str
    running: Int64
    succeeded: Int64
    failed: Int64
    occupied_by: str = ""
    schedule_start_ms: Int64 | None = None
    condition_reason: str = ""
    condition_message: str = ""


class Victim(msgspec.Struct, frozen=True, gc=False):
    """One pod a Preemption evicts: uid, namespace, name, the node it is bound to, its group
    key (`ids.GroupKey`; a singleton's own key) and priority (`spec.priority`)."""

    uid: str
    namespace: str
    name: str
    node: str
    group: str
    priority: Int64


class Preemption(msgspec.Struct, frozen=True, gc=False, tag="Preemption"):
    """Evict `victims` so that `group` (the preemptor) fits; hold their nodes for it meanwhile.

    Chosen only when the preemptor's quorum fits once the victims are gone (never futile);
    every victim has a priority strictly below `priority`, the preemptor's, and a victim gang
    goes whole (rules: docs/design-notes.md "Preemption"). `nominated` are the preemptor's
    pending members with the node each is expected on (kube-scheduler's nominated node),
    sorted by namespace/name; `victims` sorted by namespace/name. `reason` says why, for the
    victims' `Preempted` events and the `DisruptionTarget` condition. Units: `deadline_ms`
    UTC epoch milliseconds: the nominated nodes are held for the preemptor until then.
    """

    id: str
    plan_seq: Int64
    at_ms: EpochMs
    group: str
    priority: Int64
    deadline_ms: Int64
    nominated: tuple[Assignment, ...]
    victims: tuple[Victim, ...]
    reason: str = ""


Decision = Placement | Rejection | StatusUpdate | Preemption
"""Every decision type; tagged by the JSON field `type`."""

DECISION_TYPES: tuple[str, ...] = tuple(kind.__name__ for kind in get_args(Decision))
"""The type tags of `Decision`, in union order: the `<type>` token of decision subjects."""


def decision_type(decision: Decision) -> str:
    """The decision's type tag (`Placement`, `Rejection`, `StatusUpdate`, `Preemption`)."""
    return type(decision).__name__


def decision_subject(prefix: str, decision: Decision) -> str:
    """`<prefix>.decisions.<type>.<namespace>.<group name>` of one decision (names made
    subject tokens as `subjects.token` does): where the planner publishes it and where
    subscribers filter for one PodGroup's decisions."""
    namespace, name = split_key(GroupKey(decision.group))
    return subjects.decisions_subject(prefix, decision_type(decision), namespace, name)
