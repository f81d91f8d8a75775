"""Reports yield to binding: while any placement binds, report writes get few API slots.

Layer: binder shell. Binds and reports share one API server. Reports (FailedScheduling
events, PodScheduled conditions, PodGroup status: several requests per pod or group) outnumber
binds a hundred to one under contention, and an API server near its in-flight limit serves
them in arrival order, so without a rule they starve the binds that free the queue (placements
then arrive after their deadline on a slowed API server; docs/design-notes.md, "Deadlines,
rollback and expiry"). `ReportGate` lets at most
`while_binding` report requests be in flight while a placement is being carried out, and
`idle` otherwise; binds never wait on it. `YieldingKube` is the reporter's view of the API:
every request waits for a slot first. Mirrors in spirit API priority and fairness, which
kube-scheduler relies on server-side: binds are the workload-high traffic here.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from services.binder.ports import Kube
from services.kube.events import ObjectRef
from services.kube.podgroups import StatusChange, StatusWrite

REPORTS_WHILE_BINDING = 4
"""Report requests in flight while a placement binds."""
REPORTS_IDLE = 64
"""Report requests in flight while nothing binds."""


class ReportGate:
    """Counts placements binding and report requests in flight (module docstring).

    Report requests are let in first come, first served: a freed slot goes straight to the
    oldest waiter (no waiter is woken only to wait again, so thousands queued cost nothing
    while they wait). A lower limit (a placement starting to bind) lets the requests already
    in flight finish; only new ones wait. Units: counts of requests. Never raises;
    `report()` only waits.
    """

    def __init__(self, while_binding: int = REPORTS_WHILE_BINDING,
                 idle: int = REPORTS_IDLE) -> None:
        if not 1 <= while_binding <= idle:
            raise ValueError(f"need 1 <= while_binding ({while_binding}) <= idle ({idle})")
        self._while_binding, self._idle = while_binding, idle
        self._binding = 0
        self._reports = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    @property
    def limit(self) -> int:
        """Report requests allowed in flight now."""
        return self._while_binding if self._binding else self._idle

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
    async def report(self) -> AsyncIterator[None]:
        """Hold one report request's slot, waiting (in turn) until one is free."""
        if self._waiters or self._reports >= self.limit:
            turn = asyncio.get_running_loop().create_future()
            self._waiters.append(turn)
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

    def _release(self) -> None:
        self._reports -= 1
        self._admit()

    def _admit(self) -> None:
        """Give free slots to the oldest waiters still waiting."""
        while self._waiters and self._reports < self.limit:
            turn = self._waiters.popleft()
            if not turn.done():
                self._reports += 1
                turn.set_result(None)


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
