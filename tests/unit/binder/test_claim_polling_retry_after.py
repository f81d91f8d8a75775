"""VolumeBinding's PreBind waits as long as the API server asks: a read of a claim answered
429 with `Retry-After: N` is not made again for that claim sooner than N seconds later (the
claims are polled every 0.5 s otherwise), as client-go waits; a wait that outlasts the
placement's deadline fails the member at the deadline, never later.

The far end is an aiohttp server on loopback holding claims (`ClaimServer`); the binder reads
them through the real `KubeApi`. Times are the event loop's (the clock of the binder's
deadlines), taken as each request arrives: the gaps checked are lower bounds, which sleeping
never undercuts, so no test depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from services.binder import messages, volumes
from services.binder.binding import Deadline
from services.contracts.decisions import Assignment, VolumeChoice
from services.kube.api import KubeApi
from services.kube.resources import claim_path
from services.kube.volumes import BIND_COMPLETED, SELECTED_NODE
from tests.support.kube_clients import served

NOW_MS = 1_700_000_000_000
SLACK = 0.01
"""Seconds a loop time taken on the other end of a request may differ from ours (none on
one loop; kept for the clock's resolution)."""


@pytest.fixture(autouse=True)
def _no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy variables: requests to the loopback server go straight to it (as the kube
    tests' `no_proxy_environment`)."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)


class ClaimServer:
    """Claims the PV controller binds once read `bound_after` times (each claim, counting
    the PreBind's first read), with the node already selected. The reads of a claim named in
    `throttled` (1-based counts) are answered 429 `Retry-After: <retry_after>` instead.
    `reads`: per claim, the loop time and status of every read."""

    def __init__(self, *, throttled: dict[str, range | tuple[int, ...]], retry_after: str,
                 bound_after: int = 3) -> None:
        self.throttled, self.retry_after, self.bound_after = throttled, retry_after, bound_after
        self.reads: dict[str, list[tuple[float, int]]] = {}

    async def handle(self, request: web.Request) -> web.Response:
        name = request.path.rsplit("/", 1)[-1]
        if request.method != "GET" or request.path != claim_path("default", name):
            return web.json_response({"kind": "Status", "reason": "MethodNotAllowed"},
                                     status=405)
        reads = self.reads.setdefault(name, [])
        now = asyncio.get_running_loop().time()
        if len(reads) + 1 in self.throttled.get(name, ()):
            reads.append((now, 429))
            return web.json_response(
                {"kind": "Status", "reason": "TooManyRequests", "code": 429,
                 "message": "too many requests, please try again later"},
                status=429, headers={"Retry-After": self.retry_after})
        reads.append((now, 200))
        return web.json_response(self._claim(name, bound=len(reads) >= self.bound_after))

    @staticmethod
    def _claim(name: str, *, bound: bool) -> dict[str, Any]:
        annotations = {SELECTED_NODE: "n1"}
        spec: dict[str, Any] = {}
        if bound:
            annotations[BIND_COMPLETED] = "yes"
            spec["volumeName"] = f"pvc-{name}"
        return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-claim-{name}",
                             "resourceVersion": "1", "annotations": annotations},
                "spec": spec}


@contextlib.asynccontextmanager
async def api_at(server: ClaimServer) -> AsyncIterator[KubeApi]:
    """The binder's `KubeApi` talking to `server` on a free loopback port."""
    async with served(server.handle) as kube:
        yield KubeApi(kube)


def member(name: str, claim: str) -> Assignment:
    return Assignment(f"uid-{name}", "default", name, "n1", (VolumeChoice(claim),))


def gaps(reads: list[tuple[float, int]]) -> list[float]:
    return [later[0] - earlier[0] for earlier, later in itertools.pairwise(reads)]


async def test_a_claim_read_answered_retry_after_is_not_read_again_sooner_than_asked() -> None:
    """Read 2 (the first poll) answered 429 `Retry-After: 1`: read 3 comes 1 s later, not
    after the 0.5 s poll; the claim binds and the member with it."""
    server = ClaimServer(throttled={"scratch": (2,)}, retry_after="1")
    async with api_at(server) as kube:
        failures = await volumes.prebind(kube, [member("a", "scratch")],
                                         Deadline.at(NOW_MS + 10_000, NOW_MS))
    assert failures == {}
    reads = server.reads["scratch"]
    assert [status for _, status in reads] == [200, 429, 200]
    assert gaps(reads)[1] >= 1.0 - SLACK


async def test_a_throttled_claim_does_not_hold_back_the_reads_of_another() -> None:
    """The wait asked is the throttled claim's: the other claim is still polled every 0.5 s
    meanwhile, and found bound before the throttled one is read again."""
    server = ClaimServer(throttled={"throttled": (2,)}, retry_after="2")
    async with api_at(server) as kube:
        failures = await volumes.prebind(
            kube, [member("a", "throttled"), member("b", "other")],
            Deadline.at(NOW_MS + 10_000, NOW_MS))
    assert failures == {}
    throttled, other = server.reads["throttled"], server.reads["other"]
    assert [status for _, status in throttled] == [200, 429, 200]
    assert [status for _, status in other] == [200, 200, 200]
    assert gaps(throttled)[1] >= 2.0 - SLACK
    assert gaps(other)[1] >= volumes.POLL_SECONDS - SLACK
    assert gaps(other)[1] < 2.0  # polled meanwhile (0.5 s), not held back with the other


async def test_a_wait_asked_past_the_deadline_fails_the_member_at_the_deadline() -> None:
    """Every poll answered 429 `Retry-After: 30` and a deadline 1.5 s away: the claim is read
    once after the PreBind's first read, then not again; the member fails at the deadline as
    one whose claim did not bind in time, not 30 s later."""
    server = ClaimServer(throttled={"scratch": range(2, 100)}, retry_after="30")
    started = asyncio.get_running_loop().time()
    a = member("a", "scratch")
    async with api_at(server) as kube:
        failures = await volumes.prebind(kube, [a], Deadline.at(NOW_MS + 1_500, NOW_MS))
    ended = asyncio.get_running_loop().time()
    assert failures == {a.pod_uid: messages.claim_not_bound(a, "scratch")}
    assert [status for _, status in server.reads["scratch"]] == [200, 429]
    assert 1.5 - SLACK <= ended - started < 10.0
