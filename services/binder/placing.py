"""Carry out one Placement: all members bound before the deadline, or the attempt rolled back.

Layer: binder shell. Order: check every member first (so a doomed gang binds nothing), bind
the bindable ones concurrently, and on any permanent failure or at the deadline undo what this
attempt bound. Returns the outcome events to publish; never publishes or writes events itself.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from services.binder import binding, messages, rollback
from services.binder.binding import BindState, Deadline, MemberResult, Stamp, Survey
from services.binder.ports import Kube, WallClock
from services.binder.rollback import Undone
from services.binder.validation import Verdict
from services.contracts.decisions import Assignment, Placement
from services.contracts.events import (
    GroupBound,
    GroupRolledBack,
    MemberBindFailed,
    MemberBound,
    Outcome,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Policy:
    """How to bind. Units: `concurrency` API calls in flight per placement."""

    scheduler_name: str
    concurrency: int
    rollback_bare_pods: bool


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
    """Bind every member of `placement` before its deadline, or roll the attempt back.

    A first delivery already past its deadline binds nothing and undoes nothing (no bind
    was made). A redelivery past its deadline is checked: if every member is bound it is a
    success, else what this decision bound is undone.

    Ownership (what counts as bound, and what a rollback may delete): only pods this
    placement's bindings stamped (`validation.is_bound_by`), whether by this delivery or by
    an earlier one whose answers or outcomes were lost. A pod found bound by anyone else is
    a refused member, never counted and never touched. The caller never hands a settled
    decision here. `known`: current objects the pre-bind survey may take instead of reading
    them (never used after the deadline).
    """
    members = placement.members
    stamp = Stamp(placement.id, policy.scheduler_name)
    deadline = Deadline.at(placement.deadline_ms, clock())
    if deadline.has_passed():
        if not is_redelivery:
            reason = messages.deadline_passed(0, len(members))
            log.warning("placement %s of %s received after its deadline: %s", placement.id,
                        placement.group, reason)
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
        results = await _bind_rest(kube, results, stamp, policy, deadline)
    return await _finish(placement, kube, policy, clock, results)


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
    say why."""
    if all(result.state is BindState.BOUND for result in results):
        return _settle(placement, clock, results)
    failed = _first_failure(results)
    reason = failed.reason if failed is not None and failed.state is BindState.FAILED else (
        messages.deadline_passed(
            sum(r.state is BindState.BOUND for r in results), len(results),
            failed.reason if failed is not None and failed.reason != binding.NO_ANSWER else "",
        )
    )
    candidates = [r.member for r in results if r.state in (BindState.BOUND, BindState.UNCERTAIN)]
    undone = await rollback.undo(
        kube, candidates, Stamp(placement.id, policy.scheduler_name),
        rollback_bare_pods=policy.rollback_bare_pods, concurrency=policy.concurrency,
    )
    failed_member = failed.member if failed is not None else None
    log.warning("placement %s of %s rolled back: %s", placement.id, placement.group, reason)
    return _settle(placement, clock, results, rolled_back=RolledBack(reason, failed_member, undone))


def _settle(
    placement: Placement,
    clock: WallClock,
    results: Sequence[MemberResult],
    *,
    rolled_back: RolledBack | None = None,
) -> Settled:
    """The outcome events: one per member that bound or failed, then the group's."""
    at_ms = clock()
    outcomes: list[Outcome] = [
        outcome for result in results
        if (outcome := _member_outcome(placement, result, at_ms)) is not None
    ]
    if rolled_back is None:
        outcomes.append(GroupBound(at_ms=at_ms, decision_id=placement.id, group=placement.group))
        return Settled(tuple(outcomes), tuple(r.member for r in results))
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
