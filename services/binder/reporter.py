"""What users see: Scheduled / FailedScheduling events, the PodScheduled condition, PodGroup status.

Layer: binder shell. Best effort: a failed write is retried briefly when transient, then logged,
and never fails the decision (the next decision about the same object writes again).
FailedScheduling reports for rejections are rate-limited per pod and per PodGroup.
Nothing is read to write a report (one request per pod per report), as kube-scheduler writes
from its informer copy:
a pod's condition is patched from what this process wrote on it (`pod_conditions`), the patch's
uid refusing a replaced pod and its answer showing a pod bound meanwhile; PodGroup status and
events take the PodGroup from `podgroup_writes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from aiolimiter import AsyncLimiter

from services.binder import messages, retries, statuses
from services.binder.placing import Settled
from services.binder.pod_conditions import ConditionMemory
from services.binder.podgroup_writes import PodGroupWrites, ViewAt
from services.binder.ports import Kube
from services.binder.ratelimit import ReportLimiter
from services.contracts.decisions import Placement, PodRef, Rejection, StatusUpdate
from services.contracts.ids import GroupKey, is_singleton, split_key
from services.kube import errors
from services.kube.events import NORMAL, WARNING, ObjectRef
from services.runtime import metrics
from services.runtime.cancellation import cancel_and_wait

log = logging.getLogger(__name__)

SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"
ACTION_BINDING = "Binding"
ACTION_SCHEDULING = "Scheduling"
WRITE_ATTEMPTS = 3
_WRITE_RETRY = retries.Retry(first_wait_seconds=0.2, max_wait_seconds=2.0,
                             attempts=WRITE_ATTEMPTS)
"""A report write: KubeUnavailable retried up to WRITE_ATTEMPTS attempts in all."""
EVENT_BUDGET = (20.0, 1.0)
"""FailedScheduling events on pods: at most 20 per second over the whole binder (a leaky
bucket). Beyond it a pod's event is owed (its PodScheduled condition is written at once) and
written later at the budget's rate, only the newest reason per pod. Under contention every
waiting pod is rejected anew as the others move, and one event per pod per change made those
events half the API server's load; kube-scheduler's event broadcaster aggregates likewise."""
OWED_EVENTS = 100_000
"""Owed events kept at most (the oldest dropped first, counted in events_dropped)."""
PLACED_REPORTS = 32
"""Placements whose Scheduled (or rollback) events are being written at once in the background
(`placed_in_background`). Each writes one event per member, so with `concurrency` writes per
placement this bounds the events in flight without holding any placement's binds."""
PLACED_BACKLOG = 16_384
"""Placements whose events are written or wait their turn (`PLACED_REPORTS` at a time); a
placement past its binds waits before it frees its place in the binder only while this many
are, and meanwhile lets reports go as if nothing bound (`urgent`). Each queued costs about
3 KB (its task, its placement and outcome: a singleton's), so at most about 50 MB. At 4,096,
workload b at 5,000 nodes of the cluster benchmark (7,479 placements) filled it 60 s in, and
from then on placements waited 6-12 s each for events to be written, the events setting the
binder's pace (bench/README.md, "Session 35"). Before session 22 a placement waited for one of
the `PLACED_REPORTS` writers instead: in workload b every placement waited 2.8 s for them,
longer than its binds took. As client-go's event broadcaster, events queue behind the work they
report (it drops them past 1,000 queued; here the binder waits instead, so none is dropped
while it runs; `close` drops those still queued)."""


class StatusLog(Protocol):
    """The newest StatusUpdate published for a group, if known (`status_log.StreamStatusLog`)."""

    async def latest(self, group: str) -> StatusUpdate | None: ...


class Reporter:
    """Writes events, conditions and PodGroup status for decisions and their outcomes.

    `kube` serves rejections, status and Scheduled events (in the binder:
    `yielding.YieldingKube`, which lets few through while placements bind: a bind starts a
    gang's pods, its event only tells of it); `placing_kube` serves a rollback's events,
    which never wait behind other reports (the next rejection of the same pods must not
    overtake them). `view` is the bus
    view: pods it shows bound or replaced get no rejection, and PodGroups are named from it
    (`podgroup_writes`). `status_log` holds the newest StatusUpdate published per group.
    `urgent` is held while a placement waits for room among the Scheduled events queued
    (`placed_in_background`): in the binder `ReportGate.urgent`, which lets `kube`'s reports
    through as if nothing bound meanwhile.
    """

    def __init__(
        self,
        kube: Kube,
        *,
        event_interval_seconds: float,
        concurrency: int,
        status_log: StatusLog,
        placing_kube: Kube,
        view: ViewAt,
        monotonic: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        event_budget: tuple[float, float] = EVENT_BUDGET,
        urgent: Callable[[], AbstractAsyncContextManager[object]] = contextlib.nullcontext,
    ) -> None:
        self._kube = kube
        self._urgent = urgent
        self._view = view
        self._conditions = ConditionMemory()
        self._groups = PodGroupWrites(kube, view)
        self._placing_kube = placing_kube
        self._status_log = status_log
        self._limiter = ReportLimiter(event_interval_seconds)
        self._event_budget = AsyncLimiter(*event_budget)
        self._owed: dict[str, tuple[ObjectRef, str]] = {}
        self._paying: asyncio.Task[None] | None = None
        self._concurrency = concurrency
        self._monotonic = monotonic
        self._now = now
        self._placed_gate = asyncio.Semaphore(PLACED_REPORTS)
        self._placed_backlog = asyncio.Semaphore(PLACED_BACKLOG)
        self._placed_writes: set[asyncio.Task[None]] = set()

    async def placed(self, placement: Placement, settled: Settled) -> None:
        """`Scheduled` for each member left bound; on rollback, FailedScheduling for the rest
        and for the PodGroup, naming the failing member."""
        self._forget_bound(settled)
        kube = self._placing_kube
        writes = [
            partial(self._event, _pod_ref(m.namespace, m.name, m.pod_uid), NORMAL, SCHEDULED,
                    messages.scheduled(m), ACTION_BINDING, self._kube)
            for m in settled.bound
        ]
        if settled.rolled_back is not None:
            undone = settled.rolled_back.undone
            text = messages.rolled_back(placement.group, placement.attempt,
                                        settled.rolled_back.reason,
                                        len(undone.deleted), len(undone.kept))
            bound = {m.pod_uid for m in settled.bound} | set(undone.deleted)
            writes += [
                partial(self._event, _pod_ref(m.namespace, m.name, m.pod_uid), WARNING,
                        FAILED_SCHEDULING, text, ACTION_SCHEDULING, kube)
                for m in placement.members if m.pod_uid not in bound
            ]
            writes.append(partial(self._group_event, placement.group, placement.plan_seq, text,
                                  kube))
        await self._run_all(writes)

    async def placed_in_background(self, placement: Placement, settled: Settled) -> None:
        """As `placed`, but return once its writes are queued (waiting only while
        PLACED_BACKLOG placements' writes are queued or running; PLACED_REPORTS run at once,
        first come first served): the placement's outcome is published already, and its
        binder slot need not wait for events, which kube-scheduler too writes in the
        background (client-go's event broadcaster). While it waits, reports go as if nothing
        bound (`urgent`: the binder's `ReportGate.urgent`). `close` cancels those still queued
        or running (events are best effort)."""
        self._forget_bound(settled)  # at once: no rejection may report them meanwhile
        # a full backlog makes binds wait on reports: let reports through meanwhile
        waiting = self._urgent() if self._placed_backlog.locked() else contextlib.nullcontext()
        async with waiting:
            await self._placed_backlog.acquire()
        task = asyncio.create_task(self._placed_in_turn(placement, settled),
                                   name=f"events of placement {placement.id}")
        self._placed_writes.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._placed_writes.discard(finished)
            self._placed_backlog.release()
            if not finished.cancelled() and finished.exception() is not None:
                log.error("events of placement %s failed", placement.id,
                          exc_info=finished.exception())

        task.add_done_callback(done)

    async def _placed_in_turn(self, placement: Placement, settled: Settled) -> None:
        """`placed`, as one of the PLACED_REPORTS placements written at once; a rolled-back
        placement's events at once, ahead of the queued Scheduled ones: the planner's next
        rejection of the same pods is written as it comes, and a rollback's FailedScheduling
        queued behind thousands of binds would land after it, the stale reason shown newest."""
        if settled.rolled_back is not None:
            await self.placed(placement, settled)
            return
        async with self._placed_gate:
            await self.placed(placement, settled)

    def _forget_bound(self, settled: Settled) -> None:
        """Owe no FailedScheduling to the members left bound, and never patch their
        PodScheduled condition to Unschedulable again."""
        for member in settled.bound:
            self._limiter.forget(member.pod_uid)
            self._owed.pop(member.pod_uid, None)
            self._conditions.bound(member.pod_uid)

    async def rejected(self, rejection: Rejection) -> None:
        """FailedScheduling and `PodScheduled=False/Unschedulable` for each pod (rate-limited),
        and a FailedScheduling event on the PodGroup (rate-limited)."""
        writes = [partial(self._unschedulable, pod, rejection.reason) for pod in rejection.pods]
        if self._allowed(rejection.group, rejection.reason):
            writes.append(partial(self._group_event, rejection.group, rejection.plan_seq,
                                  rejection.reason, self._kube))
        await self._run_all(writes)

    async def status(self, update: StatusUpdate) -> None:
        """Write the PodGroup's status (skipped for singleton groups and when current), in one
        request when this process holds the PodGroup or the view names it (`podgroup_writes`).

        What is written is the newest StatusUpdate of the group published by the time the
        PodGroup was read (or its copy used), which may be newer than `update`: another binder
        may be writing a newer one concurrently, and a conflict on the PodGroup makes the slower
        writer read both again, so an older status never lands after a newer one.
        """
        if is_singleton(GroupKey(update.group)):
            return
        now = self._now()

        async def change(current: dict[str, Any]) -> dict[str, Any] | None:
            return statuses.podgroup_status(await self._newest(update), current, now)

        async def write() -> None:
            changed = await self._groups.write(update.group, update.plan_seq, change)
            log.debug("PodGroup %s status %s", update.group, "written" if changed else "current")

        await best_effort(f"status of PodGroup {update.group}", write)

    async def _newest(self, update: StatusUpdate) -> StatusUpdate:
        """`update`, or a newer StatusUpdate of its group when one was published since."""
        latest = await self._status_log.latest(update.group)
        return latest if latest is not None and latest.plan_seq > update.plan_seq else update

    async def _unschedulable(self, pod: PodRef, reason: str) -> None:
        """Report one pod unschedulable, unless reported recently with the same reason: its
        condition first, then (if the pod is still there, unbound) its event."""
        if not self._allowed(pod.uid, reason):
            return
        if not await self._condition(pod, reason):
            self._limiter.forget(pod.uid)  # gone, replaced or bound meanwhile: nothing to say
            return
        about = _pod_ref(pod.namespace, pod.name, pod.uid)
        if self._event_budget.has_capacity():
            await self._event_budget.acquire()
            await self._event(about, WARNING, FAILED_SCHEDULING, reason, ACTION_SCHEDULING,
                              self._kube)
        else:
            self._owe(about, reason)
        self._limiter.record(pod.uid, reason, self._monotonic())

    async def _condition(self, pod: PodRef, reason: str) -> bool:
        """Write `PodScheduled=False/Unschedulable` with `reason` on the pod unless this process
        wrote it already; False when the pod is not there to be told: bound (by this process,
        or as the view or the patch's answer shows), gone, or replaced under its name (the
        patch's uid is refused). A pod found bound by the answer gets `PodScheduled=True` back,
        as its binding had set it."""
        uid = pod.uid
        if self._conditions.is_bound(uid) or self._view.view.is_settled(
                pod.namespace, pod.name, uid):
            return False
        condition = statuses.unschedulable(self._conditions.written(uid), reason, self._now())
        if condition is None:
            return True
        try:
            stored = await self._kube.patch_pod_status(
                pod.namespace, pod.name, uid, statuses.unschedulable_patch(condition))
        except (errors.KubeNotFound, errors.KubeConflict, errors.KubeInvalid) as error:
            log.debug("pod %s/%s gone or replaced, not reported: %s", pod.namespace, pod.name,
                      error)
            self._conditions.forget(uid)
            return False
        if (stored.get("spec") or {}).get("nodeName"):
            await self._kube.patch_pod_status(pod.namespace, pod.name, uid,
                                              statuses.scheduled_patch(self._now()))
            self._conditions.bound(uid)
            return False
        self._conditions.wrote(uid, condition)
        return True

    async def close(self) -> None:
        """Stop paying owed events and writing placements' events: those not written yet,
        queued or being written, are dropped (events are best effort, as kube-scheduler's
        broadcaster drops what it holds at exit). All are cancelled before any is awaited,
        so none starts writing while the others are being cancelled."""
        if self._paying is not None and not self._paying.done():
            await cancel_and_wait(self._paying)
        self._owed.clear()
        writes = list(self._placed_writes)
        for task in writes:
            task.cancel()
        await asyncio.gather(*writes, return_exceptions=True)

    def _owe(self, about: ObjectRef, reason: str) -> None:
        """Keep a pod's FailedScheduling event for when the budget allows (the newest reason
        per pod; the oldest owed first); start the writer that pays them off."""
        self._owed.pop(about.uid, None)
        self._owed[about.uid] = (about, reason)
        metrics.events_deferred.inc()
        if self._paying is None or self._paying.done():
            self._paying = asyncio.create_task(self._pay_owed())

    async def _pay_owed(self) -> None:
        """Write owed events at the budget's rate until none is left; a pod bound meanwhile
        is owed nothing (`placed` forgets it), and one owed past OWED_EVENTS is dropped."""
        while self._owed:
            while len(self._owed) > OWED_EVENTS:
                del self._owed[next(iter(self._owed))]
                metrics.events_dropped.inc()
            await self._event_budget.acquire()
            if not self._owed:
                return
            uid = next(iter(self._owed))
            about, reason = self._owed.pop(uid)
            await best_effort("owed event", partial(
                self._event, about, WARNING, FAILED_SCHEDULING, reason, ACTION_SCHEDULING,
                self._kube))

    async def _group_event(self, group: str, plan_seq: int, message: str, kube: Kube) -> None:
        """A FailedScheduling event on the PodGroup (none for singleton groups), through
        `kube` (the reports' or the placing API); `plan_seq`: the decision's plan point."""
        if is_singleton(GroupKey(group)):
            return
        namespace, name = split_key(GroupKey(group))
        named = await self._groups.about(group, plan_seq, kube)
        if named is None:
            return
        uid, api_version = named
        about = ObjectRef("PodGroup", api_version, namespace, name, uid)
        await self._event(about, WARNING, FAILED_SCHEDULING, message, ACTION_SCHEDULING, kube)
        self._limiter.record(group, message, self._monotonic())

    async def _event(
        self, about: ObjectRef, event_type: str, reason: str, message: str, action: str,
        kube: Kube,
    ) -> None:
        """Create one event, through `kube` (the reports' or the placing API)."""
        await kube.create_event(
            about, event_type=event_type, reason=reason, message=message, action=action,
            now=self._now(),
        )

    def _allowed(self, key: str, message: str) -> bool:
        return self._limiter.is_allowed(key, message, self._monotonic())

    async def _run_all(self, writes: Sequence[Callable[[], Awaitable[None]]]) -> None:
        """Run the writes concurrently (bounded), each best effort."""
        if len(writes) <= self._concurrency:  # the usual case: no bound to keep
            await asyncio.gather(*(best_effort("report", write) for write in writes))
            return
        gate = asyncio.Semaphore(self._concurrency)

        async def one(write: Callable[[], Awaitable[None]]) -> None:
            async with gate:
                await best_effort("report", write)

        await asyncio.gather(*(one(write) for write in writes))


def _pod_ref(namespace: str, name: str, uid: str) -> ObjectRef:
    return ObjectRef("Pod", "v1", namespace, name, uid)


async def best_effort(what: str, write: Callable[[], Awaitable[None]]) -> None:
    """Run `write`, retrying transient errors a few times; log and swallow any KubeError."""
    try:
        await _WRITE_RETRY.call(write)
    except (errors.KubeNotFound, errors.KubeConflict, errors.KubeInvalid) as error:
        log.debug("%s skipped (object gone or changed): %s", what, error)
    except errors.KubeError as error:
        log.warning("%s failed: %s", what, error)
