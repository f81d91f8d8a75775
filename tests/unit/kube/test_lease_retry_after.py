"""The binder's Lease waits as long as the API server asks: an answer 429 (or 5xx) with
`Retry-After: N` keeps the Lease's next request unsent until N seconds later on the Lease's
own clock (injected here), as client-go does; the attempts the election makes meanwhile fail
at once, unsent. A leader whose renewals are held back that way still steps down at its renew
deadline: waiting never keeps it binding past the time it may hold the Lease.

The far end is an aiohttp server on loopback holding one Lease, answering the requests named
in `throttle` 429 with `Retry-After` once each.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from services.kube import errors
from services.kube.leases import KubeLease, holder_identity
from services.kube.resources import lease_path, leases_path
from services.runtime import election
from services.runtime.election import LeaseUnavailable, Term, Timing
from tests.support.kube_clients import served

pytestmark = pytest.mark.usefixtures("no_proxy_environment")

NAMESPACE, NAME = "kube-system", "gangsched"
PATH = lease_path(NAMESPACE, NAME)


class Clock:
    """A monotonic clock the test moves (seconds)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class LeaseServer:
    """An API server holding at most one Lease (`lease`): GET, POST (create) and PUT (with
    its resourceVersion as precondition) as the API server answers them. Each `(method, path)`
    of `throttle` is answered once `429` with `Retry-After: <retry_after>` instead. `seen`:
    every request received, `(method, path)`."""

    def __init__(self, *, lease: dict[str, Any] | None = None, retry_after: str = "2",
                 throttle: tuple[tuple[str, str], ...] = ()) -> None:
        self.lease = lease
        self.retry_after = retry_after
        self.throttle = list(throttle)
        self.seen: list[tuple[str, str]] = []
        self._version = 1

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        asked = (request.method, request.path)
        self.seen.append(asked)
        if asked in self.throttle:
            self.throttle.remove(asked)
            return web.json_response(
                {"kind": "Status", "reason": "TooManyRequests", "code": 429,
                 "message": "too many requests, please try again later"},
                status=429, headers={"Retry-After": self.retry_after})
        if asked == ("GET", PATH):
            return (web.json_response(self.lease) if self.lease is not None else
                    web.json_response({"kind": "Status", "reason": "NotFound"}, status=404))
        if asked == ("POST", leases_path(NAMESPACE)) and self.lease is None and \
                body is not None:
            return web.json_response(self._store(body), status=201)
        if asked == ("PUT", PATH) and self.lease is not None and body is not None and \
                body["metadata"].get("resourceVersion") == self.lease["metadata"][
                    "resourceVersion"]:
            return web.json_response(self._store(body))
        return web.json_response({"kind": "Status", "reason": "Conflict"}, status=409)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self._version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self._version)
        return self.lease


def held_by(holder: str) -> dict[str, Any]:
    """A Lease `holder` wrote, as the API server stores it."""
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "resourceVersion": "1"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                     "renewTime": "2024-01-01T00:00:00.000000Z", "leaseTransitions": 0}}


@contextlib.asynccontextmanager
async def lease_at(server: LeaseServer, clock: Clock) -> AsyncIterator[KubeLease]:
    """A KubeLease on `clock` of process `p` of installation `test@1`, talking to `server`
    on a free loopback port."""
    async with served(server.handle) as kube:
        yield KubeLease(kube, namespace=NAMESPACE, name=NAME, installation="test@1",
                        process="p", lease_seconds=15, clock=clock)


OURS = holder_identity("test@1", "p")


@pytest.mark.parametrize(("lease", "throttled"), [
    (None, ("GET", PATH)),  # the read of every attempt
    (None, ("POST", leases_path(NAMESPACE))),  # creating it
    (held_by(""), ("PUT", PATH)),  # taking a released one
])
async def test_a_take_answered_retry_after_is_not_tried_again_sooner_than_asked(
        lease: dict[str, Any] | None, throttled: tuple[str, str]) -> None:
    """Answered 429 `Retry-After: 2` at 100 s: the campaign's attempts at 101 and 101.99 s
    send nothing (and say why, as the answer that asked); the one at 102 s takes the Lease."""
    server, clock = LeaseServer(lease=lease, throttle=(throttled,)), Clock(100.0)
    async with lease_at(server, clock) as held:
        with pytest.raises(LeaseUnavailable) as throttled_answer:
            await held.acquire()
        assert server.seen[-1] == throttled
        sent = len(server.seen)
        for now in (101.0, 101.99):
            clock.now = now
            with pytest.raises(LeaseUnavailable) as held_back:
                await held.acquire()
            assert len(server.seen) == sent  # nothing sent
            assert "not sent: the API server asked to wait 2s after answering HTTP 429" in str(
                held_back.value)
            assert (held_back.value.server, held_back.value.why, held_back.value.answered) == (
                throttled_answer.value.server, throttled_answer.value.why, True)
        clock.now = 102.0
        assert await held.acquire() == 1
    assert len(server.seen) > sent
    assert server.lease is not None
    assert server.lease["spec"]["holderIdentity"] == OURS


async def test_a_renewal_answered_retry_after_is_not_tried_again_sooner_than_asked() -> None:
    server, clock = LeaseServer(lease=held_by(OURS), throttle=(("PUT", PATH),)), Clock(100.0)
    async with lease_at(server, clock) as held:
        with pytest.raises(LeaseUnavailable):
            await held.renew(1)
        assert server.seen == [("GET", PATH), ("PUT", PATH)]
        clock.now = 101.5
        with pytest.raises(LeaseUnavailable, match="renewing Lease kube-system/gangsched: "
                                                   "not sent"):
            await held.renew(1)
        assert len(server.seen) == 2
        clock.now = 102.5
        assert await held.renew(1) == 1
    assert server.seen == [("GET", PATH), ("PUT", PATH)] * 2


async def test_the_wait_asked_is_capped_at_five_minutes() -> None:
    server = LeaseServer(throttle=(("GET", PATH),), retry_after="86400")
    clock = Clock(100.0)
    async with lease_at(server, clock) as held:
        with pytest.raises(LeaseUnavailable):
            await held.acquire()
        clock.now = 100.0 + errors.MAX_RETRY_AFTER_SECONDS - 0.01
        with pytest.raises(LeaseUnavailable, match="not sent"):
            await held.acquire()
        clock.now = 100.0 + errors.MAX_RETRY_AFTER_SECONDS
        assert await held.acquire() == 1


async def test_an_answer_that_asks_no_wait_keeps_the_attempts_every_retry_period() -> None:
    """A 429 without a usable Retry-After (an HTTP date asks nothing, as in client-go): the
    next attempt is sent at once, as before."""
    server = LeaseServer(throttle=(("GET", PATH),),
                         retry_after="Wed, 21 Oct 2015 07:28:00 GMT")
    async with lease_at(server, Clock(100.0)) as held:
        with pytest.raises(LeaseUnavailable):
            await held.acquire()
        assert await held.acquire() == 1


async def test_a_release_held_back_sends_nothing() -> None:
    """Stopping while the wait asked lasts: the release is not sent either (a standby takes
    over after the lease duration instead)."""
    server, clock = LeaseServer(lease=held_by(OURS), throttle=(("PUT", PATH),)), Clock(100.0)
    async with lease_at(server, clock) as held:
        with pytest.raises(LeaseUnavailable):
            await held.renew(1)
        clock.now = 101.0
        with pytest.raises(LeaseUnavailable, match="releasing Lease kube-system/gangsched: "
                                                   "not sent"):
            await held.release(1)
    assert server.seen == [("GET", PATH), ("PUT", PATH)]
    assert server.lease is not None
    assert server.lease["spec"]["holderIdentity"] == OURS


async def test_a_leader_held_back_still_steps_down_at_its_renew_deadline() -> None:
    """Renewals answered `Retry-After: 300` keep the term only until its renew deadline (two
    thirds of the lease after the last renewal was sent): then the leader steps down, though
    the wait asked is not over; no renewal was sent meanwhile."""
    timing = Timing(lease_seconds=15.0, retry_seconds=2.0)  # the binder's, deadline 10 s
    server = LeaseServer(lease=held_by(OURS), throttle=(("PUT", PATH),), retry_after="300")
    clock = Clock(102.0)
    term = Term(revision=1, renewed_at=100.0)
    async with lease_at(server, clock) as held:
        assert await election.renew(held, term, timing, clock) == term  # answered 429
        for now in (104.0, 106.0, 108.0, 109.99):
            clock.now = now
            assert await election.renew(held, term, timing, clock) == term  # held back
        clock.now = 110.0
        assert await election.renew(held, term, timing, clock) is None  # deadline: step down
    assert server.seen == [("GET", PATH), ("PUT", PATH)]
