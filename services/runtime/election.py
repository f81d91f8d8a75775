"""Leader election on a lease: one holder serves, standbys wait warm.

Layer: runtime (the planner's leader election on a NATS KV key, `services.bus.lease.KvLease`;
the binder's hold on the scheduler name across installations, a Kubernetes Lease,
`services.kube.leases.KubeLease`). A candidate takes the lease with `acquire`
(only if no live entry); the leader renews it every `retry_seconds` with a compare-and-set on
its last revision; an entry nobody renews expires after the lease and a standby's next
`acquire` wins. The leader steps down by
itself once no renewal succeeded for `renew_deadline_seconds` (two thirds of the lease, measured
from before the write was sent, so it stops serving before the server can let anyone else in).
A leader that stops (shutdown, or its work failed) releases the lease so a standby takes over
at its next attempt. Never touches the service's state; `lead` runs the caller's work only
while this process holds the lease. A store says it cannot be reached now with
`LeaseUnavailable` (or TimeoutError, OSError) and that it refuses with `LeaseRefused`. A
standby that cannot reach the store's server, or that the server answers with an error (429,
5xx), says so as a connection does (`services.runtime.unreachable`): one WARNING at the first
failure of a kind, again every tenth with its count, one INFO line once the server answers
again; the one case is never said as the other (`LeaseUnavailable.problem`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import Gauge

from services.runtime import cancellation, metrics
from services.runtime.unreachable import Repeats

log = logging.getLogger(__name__)

RENEW_DEADLINE_FRACTION = 2 / 3
RELEASE_TIMEOUT_SECONDS = 2.0


class LeaseUnavailable(Exception):
    """The lease's store cannot be reached or is busy now (a later request may succeed).

    `server` names the server that failed (`the API server at https://...`) and `why` says
    why in words: no answer at all (`connection refused`), or, when `answered`, the error it
    answered (`HTTP 503 ServiceUnavailable: etcd down`). A campaign then warns with `problem`
    (`cannot reach <server>: <why>`, or `<server> answered <why>`, or the `problem` given when
    neither says it: `cannot read the credentials for the API server at <URL>: ...`), adding
    `; retrying every 2s`. Without `server` the failure is logged at DEBUG only: a store
    whose connection reports its own outages (NATS), or a write race lost.
    """

    def __init__(self, message: str, *, server: str = "", why: str = "",
                 answered: bool = False, problem: str = "") -> None:
        super().__init__(message)
        self.server = server
        self.why = why or message
        self.answered = answered
        self._problem = problem

    @property
    def problem(self) -> str:
        """What is wrong with `server`, in words: the `problem` given, else `cannot reach the
        API server at <URL>: connection refused` (no answer), or `the API server at <URL>
        answered HTTP 503 ServiceUnavailable: etcd down` (`answered`)."""
        if self._problem:
            return self._problem
        if self.answered:
            return f"{self.server} answered {self.why}"
        return f"cannot reach {self.server}: {self.why}"


class LeaseRefused(Exception):
    """The lease's store refused the request for another cause than a lost race."""


_UNAVAILABLE: tuple[type[BaseException], ...] = (LeaseUnavailable, TimeoutError, OSError)
"""A lease request that may succeed later: the store down or busy, or our own timeout."""
_RELEASE_ERRORS: tuple[type[BaseException], ...] = (*_UNAVAILABLE, LeaseRefused)

leader = Gauge(
    "gangsched_leader",
    "1 while this process holds the service's leader lease (planner; binder: the scheduler "
    "name's Lease), else 0.",
    ["service"],
    registry=metrics.REGISTRY,
)


@dataclass(frozen=True)
class Timing:
    """Lease timing. Units: seconds.

    `lease_seconds` is the KV entry's TTL: a standby takes over at most this long (plus one
    `retry_seconds`) after the leader's last renewal. The leader renews every `retry_seconds`
    and standbys try to take the lease as often.
    """

    lease_seconds: float = 10.0
    retry_seconds: float = 1.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_seconds < self.renew_deadline_seconds:
            raise ValueError(
                f"leader retry ({self.retry_seconds:g}s) must be positive and shorter than "
                f"two thirds of the lease ({self.lease_seconds:g}s)"
            )

    @property
    def renew_deadline_seconds(self) -> float:
        """How long a leader keeps serving without a successful renewal."""
        return self.lease_seconds * RENEW_DEADLINE_FRACTION


@dataclass(frozen=True)
class Term:
    """A held lease: the KV revision of our last write, and when that write was sent.

    Units: `renewed_at` in seconds of the monotonic clock, taken before the request left.
    """

    revision: int
    renewed_at: float


def deadline(term: Term, timing: Timing) -> float:
    """The monotonic time after which the holder of `term` must have stopped serving."""
    return term.renewed_at + timing.renew_deadline_seconds


def wait_before_renewal(term: Term, now: float, timing: Timing) -> float | None:
    """Seconds to wait before the next renewal attempt; None once the deadline has passed.

    The wait is `retry_seconds`, cut short by the deadline (so the last attempt lands on it).
    """
    remaining = deadline(term, timing) - now
    if remaining <= 0:
        return None
    return min(timing.retry_seconds, remaining)


def identity() -> str:
    """This candidate's name in the lease: `<host>/<pid>/<random>` (unique per process)."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


class LeaseStore(Protocol):
    """The lease's storage: compare-and-set writes of this candidate's identity. Every method
    raises LeaseUnavailable (or TimeoutError, OSError) when the store cannot answer now and
    LeaseRefused when it refuses."""

    async def acquire(self) -> int | None:
        """Take the lease if free (or already ours); its revision, else None."""

    async def renew(self, revision: int) -> int | None:
        """Rewrite the lease if `revision` is still the last write; the new one, else None."""

    async def release(self, revision: int) -> None:
        """Delete the lease if it is still ours (`revision`: our last known write)."""


class ReadyFlag(Protocol):
    """Readiness of this service (`services.runtime.health.ReadyFlag`)."""

    def set(self, is_ready: bool = True) -> None: ...

    def hold(self, reason: str) -> None: ...

    def release(self, reason: str) -> None: ...


Clock = Callable[[], float]
Work = Callable[[], Coroutine[Any, Any, None]]


async def lead(
    lease: LeaseStore, timing: Timing, work: Work, *, service: str = "planner",
    ready: ReadyFlag | None = None, clock: Clock = time.monotonic,
) -> None:
    """Campaign forever and run `work()` while this process holds the lease.

    A standby is ready (warm, able to take over) unless its last attempt was refused (it
    could then never take over: no permission, no such namespace) or its store's server
    cannot be reached (`Outage`); `work` manages readiness while it runs. Lost leadership
    cancels `work` and goes back to campaigning. Cancelled while standing by after a term, it
    releases the lease if the store still names it.
    Returns when `work` returns. Raises what `work` raises, after releasing the lease.
    """
    held: Term | None = None
    while True:
        try:
            term = await campaign(lease, timing, clock, ready=ready)
        except asyncio.CancelledError:
            # stopped while standing by after losing the lease: it may still name us (lost to
            # an unreachable store, not to another candidate); the store leaves it otherwise
            await _release(lease, held)
            raise
        held = term
        log.info("%s: became leader (lease revision %d); serving", service, term.revision)
        leader.labels(service).set(1)
        try:
            if await _serve_while_leading(lease, term, timing, work, clock):
                return
        finally:
            leader.labels(service).set(0)
        log.warning("%s: lost leadership; standing by", service)


async def campaign(lease: LeaseStore, timing: Timing, clock: Clock = time.monotonic, *,
                   ready: ReadyFlag | None = None) -> Term:
    """Try to take the lease every `retry_seconds` until it is ours; the term won. A refusal
    is logged at WARNING when it first says something new, then at DEBUG (the same refusal,
    e.g. a missing permission, every attempt); a server that cannot be reached
    (`LeaseUnavailable` naming it) at WARNING at the first failure of each kind and every
    tenth with its count (`Outage`), and at INFO once it answers again; `ready` (if given) is
    set by every attempt answered (a standby is ready: warm, able to take over), cleared by
    every one refused (it could never take over) and held down with the refusal until the
    next answer, and held down while the store's server cannot be reached (`Outage`: /readyz
    says why in both cases)."""
    log.info("standing by for the leader lease (retry every %gs)", timing.retry_seconds)
    outage = Outage(timing.retry_seconds, ready)
    try:
        return await _campaign(lease, timing, clock, ready, outage)
    finally:
        outage.release()  # won, or stopped: no longer standing by


async def _campaign(lease: LeaseStore, timing: Timing, clock: Clock, ready: ReadyFlag | None,
                    outage: Outage) -> Term:
    """`campaign`'s attempts, until one wins the lease."""
    told = ""
    while True:
        started = clock()
        with cancellation.kept():  # one lost in `acquire` (nats-py's wait_for) still stops us
            try:
                revision = await lease.acquire()
            except _UNAVAILABLE as error:
                outage.failed(error)
                revision = None
            except LeaseRefused as error:
                outage.refused(error)
                (log.debug if str(error) == told else log.warning)(
                    "leader lease refused (will retry every %gs): %s", timing.retry_seconds,
                    error)
                told = str(error)
                if ready is not None:
                    ready.set(False)
                revision = None
            else:
                outage.answered()
                if ready is not None:
                    ready.set()
                told = ""
        if revision is not None:
            return Term(revision, started)
        await asyncio.sleep(timing.retry_seconds)


class Outage:
    """What a campaign says while its store's server cannot be reached or answers with an
    error: a `LeaseUnavailable` naming a server at WARNING, its `problem` and `; retrying
    every <n>s` (`cannot reach <server>: <why>; ...`, or `<server> answered <why>; ...` when
    the server answered, e.g. 429 or 503), at the first failure of each `why` and then every
    tenth (with its count, `unreachable.Repeats`); one INFO line, `<server> answers again`, at
    the first answer after one was logged. Any other unavailability (no server named, our own
    timeout) at DEBUG. Meanwhile `ready` (if given) is held down with the `problem`; after a
    refusal (`refused`), with the refusal's text (`... HTTP 403 Forbidden: ...`) until the
    next answer or the campaign's end. One hold at a time: the latest said."""

    def __init__(self, retry_seconds: float, ready: ReadyFlag | None = None) -> None:
        self._retry_seconds = retry_seconds
        self._ready = ready
        self._repeats = Repeats()
        self._server = ""
        self._held = ""

    def failed(self, error: BaseException) -> None:
        """One attempt got no answer because of `error`; log it as the class says."""
        if not isinstance(error, LeaseUnavailable) or not error.server:
            log.debug("leader lease unavailable: %r", error)
            return
        self._hold(error.problem)
        count = self._repeats.count(error.why)
        if count is None:
            log.debug("leader lease unavailable: %s", error)
            return
        self._server = error.server
        repeats = f" ({count} such failures)" if count > 1 else ""
        log.warning("%s; retrying every %gs%s", error.problem, self._retry_seconds, repeats)

    def answered(self) -> None:
        """An attempt was answered (granted, or held by another): the hold ends."""
        self.release()
        self._answers_again()

    def refused(self, error: LeaseRefused) -> None:
        """An attempt was answered with a refusal: `ready` held down with its text instead
        (`str(error)`; the same refusal again keeps the hold), so /readyz says why a standby
        could never take over."""
        self._hold(str(error))
        self._answers_again()

    def _answers_again(self) -> None:
        """The INFO line at the first answer after a failure was logged."""
        if self._repeats.clear() and self._server:
            log.info("%s answers again", self._server)

    def release(self) -> None:
        """End the hold on `ready`, if any (answered, or no longer standing by)."""
        if self._ready is not None and self._held:
            self._ready.release(self._held)
        self._held = ""

    def _hold(self, reason: str) -> None:
        """Hold `ready` down with `reason` (that only)."""
        if self._ready is not None and reason != self._held:
            self.release()
            self._held = reason
            self._ready.hold(reason)


async def _serve_while_leading(
    lease: LeaseStore, term: Term, timing: Timing, work: Work, clock: Clock
) -> bool:
    """Run `work` and renew the lease until one of them ends; True when `work` ended.

    Leadership lost: `work` is cancelled, False. Cancelled (shutdown), `work` failed, or a
    renewal failed for good (e.g. connection closed): `work` is stopped first, then the lease
    released, so no standby serves while this one still does; then the error propagates.
    """
    task = asyncio.create_task(work(), name="work while leader")
    current: Term | None = term
    try:
        while current is not None and not task.done():
            wait = wait_before_renewal(current, clock(), timing)
            if wait is None:
                log.error("leader lease deadline passed: stepping down")
                break
            await asyncio.wait({task}, timeout=wait)
            if not task.done():
                current = await renew(lease, current, timing, clock)
    except BaseException:
        await _stop(task)
        await _release(lease, current)
        raise
    if not task.done():
        await _stop(task)
        return False
    await _release(lease, current)
    task.result()
    return True


async def renew(lease: LeaseStore, term: Term, timing: Timing, clock: Clock) -> Term | None:
    """One renewal attempt: the new term; `term` again after a transient failure while the
    deadline has not passed; None when leadership is lost (someone else wrote, the store
    refused the renewal, or the deadline passed).
    Raises CancelledError when cancelled, also as the answer arrives (Python 3.11's
    `wait_for`, here and in nats-py, then returns the answer: `services.runtime.cancellation`)."""
    started = clock()
    remaining = deadline(term, timing) - started
    try:
        with cancellation.kept():
            revision = await asyncio.wait_for(lease.renew(term.revision), max(remaining, 0.0))
    except _UNAVAILABLE as error:
        if clock() < deadline(term, timing):
            log.warning("leader lease renewal failed (will retry): %r", error)
            return term
        log.error("leader lease not renewed for %gs: stepping down", timing.renew_deadline_seconds)
        return None
    except LeaseRefused as error:
        log.error("leader lease renewal refused: %s; stepping down", error)
        return None
    if revision is None:
        log.error("leader lease taken over by another candidate: stepping down")
        return None
    return Term(revision, started)


async def _stop(task: asyncio.Task[None]) -> None:
    """Cancel `task` and wait for it to end (its own errors are logged, not raised)."""
    task.cancel()
    results = await asyncio.gather(task, return_exceptions=True)
    if isinstance(results[0], Exception):
        log.warning("work stopped with %r", results[0])


async def _release(lease: LeaseStore, term: Term | None) -> None:
    """Release the lease of `term` (best effort, bounded: a standby's TTL covers a failure)."""
    if term is None:
        return
    try:
        await asyncio.wait_for(lease.release(term.revision), RELEASE_TIMEOUT_SECONDS)
    except _RELEASE_ERRORS as error:
        log.warning("leader lease not released (standbys take over after its TTL): %r", error)
        return
    log.info("leader lease released")
