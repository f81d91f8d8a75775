"""The snapshot schedule and the restart catch-up, on a real nats-server and both databases.

A planner restarted from an older snapshot re-plans the batches committed after it and ends
up exactly where an uninterrupted planner is: same in-memory state (encoded), same outbox,
same rounds. The batches are cut the same in both runs (`Chunks`), because plan points, and
so decision ids, depend on them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import msgspec
import pytest
import sqlalchemy
from nats.js import JetStreamContext
from nats.js.api import AckPolicy
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus.consuming import Delivery, PullConsumer
from services.bus.publishing import Publisher
from services.config.settings import BusSettings, PlannerServiceSettings
from services.contracts import codec, subjects
from services.contracts.decisions import Decision, Placement
from services.contracts.events import (
    ClockTicked,
    Event,
    NodeDeleted,
    NodeObserved,
    PodDeleted,
    PodGroupObserved,
    PodObserved,
)
from services.planner import catchup
from services.planner.core import apply as projection
from services.planner.core import state
from services.planner.core.config import PlannerConfig
from services.planner.service import PlannerService
from services.planner.snapshotting import SnapshotSchedule
from services.store import engines, planner_store, schema, tables
from services.store.planner_store import PlannerStore
from tests.integration.conftest import DatabaseFactory
from tests.unit.planner.builders import make_node, make_pod, make_podgroup

pytestmark = pytest.mark.integration

CHUNK = 3
NEVER = PlannerServiceSettings(snapshot_interval_seconds=3600, snapshot_interval_events=0)
EVERY_10_EVENTS = PlannerServiceSettings(snapshot_interval_seconds=3600,
                                         snapshot_interval_events=10)


def updated(event: PodObserved, at_ms: int, **changes: object) -> PodObserved:
    """The pod observed again at `at_ms` with a new resourceVersion and `changes`."""
    version = str(int(event.resource_version) + 1)
    return msgspec.structs.replace(event, at_ms=at_ms, resource_version=version, **changes)


def workload() -> list[Event]:
    """Gangs placed, waiting for quorum, not fitting; pods bound, deleted; a node gone; time
    passing placement deadlines (releases, backoff) and a node joining (retries)."""
    t = 1_000_000
    cpu = [make_node(name).capacity(cpu_milli=4000).build(t) for name in ("n1", "n2")]
    a = [make_pod(f"a-{i}").requests(cpu_milli=1000).in_group("a").created(t).build(t)
         for i in range(2)]
    b = [make_pod(f"b-{i}").requests(cpu_milli=1000).in_group("b").created(t).build(t + i)
         for i in range(3)]
    c = [make_pod(f"c-{i}").requests(cpu_milli=3000).in_group("c").created(t).build(t)
         for i in range(3)]
    return [
        *cpu,
        make_podgroup("a", 2).created(t).build(t), *a,
        make_podgroup("b", 3).created(t).build(t), *b[:2],
        make_podgroup("c", 3).created(t).build(t), *c,
        make_pod("s-0").requests(cpu_milli=500).created(t).build(t),
        ClockTicked(at_ms=t + 1_000),
        updated(a[0], t + 2_000, node_name="n1", phase="Running"),
        b[2],
        ClockTicked(at_ms=t + 3_000),
        updated(a[1], t + 4_000, node_name="n2", phase="Running"),
        PodDeleted(at_ms=t + 5_000, uid=c[0].uid, namespace="default", name="c-0"),
        ClockTicked(at_ms=t + 90_000),
        NodeDeleted(at_ms=t + 91_000, name="n2", uid=cpu[1].uid),
        ClockTicked(at_ms=t + 200_000),
        make_node("n3").capacity(cpu_milli=8000).build(t + 201_000),
        ClockTicked(at_ms=t + 202_000),
        ClockTicked(at_ms=t + 400_000),
        ClockTicked(at_ms=t + 401_000),
    ]


def message(prefix: str, index: int, event: Event) -> tuple[str, bytes, str]:
    """`(subject, data, msg_id)` of the `index`-th event of the workload."""
    if isinstance(event, ClockTicked):
        kind, namespace, name = "clock", "", "tick"
    elif isinstance(event, NodeObserved | NodeDeleted):
        kind, namespace, name = "node", "", event.name
    elif isinstance(event, PodGroupObserved):
        kind, namespace, name = "podgroup", event.namespace, event.name
    else:
        assert isinstance(event, PodObserved | PodDeleted)
        kind, namespace, name = "pod", event.namespace, event.name
    subject = subjects.events_subject(prefix, kind, namespace, name)
    return subject, codec.encode(event), f"workload/{index}"


async def publish_workload(js: JetStreamContext, prefix: str) -> int:
    """Publish the workload to EVENTS; the last stream sequence."""
    events = workload()
    await Publisher(js).publish_many([message(prefix, i, e) for i, e in enumerate(events)])
    return len(events)


class Chunks:
    """An event source over a real pull consumer that hands out exactly `size` deliveries per
    fetch (fewer only at the end of the stream), so two runs cut the same batches."""

    def __init__(self, consumer: PullConsumer, size: int = CHUNK) -> None:
        self.consumer = consumer
        self.size = size
        self.buffer: list[Delivery] = []

    async def fetch(self, batch: int, timeout_seconds: float) -> list[Delivery]:
        while len(self.buffer) < self.size:
            more = await self.consumer.fetch(self.size, 0.5)
            if not more:
                break
            self.buffer.extend(more)
        taken, self.buffer = self.buffer[:self.size], self.buffer[self.size:]
        return taken

    async def first_seq(self) -> int:
        raise AssertionError("a gap in the stream: the runs would not cut the same batches")

    async def repair(self, start_seq: int) -> None:
        raise AssertionError("a gap in the stream: the runs would not cut the same batches")

    @property
    def stream_created(self) -> str | None:
        return self.consumer.stream_created


@asynccontextmanager
async def chunks(js: JetStreamContext, prefix: str, durable: str,
                 start_seq: int = 1) -> AsyncIterator[Chunks]:
    """`Chunks` over a fresh ack-all consumer `durable` delivering from `start_seq`."""
    consumer = await PullConsumer.open(
        js, stream=subjects.stream_name(prefix, "EVENTS"), durable=durable,
        filter_subject=subjects.events_wildcard(prefix), start_seq=start_seq,
        ack_policy=AckPolicy.ALL)
    try:
        yield Chunks(consumer)
    finally:
        await consumer.close()


@asynccontextmanager
async def migrated_engine(databases: DatabaseFactory) -> AsyncIterator[AsyncEngine]:
    url = await databases()
    await schema.migrate(url)
    engine = engines.create_engine(url)
    try:
        yield engine
    finally:
        await engine.dispose()


def planner(engine: AsyncEngine, js: JetStreamContext, prefix: str,
            settings: PlannerServiceSettings) -> PlannerService:
    return PlannerService(PlannerStore(engine), Publisher(js), prefix=prefix,
                          config=PlannerConfig(), settings=settings)


async def drive(service: PlannerService, source: Chunks, until_seq: int,
                after_batch: Callable[[], Awaitable[None]] | None = None) -> None:
    """Run batches until `service` tracked `until_seq`."""
    while service.tracked_seq < until_seq:
        assert await service.run_once(source), f"stream ended before seq {until_seq}"
        if after_batch is not None:
            await after_batch()


async def table(engine: AsyncEngine, name: str) -> list[tuple[object, ...]]:
    """Every row of `name` except bookkeeping columns, in key order."""
    selected = {
        "outbox": sqlalchemy.select(tables.outbox.c.id, tables.outbox.c.plan_seq,
                                    tables.outbox.c.position, tables.outbox.c.subject,
                                    tables.outbox.c.data)
        .order_by(tables.outbox.c.plan_seq, tables.outbox.c.position),
        "rounds": sqlalchemy.select(tables.rounds).order_by(tables.rounds.c.plan_seq),
        "audit": sqlalchemy.select(tables.audit_events).order_by(tables.audit_events.c.seq),
    }[name]
    async with engine.connect() as connection:
        return [tuple(row) for row in (await connection.execute(selected)).all()]


async def decisions(engine: AsyncEngine) -> list[Decision]:
    rows = await table(engine, "outbox")
    return [codec.decode_decision(bytes(row[4])) for row in rows]  # type: ignore[call-overload]


async def snapshot_seq(engine: AsyncEngine) -> int:
    return (await PlannerStore(engine).load_snapshot()).seq


async def test_a_restart_catches_up_to_the_state_and_decisions_of_an_uninterrupted_run(
    js: JetStreamContext, bus_settings: BusSettings, databases: DatabaseFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(planner_store, "PAGE_ROWS", 2)  # catch-up reads many pages
    prefix = bus_settings.prefix
    last_seq = await publish_workload(js, prefix)
    async with migrated_engine(databases) as straight_db, migrated_engine(databases) as crash_db:
        straight = planner(straight_db, js, prefix, NEVER)
        await straight.recover()
        async with chunks(js, prefix, "straight") as source:
            await drive(straight, source, last_seq)

        crashing = planner(crash_db, js, prefix, EVERY_10_EVENTS)
        await crashing.recover()
        async with chunks(js, prefix, "crashing") as source:
            await drive(crashing, source, 7 * CHUNK)  # snapshot at 12 and 24: crash at 21
        in_memory = state.encode_state(crashing.state)
        assert await snapshot_seq(crash_db) == 4 * CHUNK

        restarted = planner(crash_db, js, prefix, EVERY_10_EVENTS)
        start_seq = await restarted.recover()
        assert start_seq == 7 * CHUNK + 1
        assert state.encode_state(restarted.state) == in_memory
        async with chunks(js, prefix, "crashing", start_seq) as source:
            await drive(restarted, source, last_seq)

        assert state.encode_state(restarted.state) == state.encode_state(straight.state)
        for name in ("outbox", "rounds", "audit"):
            assert await table(crash_db, name) == await table(straight_db, name), name
        kinds = {type(decision).__name__ for decision in await decisions(straight_db)}
        assert kinds == {"Placement", "Rejection", "StatusUpdate"}, kinds


async def test_the_snapshot_is_written_every_n_events_not_with_every_batch(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
) -> None:
    prefix = bus_settings.prefix
    last_seq = await publish_workload(js, prefix)
    service = planner(engine, js, prefix, EVERY_10_EVENTS)
    await service.recover()
    seen: list[int] = []

    async def record() -> None:
        seen.append(await snapshot_seq(engine))

    async with chunks(js, prefix, "planner") as source:
        await drive(service, source, 8 * CHUNK, record)
    assert seen == [0, 0, 0, 12, 12, 12, 12, 24]
    assert len(await table(engine, "rounds")) == 8 and last_seq > 8 * CHUNK


async def test_the_snapshot_is_written_once_its_interval_in_seconds_passed(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
) -> None:
    prefix = bus_settings.prefix
    await publish_workload(js, prefix)
    service = planner(engine, js, prefix, PlannerServiceSettings())
    await service.recover()
    now = [0.0]
    service.snapshots = SnapshotSchedule(30, 0, clock=lambda: now[0])
    async with chunks(js, prefix, "planner") as source:
        await drive(service, source, 2 * CHUNK)
        assert await snapshot_seq(engine) == 0
        now[0] = 30.0
        await drive(service, source, 3 * CHUNK)
        assert await snapshot_seq(engine) == 3 * CHUNK
        now[0] = 59.0
        await drive(service, source, 4 * CHUNK)
    assert await snapshot_seq(engine) == 3 * CHUNK


async def test_a_recorded_decision_that_catch_up_does_not_re_derive_stops_the_planner(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    prefix = bus_settings.prefix
    last_seq = await publish_workload(js, prefix)
    service = planner(engine, js, prefix, NEVER)
    await service.recover()
    async with chunks(js, prefix, "planner") as source:
        await drive(service, source, last_seq)
    first_id, _, _, subject, _ = (await table(engine, "outbox"))[0]
    async with engine.begin() as connection:
        await connection.execute(sqlalchemy.update(tables.outbox)
                                 .where(tables.outbox.c.id == first_id)
                                 .values(data=b'{"type": "Tampered"}'))
    caplog.set_level(logging.ERROR, logger=catchup.__name__)
    with pytest.raises(catchup.CatchUpDiverged, match="they differ"):
        await planner(engine, js, prefix, NEVER).recover()
    (record,) = [r for r in caplog.records if r.name == catchup.__name__]
    assert "determinism bug" in record.message
    assert f"recorded {subject} {{\"type\": \"Tampered\"}}" in record.message
    assert f"re-derived {subject} {{" in record.message


async def test_an_event_the_core_raises_on_is_refused_and_the_rest_planned_from_the_restored_state(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    applying = projection.apply_event

    def exploding(current: state.PlannerState, event: Event) -> state.PlannerState:
        if isinstance(event, PodObserved) and event.name == "boom":
            raise RuntimeError("boom")
        return applying(current, event)

    monkeypatch.setattr(projection, "apply_event", exploding)
    prefix, t = bus_settings.prefix, 1_000_000
    events: list[Event] = [
        make_node("n1").capacity(cpu_milli=4000).build(t), make_podgroup("a", 2).build(t),
        make_pod("a-0").requests(cpu_milli=1000).in_group("a").build(t),
        make_pod("a-1").requests(cpu_milli=1000).in_group("a").build(t),
        make_pod("boom").build(t), make_pod("s-0").build(t),
    ]
    await Publisher(js).publish_many([message(prefix, i, e) for i, e in enumerate(events)])
    service = planner(engine, js, prefix, NEVER)  # isolation restores from the audit log
    await service.recover()
    async with chunks(js, prefix, "planner") as source:
        await drive(service, source, 6)
    async with engine.connect() as connection:
        (dead,) = (await connection.execute(sqlalchemy.select(tables.dead_letters))).all()
    assert dead.seq == 5 and dead.reason == "planner core raised: RuntimeError: boom"
    assert [row[0] for row in await table(engine, "audit")] == [1, 2, 3, 4, 6]
    assert [row[0] for row in await table(engine, "rounds")] == [3, 6]
    placed = {d.group for d in await decisions(engine) if isinstance(d, Placement)}
    assert placed == {"default/a", "default/pod:s-0"}
    restored = await catchup.restore(PlannerStore(engine), PlannerConfig(), prefix)
    assert state.encode_state(restored.state) == state.encode_state(service.state)


async def recovered(engine: AsyncEngine, js: JetStreamContext, prefix: str,
                    settings: PlannerServiceSettings) -> PlannerService:
    """A planner on a database of its own, recovered, with the workload published."""
    await publish_workload(js, prefix)
    service = planner(engine, js, prefix, settings)
    await service.recover()
    return service


async def test_a_stop_writes_the_snapshot_so_a_restart_re_plans_nothing(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
) -> None:
    prefix = bus_settings.prefix
    service = await recovered(engine, js, prefix, NEVER)
    async with chunks(js, prefix, "planner") as source:
        serving = asyncio.create_task(service.serve(source))
        while service.tracked_seq < len(workload()):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # idle, waiting for events: a SIGTERM between batches
        serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await serving
    tracked = service.tracked_seq
    assert tracked == len(workload()) and await snapshot_seq(engine) == tracked
    restored = await catchup.restore(PlannerStore(engine), PlannerConfig(), prefix)
    assert (restored.snapshot_seq, restored.tracked_seq, restored.events) == (tracked, tracked, 0)
    assert state.encode_state(restored.state) == state.encode_state(service.state)


async def test_a_stop_with_nothing_new_since_the_snapshot_writes_none(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
) -> None:
    prefix = bus_settings.prefix
    service = await recovered(engine, js, prefix, EVERY_10_EVENTS)
    async with chunks(js, prefix, "planner") as source:
        await drive(service, source, 4 * CHUNK)  # the snapshot at 12 holds every batch
    assert service.snapshots.events_since == 0
    store = PlannerStore(engine)
    assert await store.save_snapshot(b"not this state", 4 * CHUNK) is False  # not older
    assert await store.save_snapshot(b"not this state", 3 * CHUNK) is False  # not tracked
    await service.snapshot_at_stop()
    assert (await store.load_snapshot()).data == state.encode_state(service.state)


async def test_a_batch_another_planner_revision_decided_differently_is_named_at_restart(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
) -> None:
    prefix = bus_settings.prefix
    last_seq = await publish_workload(js, prefix)
    earlier = PlannerService(PlannerStore(engine, planner="gangsched 0.0.1 core 1"),
                             Publisher(js), prefix=prefix, config=PlannerConfig(),
                             settings=NEVER)
    await earlier.recover()
    async with chunks(js, prefix, "planner") as source:
        await drive(earlier, source, last_seq)  # stops without a snapshot: a crash
    first_id = (await table(engine, "outbox"))[0][0]
    async with engine.begin() as connection:  # what that revision decided, not this one
        await connection.execute(sqlalchemy.update(tables.outbox)
                                 .where(tables.outbox.c.id == first_id)
                                 .values(data=b'{"type": "Decided by core 1"}'))
    with pytest.raises(catchup.CatchUpDiverged) as refused:
        await planner(engine, js, prefix, NEVER).recover()
    assert "that batch was planned by gangsched 0.0.1 core 1, and this is gangsched " in str(
        refused.value)
    assert "stop it (SIGTERM: it writes a snapshot at stop), then start this one" in str(
        refused.value)


async def test_a_stop_during_a_batch_writes_no_snapshot_of_its_uncommitted_state(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = bus_settings.prefix
    service = await recovered(engine, js, prefix, NEVER)
    async with chunks(js, prefix, "planner") as source:
        await drive(service, source, 2 * CHUNK)
        committing = asyncio.Event()

        async def never_commits(*args: object, **kwargs: object) -> None:
            committing.set()
            await asyncio.Event().wait()  # SIGTERM arrives while the batch commits

        monkeypatch.setattr(service.store, "commit_batch", never_commits)
        serving = asyncio.create_task(service.serve(source))
        await committing.wait()
        serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await serving
    assert service.tracked_seq == 2 * CHUNK and await snapshot_seq(engine) == 0
    restored = await catchup.restore(PlannerStore(engine), PlannerConfig(), prefix)
    assert restored.tracked_seq == 2 * CHUNK  # re-planned from the log, verified
