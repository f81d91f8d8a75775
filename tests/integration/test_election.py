"""The planner's leader lease on a real nats-server: one leader, standbys take over after a
crash (TTL), at once after a graceful stop, and a leader cut off from NATS stops serving
before anyone else can start."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import nats
import pytest
from nats.aio.client import Client

from services.bus import connection, lease
from services.bus.embedded import EmbeddedNats
from services.cli import serve
from services.config.settings import BusSettings, PlannerServiceSettings, Settings
from services.runtime import election
from services.runtime.cancellation import cancel_and_wait
from services.runtime.election import Timing
from services.runtime.health import Readiness
from services.runtime.supervision import supervise
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration

TIMING = Timing(lease_seconds=1.5, retry_seconds=0.1)


@dataclass
class Candidate:
    """One planner candidate: its own NATS connection, lease, and the record of its work."""

    name: str
    nc: Client
    task: asyncio.Task[None] | None = None
    served: list[tuple[float, float | None]] = field(default_factory=list)
    fail_work: bool = False

    @property
    def is_serving(self) -> bool:
        return bool(self.served) and self.served[-1][1] is None

    async def work(self) -> None:
        """Stands for the planner: serves until cancelled (or fails, if asked)."""
        self.served.append((time.monotonic(), None))
        try:
            if self.fail_work:
                raise RuntimeError("planner failed")
            await asyncio.Event().wait()
        finally:
            self.served[-1] = (self.served[-1][0], time.monotonic())


Campaign = Callable[[str], Awaitable[Candidate]]


@pytest.fixture
async def campaign(bus_settings: BusSettings) -> AsyncIterator[Campaign]:
    """Starts candidates (each `lead`s on its own connection); stops them all after the test."""
    candidates: list[Candidate] = []

    async def start(name: str) -> Candidate:
        nc = await connection.connect(bus_settings, name=name)
        candidate = Candidate(name, nc)
        held = await lease.open_lease(nc.jetstream(), prefix=bus_settings.prefix,
                                      lease_seconds=TIMING.lease_seconds, holder=name)
        candidate.task = asyncio.create_task(election.lead(held, TIMING, candidate.work))
        candidates.append(candidate)
        return candidate

    yield start
    for candidate in candidates:
        if candidate.task is not None:
            candidate.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await candidate.task
        await candidate.nc.close()


def _electing(bus_settings: BusSettings) -> Settings:
    """A planner's settings with leader election on, at `TIMING`."""
    return Settings(bus=bus_settings, planner=PlannerServiceSettings(
        leader_election=True, leader_lease_seconds=TIMING.lease_seconds,
        leader_retry_seconds=TIMING.retry_seconds))


async def _leader(*candidates: Candidate) -> Candidate:
    serving = [c for c in candidates if c.is_serving]
    assert len(serving) == 1, [c.name for c in serving]
    return serving[0]


async def _stepped_down(candidate: Candidate) -> bool:
    return bool(candidate.served) and not candidate.is_serving


def _never_overlap(*candidates: Candidate) -> None:
    """No two candidates ever served at the same time."""
    spans = sorted((span for c in candidates for span in c.served), key=lambda span: span[0])
    for (_, end), (next_start, _) in itertools.pairwise(spans):
        assert end is not None and end <= next_start, spans


async def test_one_candidate_leads_and_the_others_stand_by(campaign: Campaign) -> None:
    first, second, third = [await campaign(name) for name in ("a", "b", "c")]
    await eventually_async(lambda: _leader(first, second, third), timeout=5, what="a leader")
    await asyncio.sleep(TIMING.lease_seconds * 2)  # several renewals: still the same leader
    leader = await _leader(first, second, third)
    assert len(leader.served) == 1
    _never_overlap(first, second, third)


async def test_a_standby_takes_over_after_the_lease_expires_when_the_leader_dies(
        campaign: Campaign) -> None:
    first = await campaign("a")
    await eventually_async(lambda: _leader(first), timeout=5, what="a leads")
    second = await campaign("b")

    died_at = time.monotonic()
    await first.nc.close()  # as a crash: no release, no renewals
    await eventually_async(lambda: _leader(second), timeout=TIMING.lease_seconds * 4,
                           interval=0.02, what="b leads")
    took_over = second.served[0][0] - died_at
    assert TIMING.renew_deadline_seconds <= took_over <= \
        TIMING.lease_seconds + 2 * TIMING.retry_seconds + 0.5, took_over
    assert not first.is_serving
    _never_overlap(first, second)


async def test_a_leader_that_stops_hands_over_at_once(campaign: Campaign) -> None:
    first = await campaign("a")
    await eventually_async(lambda: _leader(first), timeout=5, what="a leads")
    second = await campaign("b")
    assert first.task is not None

    stopped_at = time.monotonic()
    first.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await first.task
    await eventually_async(lambda: _leader(second), timeout=5, interval=0.02, what="b leads")
    assert second.served[0][0] - stopped_at < TIMING.retry_seconds + 0.5
    _never_overlap(first, second)


async def test_work_that_fails_releases_the_lease_and_raises(campaign: Campaign) -> None:
    first = await campaign("a")
    await eventually_async(lambda: _leader(first), timeout=5, what="a leads")
    second = await campaign("b")
    second.fail_work = True
    assert first.task is not None
    first.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await first.task
    assert second.task is not None
    with pytest.raises(RuntimeError, match="planner failed"):
        await asyncio.wait_for(second.task, timeout=5)
    third = await campaign("c")
    await eventually_async(lambda: _leader(third), timeout=TIMING.retry_seconds + 1,
                           what="c leads at once: b released the lease")


async def test_a_leader_cut_off_from_nats_stops_serving_before_its_lease_expires(
        campaign: Campaign, nats_server: EmbeddedNats) -> None:
    first = await campaign("a")
    await eventually_async(lambda: _leader(first), timeout=5, what="a leads")

    stopped_at = time.monotonic()
    await nats_server.stop()
    await eventually_async(lambda: _stepped_down(first), timeout=TIMING.lease_seconds * 3,
                           interval=0.02, what="a steps down")
    stepped_down = first.served[0][1]
    assert stepped_down is not None
    assert stepped_down - stopped_at < TIMING.renew_deadline_seconds + 0.1
    await nats_server.start()
    await eventually_async(lambda: _leader(first), timeout=10, what="a leads again")


async def test_a_standby_planner_is_not_ready_while_its_nats_connection_is_lost(
        campaign: Campaign, nats_server: EmbeddedNats, bus_settings: BusSettings) -> None:
    """The KV lease's unavailability names no server (NATS's connection says it), so the
    standby's readiness follows its connection as the leader's does."""
    first = await campaign("a")
    await eventually_async(lambda: _leader(first), timeout=5, what="a leads")
    readiness = Readiness()
    flag = readiness.flag("planner")
    settings = _electing(bus_settings)
    nc = await connection.connect(bus_settings, name="standby")
    leading = asyncio.Event()

    async def plan() -> None:  # stands for the planner: ready while it leads
        flag.set()
        leading.set()
        await asyncio.Event().wait()

    standby = asyncio.create_task(serve._lead(settings, nc, plan, flag))
    try:
        await eventually_async(lambda: _described(readiness, []), timeout=5,
                               interval=0.02, what="the standby ready")
        assert not leading.is_set()  # a still leads: this one stands by
        await nats_server.stop()
        await eventually_async(
            lambda: _described(readiness, ["planner (NATS disconnected)"]), timeout=10,
            interval=0.02, what="the standby not ready, saying why")
        await nats_server.start()
        await eventually_async(lambda: _described(readiness, []), timeout=15, interval=0.02,
                               what="ready again (standing by or leading)")
    finally:
        standby.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await standby
        await nc.close()


async def _described(readiness: Readiness, expected: list[str]) -> bool:
    return readiness.described() == expected


async def test_the_lease_bucket_ttl_follows_the_configured_lease(
        nc: Client, bus_settings: BusSettings) -> None:
    js = nc.jetstream()
    stream = f"KV_{bus_settings.prefix.upper()}_LEADER"
    await lease.open_lease(js, prefix=bus_settings.prefix, lease_seconds=TIMING.lease_seconds,
                           holder=election.identity())
    assert (await js.stream_info(stream)).config.max_age == pytest.approx(1.5)
    await lease.open_lease(js, prefix=bus_settings.prefix, lease_seconds=5.0,
                           holder=election.identity())
    assert (await js.stream_info(stream)).config.max_age == pytest.approx(5.0)


async def _samples(readiness: Readiness, nc: Client, seconds: float) -> set[tuple[str, ...]]:
    """What `readiness.described()` said every 20 ms for `seconds`, NATS lost all along."""
    seen: set[tuple[str, ...]] = set()
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while loop.time() < until:
        assert not nc.is_connected
        seen.add(tuple(readiness.described()))
        await asyncio.sleep(0.02)
    return seen


async def _reconnected(nc: Client) -> bool:
    return bool(nc.is_connected)


async def test_a_planner_restarted_during_a_nats_outage_is_never_ready_meanwhile(
        nats_server: EmbeddedNats, bus_settings: BusSettings) -> None:
    """Its work fails on the lost connection (as `run_planner` says a batch may) and the
    supervisor restarts `_lead`: through the backoffs and the restarted `open_lease` the flag
    (still set from the term served) is held by the follow `serve.serve` keeps for the
    service's whole supervised life (`serve.following`), not by `_lead`'s own."""
    readiness = Readiness()
    flag = readiness.flag("planner")
    settings = _electing(bus_settings)
    nc = await connection.connect(bus_settings, name="planner")

    async def plan() -> None:  # ready while it leads; a batch fails once NATS is lost
        flag.set()
        while nc.is_connected:
            await asyncio.sleep(0.02)
        raise nats.errors.TimeoutError

    with serve.following(nc, [flag]):
        task = asyncio.create_task(supervise(
            "planner", lambda: serve._lead(settings, nc, plan, flag), first_backoff_seconds=0.5))
        try:
            await eventually_async(lambda: _described(readiness, []), timeout=10,
                                   interval=0.02, what="the leader ready")
            await nats_server.stop()
            assert await _samples(readiness, nc, 4.0) == {("planner (NATS disconnected)",)}
        finally:
            await cancel_and_wait(task)
            await nats_server.start()
            await eventually_async(lambda: _reconnected(nc), timeout=15, what="reconnected")
            await connection.close(nc)


async def test_a_binder_restarted_during_a_nats_outage_is_never_ready_meanwhile(
        nats_server: EmbeddedNats, bus_settings: BusSettings) -> None:
    """`_hold_scheduler_name` reads the installation (`streams.installation`) before its
    Lease campaign follows the connection: a binder ready from an earlier term, restarted
    while NATS is lost, fails there again and again; `serve.following` holds it meanwhile."""
    readiness = Readiness()
    flag = readiness.flag("binder")
    settings = Settings(bus=bus_settings)
    nc = await connection.connect(bus_settings, name="binder")
    flag.set()  # ready from an earlier term

    async def bind() -> None:
        raise AssertionError("never reached: the installation cannot be read")

    with serve.following(nc, [flag]):
        await nats_server.stop()
        task = asyncio.create_task(supervise(
            "binder", lambda: serve._hold_scheduler_name(settings, nc, bind, flag),
            first_backoff_seconds=0.2))
        try:
            assert await _samples(readiness, nc, 2.0) == {("binder (NATS disconnected)",)}
        finally:
            await cancel_and_wait(task)
            await nats_server.start()
            await eventually_async(lambda: _reconnected(nc), timeout=15, what="reconnected")
    assert readiness.described() == []  # no longer followed, reconnected: as it was
    await connection.close(nc)


async def test_a_leader_stepping_down_during_a_nats_outage_stays_held(
        nats_server: EmbeddedNats, bus_settings: BusSettings) -> None:
    """The leading planner follows the connection again (a no-op: `_lead` follows it
    already), so its work stopping as it steps down releases nothing; ready after the
    reconnect."""
    readiness = Readiness()
    flag = readiness.flag("planner")
    settings = _electing(bus_settings)
    nc = await connection.connect(bus_settings, name="planner")
    terms: list[str] = []

    async def plan() -> None:  # as run_planner: follows the connection again
        stop = connection.hold_while_disconnected(nc, flag)
        flag.set()
        terms.append("leading")
        try:
            await asyncio.Event().wait()
        finally:
            terms.append("stopped")
            stop()

    task = asyncio.create_task(serve._lead(settings, nc, plan, flag))
    try:
        await eventually_async(lambda: _described(readiness, []), timeout=10, interval=0.02,
                               what="the leader ready")
        await nats_server.stop()
        await eventually_async(
            lambda: _described(readiness, ["planner (NATS disconnected)"]), timeout=5,
            interval=0.02, what="held down")
        # the renew deadline (1 s) passes: it steps down, held all along
        assert await _samples(readiness, nc, 2.5) == {("planner (NATS disconnected)",)}
        assert terms == ["leading", "stopped"]
        await nats_server.start()
        await eventually_async(lambda: _described(readiness, []), timeout=15, interval=0.02,
                               what="ready again")
    finally:
        await cancel_and_wait(task)
        await connection.close(nc)


async def test_a_planner_whose_lease_bucket_is_gone_makes_it_anew_and_leads_again(
        nc: Client, bus_settings: BusSettings, caplog: pytest.LogCaptureFixture) -> None:
    """The bucket (`KV_<PREFIX>_LEADER`) deleted, or lost with NATS's store, while NATS stays
    connected: the leader's next renewal finds it gone, makes it anew (empty: the renewal is
    lost, the leader steps down) and the next campaign takes the lease again, instead of
    every attempt failing for good while /readyz says ready."""
    readiness = Readiness()
    flag = readiness.flag("planner")
    settings = _electing(bus_settings)
    terms: list[str] = []

    async def plan() -> None:
        flag.set()
        terms.append("leading")
        try:
            await asyncio.Event().wait()
        finally:
            terms.append("stopped")

    async def led(expected: list[str]) -> bool:
        return terms == expected

    task = asyncio.create_task(serve._lead(settings, nc, plan, flag))
    try:
        await eventually_async(lambda: led(["leading"]), timeout=10, interval=0.02,
                               what="leading")
        stream = f"KV_{bus_settings.prefix.upper()}_LEADER"
        await nc.jetstream().delete_stream(stream)
        await eventually_async(lambda: led(["leading", "stopped", "leading"]), timeout=10,
                               interval=0.02, what="leading again")
        assert readiness.described() == []
        assert (await nc.jetstream().stream_info(stream)).config.max_age == pytest.approx(1.5)
    finally:
        await cancel_and_wait(task)
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"][:1] == [
        "leader lease bucket not found (nats: no response from stream): opening it again"]


async def test_a_standby_whose_lease_bucket_is_gone_makes_it_anew_and_takes_the_lease(
        nc: Client, bus_settings: BusSettings) -> None:
    js = nc.jetstream()
    held = await lease.open_lease(js, prefix=bus_settings.prefix,
                                  lease_seconds=TIMING.lease_seconds, holder="a")
    stream = f"KV_{bus_settings.prefix.upper()}_LEADER"
    await js.delete_stream(stream)
    assert await held.acquire() == 1  # the first entry of the bucket made anew
    assert (await js.stream_info(stream)).config.max_age == pytest.approx(1.5)
