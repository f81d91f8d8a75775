"""Carry out one Preemption: evict its victims, then nominate the preemptor's pods' nodes.

Layer: binder shell. As kube-scheduler's preemption executor (DefaultPreemption, v1.36) does
for each victim: the `DisruptionTarget` condition (reason PreemptionByScheduler) through
`pods/status`, then a graceful delete (the pod's own terminationGracePeriodSeconds), then a
`Preempted` event on the victim; and, for the preemptor, `status.nominatedNodeName` (which
the API server clears when the pod is bound: ClearingNominatedNodeNameAfterBinding, on by
default since 1.35). Unlike kube-scheduler, each victim is read live first and evicted only if
it is still the pod the decision named (`eviction.skip_reason`), and the delete carries a uid
precondition, so a signed but stale decision never evicts an equal or higher priority pod nor
a pod recreated under a victim's name. A redelivery is idempotent: its victims are then gone
or terminating and are skipped.

Victims go as whole gangs, so transient API errors (429, 5xx, timeouts: KubeUnavailable) are
retried in place, waiting as long as the API server asks (`retries.Retry`): every victim is
read first, retried until the decision's deadline (past it, nothing is evicted: the planner no
longer holds the nodes); once they are read, each eviction is retried without limit, as a
rollback is, because a victim gang left below its minMember is worse than a late one. (It was
one attempt per delivery: a 429 on the second victim of a gang, five deliveries in a row, left
the first deleted and the second running.) Other API errors than "gone or replaced" are
raised, for the caller's retry and dead-letter policy; the event is best effort; a
nomination is retried until the deadline, then given up. Never publishes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from services.binder import eviction, messages, retries, statuses
from services.binder.eviction import Skip
from services.binder.ports import Kube, WallClock
from services.binder.reporter import best_effort
from services.contracts.decisions import Assignment, Preemption, Victim
from services.contracts.ids import GroupKey, is_singleton, split_key
from services.kube import errors
from services.kube.events import NORMAL, ObjectRef
from services.runtime import metrics

log = logging.getLogger(__name__)

T = TypeVar("T")

PREEMPTED = "Preempted"
ACTION_PREEMPTING = "Preempting"
GONE_OR_REPLACED = (errors.KubeNotFound, errors.KubeConflict, errors.KubeInvalid)
"""What a write on a pod answers when it is gone or its name now belongs to another pod (a
status patch carries the uid, a delete a uid precondition)."""
RETRY_FIRST_WAIT_SECONDS = 0.2
RETRY_MAX_WAIT_SECONDS = 5.0
_RETRY = retries.Retry(first_wait_seconds=RETRY_FIRST_WAIT_SECONDS,
                       max_wait_seconds=RETRY_MAX_WAIT_SECONDS)
"""A read or write of a victim or preemptor pod: KubeUnavailable retried without limit, the
caller bounding the time where it must (module docstring)."""


@dataclass(frozen=True)
class Preempted:
    """What carrying out a Preemption did, as pod uids in decision order: `evicted` victims
    deleted by this call, `skipped` victims left alone with why, `nominated` preemptor pods
    whose nominatedNodeName was written; `is_expired` when the decision was past its deadline,
    so nothing was done."""

    evicted: tuple[str, ...] = ()
    skipped: tuple[tuple[str, Skip], ...] = ()
    nominated: tuple[str, ...] = ()
    is_expired: bool = False


async def carry_out(preemption: Preemption, kube: Kube, *, scheduler_name: str,
                    clock: WallClock, concurrency: int) -> Preempted:
    """Evict `preemption.victims` one by one in their order, then nominate the nodes of
    `preemption.nominated` (at most `concurrency` requests at once).

    A decision received after `deadline_ms` (UTC epoch ms, compared with `clock`) does
    nothing: the planner holds the nominated nodes only until then. `scheduler_name` names
    the scheduler in the condition message, as the preemptor's `spec.schedulerName` does.
    Raises:
        KubeError subclasses other than those of a pod gone or replaced (a read or write
        failed: the whole decision is retried, skipping what is done).
    """
    if clock() > preemption.deadline_ms:
        log.warning("preemption %s of %s received %.1fs after its deadline; evicting nothing",
                    preemption.id, preemption.group, (clock() - preemption.deadline_ms) / 1000)
        for _ in preemption.victims:
            metrics.preemption_victims_skipped.labels(Skip.EXPIRED.value).inc()
        return Preempted(skipped=tuple((v.uid, Skip.EXPIRED) for v in preemption.victims),
                         is_expired=True)
    preemptor = _Preemptor(kube, preemption)
    message = messages.preempting(scheduler_name, preemption.group)
    try:
        async with asyncio.timeout(_seconds_left(preemption, clock)):
            pods = [await _persist(partial(kube.get_pod, victim.namespace, victim.name),
                                   f"get victim pod {victim.namespace}/{victim.name}")
                    for victim in preemption.victims]
    except TimeoutError:
        log.warning("preemption %s of %s: the victims could not be read before its deadline "
                    "(API server unavailable); evicting nothing", preemption.id,
                    preemption.group)
        for _ in preemption.victims:
            metrics.preemption_victims_skipped.labels(Skip.EXPIRED.value).inc()
        return Preempted(skipped=tuple((v.uid, Skip.EXPIRED) for v in preemption.victims),
                         is_expired=True)
    evicted: list[str] = []
    skipped: list[tuple[str, Skip]] = []
    for victim, pod in zip(preemption.victims, pods, strict=True):
        skip = await _evict(kube, victim, pod, preemption, message, clock, preemptor)
        if skip is None:
            evicted.append(victim.uid)
            metrics.preemption_victims.inc()
        else:
            skipped.append((victim.uid, skip))
            metrics.preemption_victims_skipped.labels(skip.value).inc()
    gate = asyncio.Semaphore(max(1, concurrency))

    async def nominate(member: Assignment) -> bool:
        async with gate:
            try:
                async with asyncio.timeout(_seconds_left(preemption, clock)):
                    return await _nominate(kube, member)
            except TimeoutError:
                log.info("preemption %s: pod %s/%s not nominated to %s before the deadline",
                         preemption.id, member.namespace, member.name, member.node)
                return False

    written = await asyncio.gather(*(nominate(m) for m in preemption.nominated))
    nominated = tuple(m.pod_uid for m, done in zip(preemption.nominated, written, strict=True)
                      if done)
    return Preempted(tuple(evicted), tuple(skipped), nominated)


def _seconds_left(preemption: Preemption, clock: WallClock) -> float:
    """Seconds until `preemption.deadline_ms` by `clock` (UTC epoch ms); 0 once past."""
    return max(0.0, (preemption.deadline_ms - clock()) / 1000)


async def _persist(call: Callable[[], Awaitable[T]], what: str) -> T:
    """`call()`, KubeUnavailable retried without limit (`_RETRY`), each retry logged."""
    return await _RETRY.call(call, before_sleep=lambda state: log.warning(
        "preemption: %s failed %d times, retrying: %s", what, state.attempt_number,
        state.outcome.exception() if state.outcome else None))


async def _evict(kube: Kube, victim: Victim, pod: dict[str, Any] | None, preemption: Preemption,
                 message: str, clock: WallClock, preemptor: _Preemptor) -> Skip | None:
    """Condition, delete and event for one victim, `pod` as read (None: gone); None when
    deleted, else why not. Transient errors are retried without limit (module docstring)."""
    name = f"{victim.namespace}/{victim.name}"
    skip = eviction.skip_reason(victim, pod, preemption.priority)
    if skip is not None:
        log.info("preemption %s: not evicting pod %s (uid %s): %s", preemption.id, name,
                 victim.uid, skip.value)
        return skip
    assert pod is not None
    patch = statuses.disruption_target_status(pod, message, statuses.from_ms(clock()))
    try:
        if patch is not None:
            await _persist(partial(kube.patch_pod_status, victim.namespace, victim.name,
                                   victim.uid, patch), f"condition on victim pod {name}")
        await _persist(partial(kube.delete_pod, victim.namespace, victim.name, victim.uid),
                       f"delete victim pod {name}")
    except errors.KubeNotFound:
        log.info("preemption %s: pod %s already deleted", preemption.id, name)
        return Skip.GONE
    except (errors.KubeConflict, errors.KubeInvalid) as error:
        log.info("preemption %s: pod %s replaced meanwhile, not evicting it: %s",
                 preemption.id, name, error)
        return Skip.REPLACED
    log.info("preemption %s: deleted pod %s (uid %s, priority %d) on %s for %s",
             preemption.id, name, victim.uid, eviction.pod_priority(pod), victim.node,
             preemption.group)
    text = messages.preempted(preemption.group, await preemptor.uid(), victim.node,
                              preemption.reason)
    await best_effort(f"Preempted event on pod {name}", partial(
        kube.create_event, ObjectRef("Pod", "v1", victim.namespace, victim.name, victim.uid),
        event_type=NORMAL, reason=PREEMPTED, message=text, action=ACTION_PREEMPTING,
        now=statuses.from_ms(clock())))
    return None


async def _nominate(kube: Kube, member: Assignment) -> bool:
    """Write the member's nominatedNodeName; False when it is gone, replaced, bound,
    terminating or already nominated there. Transient errors are retried (the caller bounds
    the time)."""
    what = f"nominate pod {member.namespace}/{member.name}"
    pod = await _persist(partial(kube.get_pod, member.namespace, member.name), what)
    if pod is None or (pod.get("metadata") or {}).get("uid") != member.pod_uid:
        return False
    if (pod.get("spec") or {}).get("nodeName") or (pod.get("metadata") or {}).get(
            "deletionTimestamp"):
        return False
    patch = statuses.nominated_status(pod, member.node)
    if patch is None:
        return False
    try:
        await _persist(partial(kube.patch_pod_status, member.namespace, member.name,
                               member.pod_uid, patch), what)
    except GONE_OR_REPLACED as error:
        log.debug("nominating %s for pod %s/%s skipped: %s", member.node, member.namespace,
                  member.name, error)
        return False
    return True


class _Preemptor:
    """The preemptor's uid for the victims' events, read once when first needed: the
    PodGroup's `metadata.uid` for a gang, the pod's uid for a singleton; the group's name
    when it cannot be read."""

    def __init__(self, kube: Kube, preemption: Preemption) -> None:
        self._kube = kube
        self._preemption = preemption
        self._uid: str | None = None

    async def uid(self) -> str:
        if self._uid is None:
            self._uid = await self._read()
        return self._uid

    async def _read(self) -> str:
        group = self._preemption.group
        namespace, name = split_key(GroupKey(group))
        if is_singleton(GroupKey(group)):
            return next((m.pod_uid for m in self._preemption.nominated), group)
        try:
            podgroup = await self._kube.get_podgroup(namespace, name)
        except errors.KubeError as error:
            log.debug("cannot read PodGroup %s for its uid: %s", group, error)
            return group
        return str(((podgroup or {}).get("metadata") or {}).get("uid") or group)
