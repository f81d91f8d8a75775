"""A Kubernetes Lease (coordination.k8s.io/v1) held by one installation, as a `LeaseStore`.

Layer: kube. The binder holds the Lease named after the scheduler name it serves, so two
gangsched installations serving one name never bind at once: one binds, the other stands by
and takes over once the first releases the Lease or stops renewing it (docs/design-notes.md,
"One installation per scheduler name"). Mirrors client-go's leader election, which
kube-scheduler uses (`--leader-elect`, Lease `kube-system/kube-scheduler`): the holder writes
`holderIdentity` and `renewTime` with the object's resourceVersion as precondition; a Lease
is taken over only when its record has not changed for `leaseDurationSeconds` as measured on
this process's own monotonic clock (no trust in the other holder's clock); a release empties
`holderIdentity`, so a candidate takes it at its next attempt.

Unlike client-go, several processes hold the Lease together: the binders of one installation
(`gangsched binder` scaled out, or the old and new pod of a rolling update). Each writes
`<installation>/<process>` (`holder_identity`), so the record names the last writer; a Lease
naming any process of our installation is ours to renew, and a renewal that loses a write race
to one of them reads the Lease again and renews it still. A process releases the Lease only if
no other process of its installation wrote it within the lease duration (seen on its reads
before each renewal), so a stopping binder never hands the name to another installation while
a sibling still binds.

An answer asking to wait (a 429 or 5xx with `Retry-After: N`, or a Status with
`details.retryAfterSeconds`, as `errors.KubeError.retry_after_seconds` carries it) is honoured
as client-go does: no request on the Lease is sent sooner than N seconds after it (at most
`errors.MAX_RETRY_AFTER_SECONDS`); an attempt meanwhile fails at once, unsent (`KubeLease`).
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
from services.kube.events import micro_time
from services.kube.resources import lease_path, leases_path
from services.runtime.election import LeaseRefused, LeaseUnavailable

log = logging.getLogger(__name__)

Obj = dict[str, Any]

WRITE_ATTEMPTS = 10
"""Writes one take or renewal tries when it loses the race to a process of its own
installation (each after reading the Lease again): every round of a race has a winner, so as
many as the binders that may renew at once (a renewal is also bounded by its deadline)."""


def holder_identity(installation: str, process: str) -> str:
    """What one process of `installation` writes as `holderIdentity`:
    `<installation>/<process>`. `installation` holds no `/`."""
    return f"{installation}/{process}"


def installation_of(holder: str) -> str:
    """The installation part of a `holderIdentity` (all of it when it has no `/`)."""
    return holder.split("/", 1)[0]


class KubeLease:
    """The Lease `namespace/name`, held by process `process` of installation `installation`
    for `lease_seconds` (rounded up to whole seconds, as `leaseDurationSeconds` is an integer).
    Implements `services.runtime.election.LeaseStore`; revisions are local counters, the
    object's resourceVersion is read before every write (one GET and one PUT a renewal).

    Raises (every method): LeaseUnavailable when the API server cannot answer now (naming
    it and why, for `election.campaign` to say so: no answer, or `answered` 429 or 5xx with
    its status and message), LeaseRefused when it refuses (no RBAC permission on leases, no
    such namespace).

    Retry-After: an answer that asked to wait N seconds (`KubeError.retry_after_seconds`,
    capped at 300 s) keeps every request of this Lease unsent until N seconds after it came,
    on `clock`; a call meanwhile raises LeaseUnavailable at once, sending nothing, with the
    server, `why` and `answered` of the answer that asked (so a campaign counts it as that
    same failure and keeps its readiness held with it). The election's loop goes on calling
    every `retry_seconds` (`election.campaign`, `election.renew`): the next request goes out
    at the first attempt at or after the time asked, as client-go's leader election waits
    its retry period but a throttled request is not sent again sooner than asked.

    Why waiting for Retry-After never lets the binder bind past the time it may hold the
    Lease: the wait is kept by refusing attempts, not by sleeping in them, and a refused
    renewal is a failed one. Only a written renewal starts a new term; `election.renew` keeps
    the old one after a failure only until its renew deadline (two thirds of the lease,
    measured from before the last write that succeeded was sent, so before the API server
    could let another installation in) and then steps down, cancelling the binder's work,
    whether the wait asked ends before that or not. Nor is that step-down delayed: no call
    here waits for the time asked, so `election._serve_while_leading` checks the deadline
    (and the work's end) every `retry_seconds` as it does without Retry-After.
    """

    def __init__(self, client: KubeClient, *, namespace: str, name: str, installation: str,
                 process: str, lease_seconds: float, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._client = client
        self.namespace, self.name = namespace, name
        self.installation = installation
        self.holder = holder_identity(installation, process)
        self._seconds = max(1, int(-(-lease_seconds // 1)))
        self._clock, self._wall = clock, wall
        self._revision = 0
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._sibling_at: float | None = None
        self._told: str | None = None
        self._asked_until = 0.0
        """`clock` time before which no request is sent: when the API server's last transient
        answer asking to wait (Retry-After) allows the next one."""
        self._asked: errors.KubeUnavailable | None = None
        """That answer (its error), for the LeaseUnavailable of the attempts it holds back."""

    @property
    def where(self) -> str:
        """`namespace/name`, for messages."""
        return f"{self.namespace}/{self.name}"

    async def acquire(self) -> int | None:
        """Take the Lease if absent, released, expired or held by our installation: a
        revision; None while another installation's live holder has it (said once per
        installation, at WARNING)."""
        with self._errors("taking"):
            return await self._claim(renewing=False)

    async def renew(self, revision: int) -> int | None:
        """Write `renewTime` again: the new revision; None when another installation has the
        Lease now. A Lease rewritten since our last write is renewed still while it names our
        installation or nobody."""
        with self._errors("renewing"):
            return await self._claim(renewing=True)

    async def release(self, revision: int) -> None:
        """Empty `holderIdentity` if this process wrote the Lease last and no other process of
        its installation wrote it within the lease duration (else leave it to them), so a
        standby takes it at its next attempt instead of after the lease duration. While an
        answer's Retry-After holds requests back it sends nothing (LeaseUnavailable): the
        standbys then take over after the lease duration."""
        with self._errors("releasing"):
            current = await self._get()
            if current is None or _holder(current) != self.holder:
                return
            if self._sibling_at is not None and \
                    self._clock() - self._sibling_at <= self._seconds:
                log.info("Lease %s left to the other binders of installation %s", self.where,
                         self.installation)
                return
            spec = dict(current.get("spec") or {})
            spec.update(holderIdentity="", leaseDurationSeconds=1,
                        renewTime=micro_time(self._wall()))
            try:
                await self._client.request(
                    "PUT", lease_path(self.namespace, self.name),
                    body={**current, "spec": spec})
            except (errors.KubeConflict, errors.KubeNotFound):
                log.info("Lease %s written since: left as it is", self.where)
                return
            log.info("released Lease %s", self.where)

    async def _claim(self, *, renewing: bool) -> int | None:
        """Read the Lease and write it as ours if we may: our installation's or nobody's, or
        (taking, not `renewing`) another installation's that expired; None while another
        installation holds it (a renewal then steps down, whether that Lease expired or not).
        A write that loses the race to a process of our installation is tried again after
        reading the Lease again.

        Raises:
            LeaseUnavailable: every one of `WRITE_ATTEMPTS` writes lost its race (the caller
                tries again; a renewal until its deadline).
        """
        for _ in range(WRITE_ATTEMPTS):
            current = await self._get()
            if current is None:
                written = await self._create()
            else:
                holder = _holder(current)
                if not self._ours(holder) and (renewing or not self._expired(current)):
                    self._tell(holder)
                    return None
                written = await self._write(current, taking=not self._installations(holder))
            if written is not None:
                return written
        raise LeaseUnavailable(f"Lease {self.where}: {WRITE_ATTEMPTS} writes in a row lost "
                               "their race to other writers")

    def _installations(self, holder: str) -> bool:
        """Whether a `holderIdentity` names a process of our installation."""
        return bool(holder) and installation_of(holder) == self.installation

    def _ours(self, holder: str) -> bool:
        """Whether a `holderIdentity` leaves the Lease to us: nobody's, or our installation's."""
        return holder == "" or self._installations(holder)

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
            created = await self._client.request("POST", leases_path(self.namespace), body=body)
        except errors.KubeConflict:
            return None  # someone created it first: read it again
        log.info("took Lease %s as %s", self.where, self.holder)
        return self._written(created)

    async def _write(self, current: Obj, *, taking: bool) -> int | None:
        """PUT the Lease as ours over `current` (its resourceVersion the precondition); None
        when it was written since."""
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
        except (errors.KubeConflict, errors.KubeNotFound):
            return None  # written or deleted since we read it: read it again
        if taking:
            log.info("took Lease %s as %s", self.where, self.holder)
        return self._written(written)

    def _written(self, lease: Obj) -> int:
        self._observe(lease)
        self._told = None
        self._revision += 1
        return self._revision

    def _observe(self, lease: Obj) -> None:
        """Remember when (our monotonic clock) the Lease's record last changed, and when a
        process of our installation other than this one was last seen writing it."""
        spec = lease.get("spec") or {}
        record = (spec.get("holderIdentity"), spec.get("renewTime"),
                  spec.get("leaseDurationSeconds"))
        if record != self._observed:
            self._observed, self._observed_at = record, self._clock()
            holder = str(spec.get("holderIdentity") or "")
            if holder != self.holder and holder and installation_of(holder) == self.installation:
                self._sibling_at = self._observed_at

    def _expired(self, lease: Obj) -> bool:
        """Whether the Lease's record has not changed for its duration since we saw it."""
        seconds = (lease.get("spec") or {}).get("leaseDurationSeconds") or self._seconds
        return self._clock() - self._observed_at > float(seconds)

    def _tell(self, holder: str) -> None:
        other = installation_of(holder)
        if other != self._told:
            log.warning("scheduler name %s is served by another gangsched installation "
                        "(Lease %s held by %s): this binder stands by and binds nothing "
                        "until that one stops", self.name, self.where, other)
            self._told = other

    def _held_back(self, doing: str) -> None:
        """Raise LeaseUnavailable, sending nothing, while the API server's last answer asking
        to wait (Retry-After) still holds requests back; nothing otherwise.

        Units: `clock` seconds. The error names the server, and carries the `why` and
        `answered` of the answer that asked (`election.Outage` counts it as that failure).
        """
        asked, left = self._asked, self._asked_until - self._clock()
        if asked is None or left <= 0:
            return
        raise LeaseUnavailable(
            f"{doing} Lease {self.where}: not sent: the API server asked to wait "
            f"{asked.retry_after_seconds}s after answering {asked.detail} ({left:.1f}s left)",
            server=f"the API server at {self._client.server}", why=asked.detail,
            answered=asked.status != 0)

    def _note_asked_wait(self, error: errors.KubeUnavailable) -> None:
        """Remember a transient answer that asked to wait (`error.retry_after_seconds`, already
        capped at `errors.MAX_RETRY_AFTER_SECONDS`; units: seconds): no request before that
        many seconds from now on `clock`."""
        if error.retry_after_seconds is not None:
            self._asked = error
            self._asked_until = self._clock() + error.retry_after_seconds

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """The API's errors as `election`'s: LeaseUnavailable, LeaseRefused. Held back, unsent,
        while an answer's Retry-After asks to wait (`_held_back`); an error asking to wait is
        remembered for the calls to come (`_note_asked_wait`)."""
        self._held_back(doing)
        with self._as_election(doing):
            try:
                yield
            except errors.KubeUnavailable as error:
                self._note_asked_wait(error)
                raise

    @contextlib.contextmanager
    def _as_election(self, doing: str) -> Iterator[None]:
        """The API's errors as `election`'s: LeaseUnavailable, LeaseRefused."""
        try:
            yield
        except errors.KubeCredentialsUnavailable as error:  # nothing sent: our own token
            raise LeaseUnavailable(
                f"{doing} Lease {self.where}: {error}",
                server=f"the API server at {error.server}", why=error.why,
                problem=f"cannot read the credentials for the API server at {error.server}: "
                        f"credentials unavailable: {error.why}") from error
        except errors.KubeUnreachable as error:
            raise LeaseUnavailable(f"{doing} Lease {self.where}: {error}",
                                   server=f"the API server at {error.server}",
                                   why=error.why) from error
        except errors.KubeUnavailable as error:  # answered: busy (429) or failing (5xx)
            raise LeaseUnavailable(f"{doing} Lease {self.where}: {error}",
                                   server=f"the API server at {self._client.server}",
                                   why=error.detail, answered=error.status != 0) from error
        except errors.KubeForbidden as error:
            raise LeaseRefused(f"{doing} Lease {self.where}: {error} (the binder needs get, "
                               "create and update on leases.coordination.k8s.io in namespace "
                               f"{self.namespace})") from error
        except errors.KubeError as error:
            raise LeaseRefused(f"{doing} Lease {self.where}: {error}") from error


def _holder(lease: Obj) -> str:
    return str((lease.get("spec") or {}).get("holderIdentity") or "")
