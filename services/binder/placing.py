"""Carry out one Placement: all members bound, or the attempt rolled back.

Layer: binder shell. Order: check every member first (so a doomed gang binds nothing), bind
the members' volumes and wait for their claims (`volumes`, VolumeBinding's PreBind), bind
the bindable ones concurrently, and on any permanent failure, or once the gang's timeout passes
without a member bound, undo what this attempt bound. Returns the outcome events to publish;
never publishes or writes events itself.

The timeout (`deadline_ms - at_ms`, the PodGroup's scheduleTimeoutSeconds) guards members that
cannot be bound, not a busy API server (docs/design-notes.md, "Deadlines, rollback and
expiry"): it runs from when this binder starts binding
(time queued in JetStream or behind other placements is not charged), starts over whenever a
round of binds made progress, and no bind starts after `deadline_ms + BIND_GRACE_MS`, which
stays inside the planner's own release grace (`contracts.binding_window`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from services.binder import binding, messages, rollback, volumes
from services.binder.binding import BindState, Deadline, MemberResult, Stamp, Survey
from services.binder.ports import Kube, WallClock
from services.binder.rollback import Undone
from services.binder.validation import Verdict
from services.contracts.binding_window import BIND_GRACE_MS, CONFIRM_GRACE_MS
from services.contracts.decisions import Assignment, Placement
from services.contracts.events import (
    GroupBound,
    GroupRolledBack,
    MemberBindFailed,
    MemberBound,
    Outcome,
)
from services.kube import errors
from services.runtime.unreachable import Repeats

log = logging.getLogger(__name__)

MIN_TIMEOUT_MS = 1_000
"""The shortest binding window, whatever the placement says."""
CLOCK_SLACK_MS = 2_000
"""How far a placement may seem made in this binder's future before its clock is said to be
behind the watcher's (ms: more than clocks kept by NTP differ)."""
_CLOCK_BEHIND = Repeats()


@dataclass(frozen=True)
class Policy:
    """How to bind. Units: `concurrency` API calls in flight per placement."""

    scheduler_name: str
    concurrency: int
    rollback_bare_pods: bool


@dataclass(frozen=True)
class Window:
    """When a placement may bind. Units: `timeout_ms` ms; `stop_ms` UTC epoch ms after which no
    bind starts (`deadline_ms + BIND_GRACE_MS`); `confirm_stop_ms` UTC epoch ms after which the
    placement is no longer declared bound (`deadline_ms + CONFIRM_GRACE_MS`)."""

    timeout_ms: int
    stop_ms: int
    confirm_stop_ms: int

    @classmethod
    def of(cls, placement: Placement) -> Window:
        """The window of `placement`: its timeout, and when binding and confirming stop."""
        return cls(max(MIN_TIMEOUT_MS, placement.deadline_ms - placement.at_ms),
                   placement.deadline_ms + BIND_GRACE_MS,
                   placement.deadline_ms + CONFIRM_GRACE_MS)

    def deadline_from(self, now_ms: int) -> Deadline:
        """One timeout from `now_ms`, never past `stop_ms`."""
        return Deadline.at(min(now_ms + self.timeout_ms, self.stop_ms), now_ms)

    def may_confirm(self, now_ms: int) -> bool:
        """Whether a placement found wholly bound at `now_ms` may still be declared bound."""
        return now_ms < self.confirm_stop_ms


@dataclass(frozen=True)
class RolledBack:
    """Why and how an attempt was undone; `failed` is the member that failed first, if any."""

    reason: str
    failed: Assignment | None
    undone: Undone


@dataclass(frozen=True)
class Settled:
    """How a placement ended: the outcomes to publish (in order), the members left bound, and
    the rollback when there was one."""

    outcomes: tuple[Outcome, ...]
    bound: tuple[Assignment, ...]
    rolled_back: RolledBack | None = None


async def carry_out(
    placement: Placement,
    kube: Kube,
    policy: Policy,
    clock: WallClock,
    *,
    is_redelivery: bool,
    known: binding.Known | None = None,
) -> Settled:
    """Bind every member of `placement`, or roll the attempt back (module docstring: when).

    A redelivery (its first binder crashed or stalled) resumes: members this placement bound
    count as bound and the rest are bound, with a whole timeout from now. A first delivery
    received after the window's stop binds nothing and undoes nothing (no bind was made); a
    redelivery then is checked: if every member is bound it is a success, else what this
    decision bound is undone. A gang whose every member is bound but one of whose nodes is
    gone by then is rolled back at once (its members there were bound to a node that no
    longer exists), rather than left for PodGC.

    Ownership (what counts as bound, and what a rollback may delete): only pods this
    placement's bindings stamped (`validation.is_bound_by`), whether by this delivery or by
    an earlier one whose answers or outcomes were lost. A pod found bound by anyone else is
    a refused member, never counted and never touched. The caller never hands a settled
    decision here. `known`: current objects the pre-bind survey may take instead of reading
    them (never used after the deadline); the room its survey claims for the members
    (`Known.claim`) is released when the placement ends, but for the members it left bound.
    """
    if known is None:
        return await _bound_or_undone(placement, kube, policy, clock, is_redelivery, None)
    left_bound: tuple[Assignment, ...] = ()
    try:
        settled = await _bound_or_undone(placement, kube, policy, clock, is_redelivery, known)
        left_bound = settled.bound
        return settled
    finally:
        known.release(placement.id, {(m.namespace, m.name) for m in left_bound})


async def _bound_or_undone(placement: Placement, kube: Kube, policy: Policy, clock: WallClock,
                           is_redelivery: bool, known: binding.Known | None) -> Settled:
    """`carry_out` but the release of the room its survey claimed."""
    members = placement.members
    stamp = Stamp(placement.id, policy.scheduler_name)
    window = Window.of(placement)
    now_ms = clock()
    _check_clock(placement, now_ms)
    deadline = window.deadline_from(now_ms)
    if deadline.has_passed():
        if not is_redelivery:
            reason = messages.deadline_passed(0, len(members))
            log.warning("placement %s of %s received after its deadline: %s (it was made %.1fs "
                        "ago by this binder's clock: if nothing held it up, this clock runs "
                        "ahead of the watcher's; sync the clocks, e.g. with NTP)", placement.id,
                        placement.group, reason, (now_ms - placement.at_ms) / 1000)
            return _settle(placement, clock, [], rolled_back=RolledBack(reason, None, Undone()))
        return await _after_deadline(placement, kube, policy, clock)
    try:
        found = await binding.survey(
            kube, members, stamp, concurrency=policy.concurrency, deadline=deadline, known=known,
        )
    except binding.DeadlinePassed:
        return await _after_deadline(placement, kube, policy, clock)
    results = _from_survey(members, found)
    if all(result.state is not BindState.FAILED for result in results):
        results = await _prebind(kube, results, deadline)
    if all(result.state is not BindState.FAILED for result in results):
        results = await _bind_progressing(kube, results, stamp, policy, window, clock)
    return await _finish(placement, kube, policy, clock, results)


def _check_clock(placement: Placement, now_ms: int) -> None:
    """Warn (the first time, then every tenth) when `placement` was made later than `now_ms`
    by more than `CLOCK_SLACK_MS`: a decision cannot arrive before it is made, so this
    binder's clock is behind the watcher's (whose events time the planner's decisions), and
    deadlines end that much later here than the planner holds the capacity."""
    ahead_ms = placement.at_ms - now_ms
    if ahead_ms > CLOCK_SLACK_MS and (count := _CLOCK_BEHIND.count("behind")) is not None:
        log.warning("placement %s was made %.1fs ahead of this binder's clock: its clock is "
                    "behind the watcher's, so it binds up to that late after the deadline the "
                    "planner holds the capacity until; sync the clocks, e.g. with NTP (%d "
                    "such placements)", placement.id, ahead_ms / 1000, count)


async def _prebind(kube: Kube, results: list[MemberResult], deadline: Deadline
                   ) -> list[MemberResult]:
    """Bind the volumes of the members still to bind (`volumes.prebind`); a member whose
    claims did not bind has failed."""
    failures = await volumes.prebind(
        kube, [r.member for r in results if r.state is BindState.SKIPPED], deadline)
    return [MemberResult(r.member, BindState.FAILED, failures[r.member.pod_uid])
            if r.member.pod_uid in failures else r for r in results]


async def _bind_progressing(
    kube: Kube, results: list[MemberResult], stamp: Stamp, policy: Policy, window: Window,
    clock: WallClock,
) -> list[MemberResult]:
    """Bind in rounds of one timeout each: a round that bound a member earns another (until
    the window's stop); one that bound none ends it. Members whose bind got no answer in a
    round are bound again in the next (a bind that was stored meets a conflict that proves it
    ours, `binding.bind_member`)."""
    while True:
        before = _count(results, BindState.BOUND)
        results = await _bind_rest(kube, results, stamp, policy, window.deadline_from(clock()))
        if (_count(results, BindState.FAILED) or _count(results, BindState.BOUND) == len(results)
                or _count(results, BindState.BOUND) == before):
            return results
        if window.deadline_from(clock()).has_passed():
            return results
        log.info("placement %s: %d of %d members bound and binding progresses; another %.0fs",
                 stamp.placement_id, _count(results, BindState.BOUND), len(results),
                 window.timeout_ms / 1000)
        results = [MemberResult(r.member, BindState.SKIPPED)
                   if r.state is BindState.UNCERTAIN else r for r in results]


def _count(results: Sequence[MemberResult], state: BindState) -> int:
    return sum(result.state is state for result in results)


async def _bind_rest(
    kube: Kube, results: list[MemberResult], stamp: Stamp, policy: Policy, deadline: Deadline
) -> list[MemberResult]:
    """Bind the members the survey found bindable; keep the others' results."""
    pending = [r.member for r in results if r.state is BindState.SKIPPED]
    bound = await binding.bind_all(kube, pending, stamp, concurrency=policy.concurrency,
                                   deadline=deadline)
    by_uid = {result.member.pod_uid: result for result in bound}
    return [by_uid.get(result.member.pod_uid, result) for result in results]


async def _after_deadline(
    placement: Placement, kube: Kube, policy: Policy, clock: WallClock
) -> Settled:
    """Past the deadline: success if every member is bound by this placement, else undo what
    it bound (this attempt binds nothing)."""
    found = await binding.survey(
        kube, placement.members, Stamp(placement.id, policy.scheduler_name),
        concurrency=policy.concurrency, deadline=None,
    )
    results = [
        MemberResult(r.member, BindState.BOUND if r.state is BindState.BOUND else BindState.SKIPPED)
        for r in _from_survey(placement.members, found)
    ]
    return await _finish(placement, kube, policy, clock, results)


async def _finish(
    placement: Placement,
    kube: Kube,
    policy: Policy,
    clock: WallClock,
    results: Sequence[MemberResult],
) -> Settled:
    """GroupBound when every member is bound; else roll back what this placement bound, and
    say why. Unanswered binds are read again first (`_resolved`), so both the verdict and the
    count in the reason are what the API server holds."""
    window = Window.of(placement)
    results = await _resolved(placement, kube, policy, results, window, clock)
    gone: frozenset[str] = frozenset()
    is_too_late = False
    if all(result.state is BindState.BOUND for result in results):
        gone = await _vanished_nodes(kube, results, policy.concurrency)
        if not gone and window.may_confirm(clock()):
            return _settle(placement, clock, results)
        is_too_late = not gone
        results = [MemberResult(r.member, BindState.FAILED, messages.node_vanished(r.member))
                   if r.member.node in gone else r for r in results]
    failed = _first_failure(results)
    reason = _rollback_reason(results, failed, is_too_late=is_too_late)
    candidates = [r.member for r in results
                  if r.state in (BindState.BOUND, BindState.UNCERTAIN) or r.member.node in gone]
    undone = await rollback.undo(
        kube, candidates, Stamp(placement.id, policy.scheduler_name),
        rollback_bare_pods=policy.rollback_bare_pods, concurrency=policy.concurrency,
        gone_nodes=gone,
    )
    failed_member = failed.member if failed is not None else None
    log.warning("placement %s of %s rolled back: %s", placement.id, placement.group, reason)
    return _settle(placement, clock, results, rolled_back=RolledBack(reason, failed_member, undone))


def _rollback_reason(results: Sequence[MemberResult], failed: MemberResult | None, *,
                     is_too_late: bool) -> str:
    """Why an attempt is rolled back: wholly bound but too late to confirm; else the first
    member refused for good; else how far binding got by the deadline, with the last error."""
    if is_too_late:
        return messages.bound_too_late(len(results), CONFIRM_GRACE_MS / 1000)
    if failed is not None and failed.state is BindState.FAILED:
        return failed.reason
    return messages.deadline_passed(
        sum(r.state is BindState.BOUND for r in results), len(results),
        failed.reason if failed is not None and failed.reason != binding.NO_ANSWER else "")


async def _resolved(
    placement: Placement, kube: Kube, policy: Policy, results: Sequence[MemberResult],
    window: Window, clock: WallClock,
) -> Sequence[MemberResult]:
    """`results` with each unanswered bind (UNCERTAIN) that the API server stored for this
    placement counted as BOUND, when no member failed for good.

    A bind whose answer was lost or came after the deadline (a paused or overloaded API
    server) may have been stored: which answers happened to arrive is no measure of what is
    bound. The re-read retries transient errors until the window's `confirm_stop_ms` (after
    that a wholly bound gang could no longer be declared bound anyway); a re-read that does not
    finish by then changes nothing, and the rollback that follows reads again. A gang found
    wholly bound this way is a success, as a redelivery past its deadline with every member
    bound is (`_after_deadline`).
    """
    uncertain = [r.member for r in results if r.state is BindState.UNCERTAIN]
    if not uncertain or any(r.state is BindState.FAILED for r in results):
        return results
    now_ms = clock()
    try:
        found = await binding.survey(
            kube, uncertain, Stamp(placement.id, policy.scheduler_name),
            concurrency=policy.concurrency,
            deadline=Deadline.at(max(window.confirm_stop_ms, now_ms), now_ms))
    except binding.DeadlinePassed:
        return results
    stored = {member.pod_uid for member, check in zip(uncertain, found.checks, strict=True)
              if check.verdict is Verdict.BOUND}
    return [MemberResult(r.member, BindState.BOUND) if r.member.pod_uid in stored else r
            for r in results]


async def _vanished_nodes(
    kube: Kube, results: Sequence[MemberResult], concurrency: int
) -> frozenset[str]:
    """The planned nodes of `results` that the API server no longer has.

    Source: the API, not the bus view (which lags the watcher: a node deleted within that lag
    got a member bound to it, which PodGC removed only ~40 s later while the gang ran one
    short). One LIST by hostname label answers for most nodes at once (`Kube.nodes_listed`);
    only those it does not find are read one by one (a 404: gone). A node that cannot be read
    now counts as present: nothing is undone on a guess.
    """
    names = sorted({result.member.node for result in results})
    try:
        listed = await kube.nodes_listed(names)
    except errors.KubeError as error:
        log.debug("cannot list nodes %s after binding, reading each: %s", names, error)
        listed = frozenset()
    gate = asyncio.Semaphore(concurrency)

    async def is_gone(name: str) -> bool:
        async with gate:
            try:
                return not await kube.node_exists(name)
            except errors.KubeError as error:
                log.debug("cannot re-read node %s after binding, taking it as present: %s",
                          name, error)
                return False

    unlisted = [name for name in names if name not in listed]
    found = await asyncio.gather(*(is_gone(name) for name in unlisted))
    return frozenset(name for name, gone in zip(unlisted, found, strict=True) if gone)


def _settle(
    placement: Placement,
    clock: WallClock,
    results: Sequence[MemberResult],
    *,
    rolled_back: RolledBack | None = None,
) -> Settled:
    """The outcome events: a bound gang's GroupBound alone (it names the placement, which
    names every member's node); a rolled-back one's member outcomes (one per member that bound
    or failed), then its GroupRolledBack."""
    at_ms = clock()
    if rolled_back is None:
        bound = GroupBound(at_ms=at_ms, decision_id=placement.id, group=placement.group)
        return Settled((bound,), tuple(r.member for r in results))
    outcomes: list[Outcome] = [
        outcome for result in results
        if (outcome := _member_outcome(placement, result, at_ms)) is not None
    ]
    outcomes.append(
        GroupRolledBack(
            at_ms=at_ms,
            decision_id=placement.id,
            group=placement.group,
            reason=rolled_back.reason,
            failed_pod=rolled_back.failed.pod_uid if rolled_back.failed else None,
            deleted_pods=rolled_back.undone.deleted,
        )
    )
    deleted = set(rolled_back.undone.deleted)
    still_bound = tuple(
        r.member for r in results
        if r.state is BindState.BOUND and r.member.pod_uid not in deleted
    )
    return Settled(tuple(outcomes), still_bound, rolled_back)


def _member_outcome(placement: Placement, result: MemberResult, at_ms: int) -> Outcome | None:
    """MemberBound, MemberBindFailed (permanent or not), or None for a skipped member."""
    member = result.member
    if result.state is BindState.BOUND:
        return MemberBound(at_ms=at_ms, decision_id=placement.id, group=placement.group,
                           pod_uid=member.pod_uid, node=member.node)
    if result.state is BindState.SKIPPED:
        return None
    return MemberBindFailed(
        at_ms=at_ms, decision_id=placement.id, group=placement.group, pod_uid=member.pod_uid,
        node=member.node, reason=result.reason,
        is_permanent=result.state is BindState.FAILED,
    )


def _from_survey(members: Sequence[Assignment], found: Survey) -> list[MemberResult]:
    """Results before binding: BOUND (already bound), FAILED (refused), SKIPPED (to bind)."""
    states = {Verdict.BOUND: BindState.BOUND, Verdict.REFUSED: BindState.FAILED}
    return [
        MemberResult(member, states.get(check.verdict, BindState.SKIPPED), check.reason)
        for member, check in zip(members, found.checks, strict=True)
    ]


def _first_failure(results: Sequence[MemberResult]) -> MemberResult | None:
    """The first permanently failed member, else the first uncertain one, in member order."""
    for state in (BindState.FAILED, BindState.UNCERTAIN):
        for result in results:
            if result.state is state:
                return result
    return None
