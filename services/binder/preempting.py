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
or terminating and are skipped. API errors other than "gone or replaced" are raised, for the
caller's retry and dead-letter policy; the event is best effort. Never publishes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from functools import partial

from services.binder import eviction, messages, statuses
from services.binder.eviction import Skip
from services.binder.ports import Kube, WallClock
from services.binder.reporter import best_effort
from services.contracts.decisions import Assignment, Preemption, Victim
from services.contracts.ids import GroupKey, is_singleton, split_key
from services.kube import errors
from services.kube.events import NORMAL, ObjectRef
from services.runtime import metrics

log = logging.getLogger(__name__)

PREEMPTED = "Preempted"
ACTION_PREEMPTING = "Preempting"
GONE_OR_REPLACED = (errors.KubeNotFound, errors.KubeConflict, errors.KubeInvalid)
"""What a write on a pod answers when it is gone or its name now belongs to another pod (a
status patch carries the uid, a delete a uid precondition)."""


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
    evicted: list[str] = []
    skipped: list[tuple[str, Skip]] = []
    for victim in preemption.victims:
        skip = await _evict(kube, victim, preemption, message, clock, preemptor)
        if skip is None:
            evicted.append(victim.uid)
            metrics.preemption_victims.inc()
        else:
            skipped.append((victim.uid, skip))
            metrics.preemption_victims_skipped.labels(skip.value).inc()
    gate = asyncio.Semaphore(max(1, concurrency))

    async def nominate(member: Assignment) -> bool:
        async with gate:
            return await _nominate(kube, member)

    written = await asyncio.gather(*(nominate(m) for m in preemption.nominated))
    nominated = tuple(m.pod_uid for m, done in zip(preemption.nominated, written, strict=True)
                      if done)
    return Preempted(tuple(evicted), tuple(skipped), nominated)


async def _evict(kube: Kube, victim: Victim, preemption: Preemption, message: str,
                 clock: WallClock, preemptor: _Preemptor) -> Skip | None:
    """Condition, delete and event for one victim; None when deleted, else why not."""
    name = f"{victim.namespace}/{victim.name}"
    pod = await kube.get_pod(victim.namespace, victim.name)
    skip = eviction.skip_reason(victim, pod, preemption.priority)
    if skip is not None:
        log.info("preemption %s: not evicting pod %s (uid %s): %s", preemption.id, name,
                 victim.uid, skip.value)
        return skip
    assert pod is not None
    patch = statuses.disruption_target_status(pod, message, statuses.from_ms(clock()))
    try:
        if patch is not None:
            await kube.patch_pod_status(victim.namespace, victim.name, victim.uid, patch)
        await kube.delete_pod(victim.namespace, victim.name, victim.uid)
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
    terminating or already nominated there."""
    pod = await kube.get_pod(member.namespace, member.name)
    if pod is None or (pod.get("metadata") or {}).get("uid") != member.pod_uid:
        return False
    if (pod.get("spec") or {}).get("nodeName") or (pod.get("metadata") or {}).get(
            "deletionTimestamp"):
        return False
    patch = statuses.nominated_status(pod, member.node)
    if patch is None:
        return False
    try:
        await kube.patch_pod_status(member.namespace, member.name, member.pod_uid, patch)
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
