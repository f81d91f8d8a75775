"""Reports yield to binding: while any placement binds, report writes get few API slots.

Layer: binder shell. Binds and reports share one API server. Reports (FailedScheduling
events, PodScheduled conditions, PodGroup status: several requests per pod or group) outnumber
binds a hundred to one under contention, and an API server near its in-flight limit serves
them in arrival order, so without a rule they starve the binds that free the queue (placements
then arrive after their deadline on a slowed API server; docs/design-notes.md, "Deadlines,
rollback and expiry"). `ReportGate` holds report requests while a placement is being
carried out (each at most `max_hold_seconds`, then `while_binding` at a time), and lets `idle`
be in flight otherwise; binds never wait on it. A placement that must wait for its own reports'
room (`reporter.PLACED_BACKLOG` full) makes the gate `urgent`: binds then wait on reports, so
reports go as if nothing bound until it has room (priority inheritance). Without that, the
binder's pace fell to the trickle of reports let through while others bound: in workload b at
5,000 nodes of the cluster benchmark (7,479 placements, 5,000 of them singletons), once 4,096
placements' Scheduled events were queued, each placement waited 6-12 s for one of them to be
written, and the last 2,000 pods bound at 40 a second (bench/README.md, "Session 35").
`YieldingKube` is the reporter's view of the API: every request waits for a slot first.
Mirrors in spirit API priority and fairness, which kube-scheduler relies on server-side: binds
are the workload-high traffic here.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from services.binder.ports import Kube
from services.kube.events import ObjectRef
from services.kube.podgroups import StatusChange, StatusWrite

REPORTS_WHILE_BINDING = 4
"""Report requests in flight while placements bind, of those held `MAX_HOLD_SECONDS`: under a
steady stream of placements, reports then flow as before session 26, only 10 s late."""
REPORTS_IDLE = 64
"""Report requests in flight while nothing binds."""
MAX_HOLD_SECONDS = 10.0
"""The longest a report request waits because placements keep binding; it then goes (at most
REPORTS_WHILE_BINDING such at once), so reports progress under a steady stream of placements.
As kube-scheduler's longest pod backoff (podMaxBackoffSeconds, 10 s), which also bounds how
late the binder writes a repeated rejection (`service.REJECTION_MAX_SETTLE_SECONDS`).
Why hold at all: in the cluster benchmark the API server also serves the pods' creator, and
reports written between binds (a Scheduled event per pod, FailedScheduling, PodGroup status)
slow both. Workload c, gangsched alone, single runs: makespan 17.6 and 18.2 s with 4 report
requests in flight while binding (before session 26); 15.4-17.2 s (median 16.0) with 1; 14.4,
14.8, 17.0 and 18.1 s holding them; 15.3 s writing no report at all. In workload a the
differences stayed within run-to-run noise (8.8-11.2 s whichever rule; bench/README.md,
"Session 26")."""

CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution
"""Seconds; how early asyncio may run a timer (its loop's `_clock_resolution`)."""


class ReportGate:
    """Counts placements binding and report requests in flight (module docstring).

    While any placement binds, a report request waits until none binds or until it has waited
    `max_hold_seconds`; those held that long go `while_binding` at a time. With nothing
    binding, or while a placement waits on reports (`urgent`), `idle` go at once. Report
    requests are let in first come, first served: a freed slot goes straight to the oldest
    waiter (no waiter is woken only to wait again, so thousands queued cost nothing while they
    wait). A lower limit (a placement starting to
    bind) lets the requests already in flight finish; only new ones wait. Units: counts of
    requests, seconds of the running loop's monotonic clock. `report()` only waits; the
    constructor raises ValueError unless 1 <= while_binding <= idle and max_hold_seconds >= 0.
    """

    def __init__(self, while_binding: int = REPORTS_WHILE_BINDING,
                 idle: int = REPORTS_IDLE, max_hold_seconds: float = MAX_HOLD_SECONDS) -> None:
        if not 1 <= while_binding <= idle:
            raise ValueError(f"need 1 <= while_binding ({while_binding}) <= idle ({idle})")
        if max_hold_seconds < 0:
            raise ValueError(f"max_hold_seconds must be >= 0, not {max_hold_seconds}")
        self._while_binding, self._idle = while_binding, idle
        self._max_hold = max_hold_seconds
        self._binding = 0
        self._urgent = 0
        self._reports = 0
        self._waiters: collections.deque[tuple[float, asyncio.Future[None]]] = \
            collections.deque()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def waiting(self) -> int:
        """Report requests waiting for a slot (cancelled ones may still be counted)."""
        return len(self._waiters)

    @contextlib.asynccontextmanager
    async def binding(self) -> AsyncIterator[None]:
        """Hold while one placement is carried out (binds never wait here)."""
        self._binding += 1
        try:
            yield
        finally:
            self._binding -= 1
            self._admit()

    @contextlib.asynccontextmanager
    async def urgent(self) -> AsyncIterator[None]:
        """Hold while a placement waits for room among the reports queued (binds then wait on
        reports): meanwhile reports go as if nothing bound, `idle` at once, none held."""
        self._urgent += 1
        self._admit()
        try:
            yield
        finally:
            self._urgent -= 1
            self._admit()

    @contextlib.asynccontextmanager
    async def report(self) -> AsyncIterator[None]:
        """Hold one report request's slot, waiting (in turn) until one is free."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._waiters or not self._may_start(now, now):
            turn = loop.create_future()
            self._waiters.append((now, turn))
            self._admit()  # the waiters ahead may all be cancelled; else arms the hold's timer
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():  # admitted, then cancelled
                    self._release()
                raise
        else:
            self._reports += 1
        try:
            yield
        finally:
            self._release()

    def _may_start(self, asked_at: float, now: float) -> bool:
        """Whether a request asked at `asked_at` may take a slot at `now` (loop time). A hold
        ending within the clock's resolution has ended: asyncio runs a timer up to that much
        early, and the wake-up must not find the hold still running and re-arm for ever."""
        if not self._binding or self._urgent:
            return self._reports < self._idle
        return (self._reports < self._while_binding
                and now + CLOCK_RESOLUTION >= asked_at + self._max_hold)

    def _release(self) -> None:
        self._reports -= 1
        self._admit()

    def _admit(self) -> None:
        """Give free slots to the oldest waiters still waiting; while placements bind, wake
        again when the oldest has been held its longest."""
        now = asyncio.get_running_loop().time()
        while self._waiters:
            asked_at, turn = self._waiters[0]
            if turn.done():  # cancelled while waiting
                self._waiters.popleft()
                continue
            if not self._may_start(asked_at, now):
                if (self._binding and not self._urgent
                        and now + CLOCK_RESOLUTION < asked_at + self._max_hold):
                    self._wake_at(asked_at + self._max_hold)
                return  # else a slot is busy: its release admits
            self._waiters.popleft()
            self._reports += 1
            turn.set_result(None)

    def _wake_at(self, when: float) -> None:
        """Run `_admit` at loop time `when` (one timer, the earliest asked for, kept)."""
        if self._timer is not None and not self._timer.cancelled() \
                and self._timer.when() <= when:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._admit()


class YieldingKube:
    """`Kube` whose every request first takes a `ReportGate` report slot (the reporter's)."""

    def __init__(self, kube: Kube, gate: ReportGate) -> None:
        self._kube, self._gate = kube, gate

    async def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        async with self._gate.report():
            return await self._kube.get_pod(namespace, name)

    async def get_node(self, name: str) -> dict[str, Any] | None:
        async with self._gate.report():
            return await self._kube.get_node(name)

    async def node_exists(self, name: str) -> bool:
        async with self._gate.report():
            return await self._kube.node_exists(name)

    async def nodes_listed(self, names: Sequence[str]) -> frozenset[str]:
        async with self._gate.report():
            return await self._kube.nodes_listed(names)

    async def bind(self, namespace: str, name: str, uid: str, node: str, *,
                   annotations: dict[str, str]) -> None:
        async with self._gate.report():
            await self._kube.bind(namespace, name, uid, node, annotations=annotations)

    async def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        async with self._gate.report():
            await self._kube.delete_pod(namespace, name, uid)

    async def patch_pod_status(self, namespace: str, name: str, uid: str,
                               status: dict[str, Any]) -> dict[str, Any]:
        async with self._gate.report():
            return await self._kube.patch_pod_status(namespace, name, uid, status)

    async def get_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        async with self._gate.report():
            return await self._kube.get_claim(namespace, name)

    async def get_volume(self, name: str) -> dict[str, Any] | None:
        async with self._gate.report():
            return await self._kube.get_volume(name)

    async def pre_bind_volume(self, name: str, volume_version: str,
                              claim: dict[str, Any]) -> None:
        async with self._gate.report():
            await self._kube.pre_bind_volume(name, volume_version, claim)

    async def select_node(self, namespace: str, name: str, uid: str, node: str) -> None:
        async with self._gate.report():
            await self._kube.select_node(namespace, name, uid, node)

    async def get_podgroup(self, namespace: str, name: str) -> dict[str, Any] | None:
        async with self._gate.report():
            return await self._kube.get_podgroup(namespace, name)

    async def update_podgroup_status(self, namespace: str, name: str, change: StatusChange,
                                     uid: str | None = None) -> StatusWrite:
        async with self._gate.report():
            return await self._kube.update_podgroup_status(namespace, name, change, uid)

    async def patch_podgroup_status_at(self, podgroup: dict[str, Any],
                                       status: dict[str, Any]) -> dict[str, Any]:
        async with self._gate.report():
            return await self._kube.patch_podgroup_status_at(podgroup, status)

    async def first_podgroup_status(self, podgroup: dict[str, Any],
                                    status: dict[str, Any]) -> dict[str, Any]:
        async with self._gate.report():
            return await self._kube.first_podgroup_status(podgroup, status)

    async def create_event(self, about: ObjectRef, *, event_type: str, reason: str,
                           message: str, action: str, now: datetime) -> None:
        async with self._gate.report():
            await self._kube.create_event(about, event_type=event_type, reason=reason,
                                          message=message, action=action, now=now)
