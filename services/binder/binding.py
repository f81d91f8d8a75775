"""Read members before binding, then bind them concurrently, retrying transient errors.

Layer: binder shell. Every API call goes through the `Kube` port; transient failures
(KubeUnavailable) are retried with capped exponential backoff until the placement's deadline,
permanent ones end the member at once. Never rolls back (see `rollback`) and never publishes.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import tenacity

from services.binder import messages, retries, validation
from services.binder.ports import Kube
from services.binder.validation import Check, Verdict
from services.contracts.decisions import Assignment
from services.kube import errors

log = logging.getLogger(__name__)

RETRY_FIRST_WAIT_SECONDS = 0.1
RETRY_MAX_WAIT_SECONDS = 5.0
_RETRY = retries.Retry(first_wait_seconds=RETRY_FIRST_WAIT_SECONDS,
                       max_wait_seconds=RETRY_MAX_WAIT_SECONDS)
"""KubeUnavailable retried without limit (the caller bounds the time), capped backoff."""

NO_ANSWER = "deadline passed"
"""The reason of a member whose bind got no answer at all before the deadline."""


class DeadlinePassed(Exception):
    """The placement's deadline passed before the reads it needs succeeded."""


@dataclass(frozen=True)
class Deadline:
    """A wall-clock deadline mapped once onto the event loop's monotonic clock.

    Units: `loop_time` in seconds of `asyncio.get_running_loop().time()`.
    """

    loop_time: float

    @classmethod
    def at(cls, deadline_ms: int, now_ms: int) -> Deadline:
        """The deadline `deadline_ms` (UTC epoch ms) seen from wall-clock time `now_ms`."""
        return cls(asyncio.get_running_loop().time() + (deadline_ms - now_ms) / 1000)

    def remaining_seconds(self) -> float:
        """Seconds left (negative once passed)."""
        return self.loop_time - asyncio.get_running_loop().time()

    def has_passed(self) -> bool:
        """Whether no time is left."""
        return self.remaining_seconds() <= 0


class BindState(enum.Enum):
    """How binding one member ended."""

    BOUND = "bound"
    FAILED = "failed"
    """Permanently refused (conflict, gone, forbidden, invalid): it will never bind."""
    UNCERTAIN = "uncertain"
    """Transient errors until the deadline: the last bind may or may not have been stored."""
    SKIPPED = "skipped"
    """Not attempted: another member had already failed."""


@dataclass(frozen=True)
class MemberResult:
    """The end of one member's bind; `reason` says why it did not bind."""

    member: Assignment
    state: BindState
    reason: str = ""


@dataclass(frozen=True)
class Survey:
    """Each member's pre-bind check, in member order."""

    checks: tuple[Check, ...]


@dataclass(frozen=True)
class Stamp:
    """Who binds: the placement whose id each binding carries (`validation.PLACEMENT_ANNOTATION`)
    and the schedulerName a pod must have to count as bound by it."""

    placement_id: str
    scheduler_name: str


class Known(Protocol):
    """Objects already known to be current (`view.ClusterView`): API JSON, or None when not
    known (then the API is asked)."""

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def node(self, name: str) -> dict[str, Any] | None: ...

    def claim(self, node_name: str, members: Sequence[tuple[str, str]],
              placement: str) -> str | None: ...

    def release(self, placement: str, bound: Collection[tuple[str, str]]) -> None: ...

    def misfit(self, namespace: str, name: str, node_name: str) -> str | None: ...


async def survey(
    kube: Kube,
    members: Sequence[Assignment],
    stamp: Stamp,
    *,
    concurrency: int,
    deadline: Deadline | None,
    known: Known | None = None,
) -> Survey:
    """Read every member's pod and planned node (each node once) and check them as members
    of the placement `stamp` names (`validation.check_member`).

    Objects `known` holds are taken from it; the others are read from the API (a bound pod
    always is: only the API object carries the proof of who bound it).
    `deadline` None retries transient errors without limit (used after the deadline, when
    the gang must be cleaned up whatever it takes). A read refused permanently (e.g. RBAC)
    refuses the member with that error.
    Raises:
        DeadlinePassed: a transient error outlasted `deadline`.
    """
    gate = asyncio.Semaphore(concurrency)
    node_names = sorted({member.node for member in members})
    wants: list[_Want] = [
        (known.node(name) if known else None, f"get node {name}",
         partial(kube.get_node, name)) for name in node_names]
    wants.extend((known.pod(m.namespace, m.name) if known else None,
                  f"get pod {m.namespace}/{m.name}",
                  partial(kube.get_pod, m.namespace, m.name)) for m in members)
    reads = await _known_or_read(wants, gate, deadline)
    nodes = dict(zip(node_names, reads[:len(node_names)], strict=True))
    pod_reads = reads[len(node_names):]
    checks = [
        _check(member, pod_read, nodes[member.node], stamp)
        for member, pod_read in zip(members, pod_reads, strict=True)
    ]
    if known is not None:
        _recheck_filters(known, members, checks)
        _recheck_capacity(known, members, checks, stamp.placement_id)
    return Survey(tuple(checks))


def _recheck_filters(known: Known, members: Sequence[Assignment], checks: list[Check]) -> None:
    """Refuse each bindable member whose planned node fails its filters (`Known.misfit`: the
    planner's own filter rules, on the view): a placement only selects among nodes that fit."""
    for position, (member, check) in enumerate(zip(members, checks, strict=True)):
        if check.verdict is Verdict.BINDABLE:
            reason = known.misfit(member.namespace, member.name, member.node)
            if reason is not None:
                checks[position] = Check(Verdict.REFUSED, f"pod {member.namespace}/"
                                         f"{member.name} cannot go to node {member.node}: "
                                         f"{reason}")


def _recheck_capacity(known: Known, members: Sequence[Assignment], checks: list[Check],
                      placement: str) -> None:
    """Refuse the bindable members of any node they would now over-commit (`Known.claim`:
    another scheduler may have bound pods there since the plan, beside what this binder's
    other placements are binding there); the others' room is held for `placement`."""
    by_node: dict[str, list[int]] = {}
    for position, (member, check) in enumerate(zip(members, checks, strict=True)):
        if check.verdict is Verdict.BINDABLE:
            by_node.setdefault(member.node, []).append(position)
    for node, positions in sorted(by_node.items()):
        reason = known.claim(node, [(members[p].namespace, members[p].name)
                                    for p in positions], placement)
        if reason is not None:
            for position in positions:
                member = members[position]
                checks[position] = Check(Verdict.REFUSED, f"pod {member.namespace}/"
                                         f"{member.name} cannot go to node {node}: {reason}")


async def bind_all(
    kube: Kube, members: Sequence[Assignment], stamp: Stamp, *, concurrency: int,
    deadline: Deadline,
) -> list[MemberResult]:
    """Bind `members` concurrently (at most `concurrency` in flight) until done or the deadline,
    each binding stamped with `stamp`.

    Shapes: one result per member, in member order. After the first permanent failure no
    further bind is started (those members are SKIPPED); binds already in flight finish.
    """
    gate = asyncio.Semaphore(concurrency)
    failed = asyncio.Event()

    async def one(member: Assignment) -> MemberResult:
        async with gate:
            if failed.is_set():
                return MemberResult(member, BindState.SKIPPED)
            result = await bind_member(kube, member, stamp, deadline)
        if result.state is BindState.FAILED:
            failed.set()
        return result

    return list(await asyncio.gather(*(one(member) for member in members)))


async def bind_member(
    kube: Kube, member: Assignment, stamp: Stamp, deadline: Deadline
) -> MemberResult:
    """Bind one member, stamped with `stamp`, retrying transient errors until `deadline`.

    A conflict is re-checked: the pod bound to the planned node by this placement (an earlier
    attempt whose answer was lost) is BOUND; anything else is FAILED with the reason.
    """
    tracker = _LastError()
    try:
        async with asyncio.timeout_at(deadline.loop_time):
            await _RETRY.call(
                partial(kube.bind, member.namespace, member.name, member.pod_uid, member.node,
                        annotations=stamp_annotations(stamp)),
                before_sleep=_logging(tracker, f"bind {member.namespace}/{member.name}"))
        return MemberResult(member, BindState.BOUND)
    except errors.KubeConflict as error:
        return await _recheck(kube, member, stamp, deadline, messages.bind_error(error))
    except errors.KubeNotFound:
        return MemberResult(member, BindState.FAILED, f"pod {member.namespace}/{member.name} "
                            "was deleted")
    except errors.KubeUnavailable as error:
        return MemberResult(member, BindState.UNCERTAIN, messages.bind_error(error))
    except errors.KubeError as error:
        return MemberResult(member, BindState.FAILED, messages.bind_refused(member, error))
    except TimeoutError:
        return MemberResult(member, BindState.UNCERTAIN, tracker.text or NO_ANSWER)


def stamp_annotations(stamp: Stamp) -> dict[str, str]:
    """The annotations a binding carries onto the pod it binds."""
    return {validation.PLACEMENT_ANNOTATION: stamp.placement_id}


async def _recheck(
    kube: Kube, member: Assignment, stamp: Stamp, deadline: Deadline, conflict: str
) -> MemberResult:
    """After a bind conflict: BOUND if this placement bound the pod, else FAILED."""
    try:
        async with asyncio.timeout_at(deadline.loop_time):
            pod = await _RETRY.call(partial(kube.get_pod, member.namespace, member.name),
                                   before_sleep=_logging(_LastError(), f"get pod {member.name}"))
    except (TimeoutError, errors.KubeUnavailable):
        return MemberResult(member, BindState.UNCERTAIN, conflict)
    except errors.KubeError as error:
        return MemberResult(member, BindState.FAILED, messages.bind_refused(member, error))
    if validation.is_bound_by(member, pod, stamp.placement_id, stamp.scheduler_name):
        return MemberResult(member, BindState.BOUND)
    reason = validation.conflict_reason(member, pod) or f"bind conflict: {conflict}"
    return MemberResult(member, BindState.FAILED, reason)


@dataclass(frozen=True)
class _Read:
    """An object as read (None: it does not exist), or the permanent error that refused it."""

    obj: dict[str, Any] | None
    error: str = ""


def _check(member: Assignment, pod: _Read, node: _Read, stamp: Stamp) -> Check:
    """The member's check, or a refusal when its pod or node could not be read."""
    if pod.error:
        name = f"{member.namespace}/{member.name}"
        return Check(Verdict.REFUSED, f"cannot read pod {name}: {pod.error}")
    if node.error:
        return Check(Verdict.REFUSED, f"cannot read node {member.node}: {node.error}")
    return validation.check_member(member, pod.obj, node.obj, stamp.scheduler_name,
                                   stamp.placement_id)


_Want = tuple[dict[str, Any] | None, str, Callable[[], Awaitable[dict[str, Any] | None]]]
"""An object wanted by `survey`: its known API JSON (None: not known), what reading it is
called in logs and errors, and the read from the API."""


async def _known_or_read(wants: Sequence[_Want], gate: asyncio.Semaphore,
                         deadline: Deadline | None) -> list[_Read]:
    """Each want's known object, else its `_read` from the API (concurrently, through `gate`).

    Only the objects not known are awaited, as tasks of one gather: a placement whose pods and
    nodes the view holds (nearly all) starts no task at all, rather than one per member and
    node.
    Shapes: one read per want, in order.
    Raises:
        DeadlinePassed: as `_read`.
    """
    missing = [(what, read) for known, what, read in wants if known is None]
    answers = iter(await asyncio.gather(*(_read(gate, deadline, what, read)
                                          for what, read in missing)) if missing else [])
    return [_Read(known) if known is not None else next(answers) for known, _, _ in wants]


async def _read(
    gate: asyncio.Semaphore,
    deadline: Deadline | None,
    what: str,
    call: Callable[[], Awaitable[dict[str, Any] | None]],
) -> _Read:
    """One read through `gate`, retried while transient, within `deadline` if any.

    Raises:
        DeadlinePassed: the deadline passed first.
    """
    async with gate:
        try:
            async with asyncio.timeout_at(deadline.loop_time if deadline else None):
                return _Read(await _RETRY.call(call, before_sleep=_logging(_LastError(), what)))
        except TimeoutError as error:
            raise DeadlinePassed(f"{what}: deadline passed") from error
        except errors.KubeError as error:
            return _Read(None, messages.bind_error(error))


class _LastError:
    """Remembers the last transient error of a retry loop, for the failure reason."""

    def __init__(self) -> None:
        self.text = ""


def _logging(tracker: _LastError, what: str) -> retries.BeforeSleep:
    """A `_RETRY` hook: remember each transient error in `tracker`, log the first retry and
    then every tenth."""

    def before_sleep(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        tracker.text = messages.bind_error(error) if error else tracker.text
        if state.attempt_number == 1 or state.attempt_number % 10 == 0:
            log.warning("%s failed %d times, retrying: %s", what, state.attempt_number, error)

    return before_sleep
