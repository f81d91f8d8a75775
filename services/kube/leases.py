"""A Kubernetes Lease (coordination.k8s.io/v1) held by one holder identity, as a `LeaseStore`.

Layer: kube. The binder holds the Lease named after the scheduler name it serves, so two
gangsched installations serving one name never bind at once: one binds, the other stands by
and takes over once the first releases the Lease or stops renewing it (docs/design-notes.md,
"One installation per scheduler name"). Mirrors client-go's leader election, which
kube-scheduler uses (`--leader-elect`, Lease `kube-system/kube-scheduler`): the holder writes
`holderIdentity` and `renewTime` with the object's resourceVersion as precondition; a Lease
is taken over only when its record has not changed for `leaseDurationSeconds` as measured on
this process's own monotonic clock (no trust in the other holder's clock); a release empties
`holderIdentity`, so a candidate takes it at its next attempt.

Unlike client-go, several processes share one holder identity: the binders of one
installation (`gangsched binder` scaled out) all hold the Lease together, so a renewal that
finds the Lease rewritten since still succeeds when it still names our identity (or none).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from services.kube import errors
from services.kube.client import KubeClient
from services.runtime.election import LeaseRefused, LeaseUnavailable

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def lease_path(namespace: str, name: str = "") -> str:
    """The API path of the Leases of `namespace`, or of Lease `name` in it."""
    base = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    return f"{base}/{name}" if name else base


def micro_time(at: datetime) -> str:
    """`at` (aware) as a Kubernetes MicroTime: RFC 3339 in UTC with microseconds."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class KubeLease:
    """The Lease `namespace/name`, held as `holder` for `lease_seconds` (rounded up to whole
    seconds, as `leaseDurationSeconds` is an integer). Implements
    `services.runtime.election.LeaseStore`; revisions are local counters, the object's
    resourceVersion is read before every write (one GET and one PUT a renewal).

    Raises (every method): LeaseUnavailable when the API server cannot answer now,
    LeaseRefused when it refuses (no RBAC permission on leases, no such namespace).
    """

    def __init__(self, client: KubeClient, *, namespace: str, name: str, holder: str,
                 lease_seconds: float, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._client = client
        self.namespace, self.name, self.holder = namespace, name, holder
        self._seconds = max(1, int(-(-lease_seconds // 1)))
        self._clock, self._wall = clock, wall
        self._revision = 0
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._told: str | None = None

    @property
    def where(self) -> str:
        """`namespace/name`, for messages."""
        return f"{self.namespace}/{self.name}"

    async def acquire(self) -> int | None:
        """Take the Lease if absent, released, expired or already ours: a revision; None while
        another live holder has it (said once per holder, at WARNING)."""
        with self._errors("taking"):
            current = await self._get()
            if current is None:
                return await self._create()
            holder = _holder(current)
            if holder not in ("", self.holder) and not self._expired(current):
                self._tell(holder)
                return None
            return await self._write(current, taking=holder != self.holder)

    async def renew(self, revision: int) -> int | None:
        """Write `renewTime` again: the new revision; None when another holder has the Lease
        now. A Lease rewritten since our last write is renewed still while it names us or
        nobody (another process of this installation renewed it)."""
        with self._errors("renewing"):
            current = await self._get()
            if current is None:
                return await self._create()
            holder = _holder(current)
            if holder not in ("", self.holder):
                self._tell(holder)
                return None
            return await self._write(current, taking=holder != self.holder)

    async def release(self, revision: int) -> None:
        """Empty `holderIdentity` if the Lease still names us (else leave it), so a standby
        takes it at its next attempt instead of after the lease duration."""
        with self._errors("releasing"):
            current = await self._get()
            if current is None or _holder(current) != self.holder:
                return
            spec = dict(current.get("spec") or {})
            spec.update(holderIdentity="", leaseDurationSeconds=1,
                        renewTime=micro_time(self._wall()))
            with contextlib.suppress(errors.KubeConflict):  # written since: not ours to clear
                await self._client.request(
                    "PUT", lease_path(self.namespace, self.name),
                    body={**current, "spec": spec})
            log.info("released Lease %s", self.where)

    async def _get(self) -> Obj | None:
        try:
            found = await self._client.request("GET", lease_path(self.namespace, self.name))
        except errors.KubeNotFound:
            return None
        self._observe(found)
        return found

    async def _create(self) -> int | None:
        now = micro_time(self._wall())
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {"holderIdentity": self.holder, "leaseDurationSeconds": self._seconds,
                         "acquireTime": now, "renewTime": now, "leaseTransitions": 0}}
        try:
            created = await self._client.request("POST", lease_path(self.namespace), body=body)
        except errors.KubeConflict:
            return None  # someone created it first; the next attempt reads it
        return self._written(created)

    async def _write(self, current: Obj, *, taking: bool) -> int | None:
        now = micro_time(self._wall())
        spec = dict(current.get("spec") or {})
        spec.update(holderIdentity=self.holder, leaseDurationSeconds=self._seconds,
                    renewTime=now)
        if taking:
            spec.update(acquireTime=now, leaseTransitions=int(spec.get("leaseTransitions")
                                                              or 0) + 1)
        try:
            written = await self._client.request(
                "PUT", lease_path(self.namespace, self.name), body={**current, "spec": spec})
        except errors.KubeConflict:
            return None  # written since we read it: the next attempt looks again
        if taking:
            log.info("took Lease %s as %s", self.where, self.holder)
        return self._written(written)

    def _written(self, lease: Obj) -> int:
        self._observe(lease)
        self._told = None
        self._revision += 1
        return self._revision

    def _observe(self, lease: Obj) -> None:
        """Remember when (our monotonic clock) the Lease's record last changed."""
        spec = lease.get("spec") or {}
        record = (spec.get("holderIdentity"), spec.get("renewTime"),
                  spec.get("leaseDurationSeconds"))
        if record != self._observed:
            self._observed, self._observed_at = record, self._clock()

    def _expired(self, lease: Obj) -> bool:
        """Whether the Lease's record has not changed for its duration since we saw it."""
        seconds = (lease.get("spec") or {}).get("leaseDurationSeconds") or self._seconds
        return self._clock() - self._observed_at > float(seconds)

    def _tell(self, holder: str) -> None:
        if holder != self._told:
            log.warning("scheduler name %s is served by another gangsched installation "
                        "(Lease %s held by %s): this binder stands by and binds nothing "
                        "until that one stops", self.name, self.where, holder)
            self._told = holder

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """The API's errors as `election`'s: LeaseUnavailable, LeaseRefused."""
        try:
            yield
        except errors.KubeUnavailable as error:
            raise LeaseUnavailable(f"{doing} Lease {self.where}: {error}") from error
        except errors.KubeError as error:
            raise LeaseRefused(f"{doing} Lease {self.where}: {error} (the binder needs get, "
                               "create and update on leases.coordination.k8s.io in namespace "
                               f"{self.namespace})") from error


def _holder(lease: Obj) -> str:
    return str((lease.get("spec") or {}).get("holderIdentity") or "")
