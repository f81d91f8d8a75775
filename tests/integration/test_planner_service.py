"""The planner service end to end on a real nats-server and a real database (both backends)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus.consuming import PullConsumer, differences
from services.bus.embedded import EmbeddedNats
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import dead_letters, subjects
from services.contracts.decisions import Placement
from services.contracts.events import NodeObserved
from services.planner import catchup, publication
from services.planner.core import state
from services.planner.core.config import PlannerConfig
from services.planner.service import DURABLE, PlannerService, run_planner
from services.runtime import metrics
from services.store import engines, schema, tables
from services.store.errors import SchemaMismatch
from services.store.planner_store import PlannerStore
from tests.integration.conftest import DatabaseFactory
from tests.integration.planner_harness import (
    gang_events,
    planner_settings,
    publish_events,
    publish_raw,
    published_decisions,
    read_stream,
    running_planner,
)
from tests.support.waiting import eventually_async
from tests.unit.planner.builders import make_node, make_pod

pytestmark = pytest.mark.integration


async def rows(engine: AsyncEngine, table: sqlalchemy.Table) -> list[sqlalchemy.Row[object]]:
    async with engine.connect() as connection:
        return list((await connection.execute(sqlalchemy.select(table))).all())


async def placements(js: JetStreamContext, prefix: str) -> list[Placement]:
    return [d for d in await published_decisions(js, prefix) if isinstance(d, Placement)]


async def wait_for_placements(js: JetStreamContext, prefix: str, count: int) -> list[Placement]:
    async def enough() -> list[Placement] | None:
        found = await placements(js, prefix)
        return found if len(found) >= count else None

    found = await eventually_async(enough, timeout=30, what=f"{count} placement(s)")
    assert found is not None  # `eventually_async` returns only a truthy value
    return found


async def wait_for_tracked(engine: AsyncEngine, seq: int) -> None:
    async def reached() -> bool:
        return (await PlannerStore(engine).load())[1] >= seq

    await eventually_async(reached, timeout=30, what=f"tracked seq {seq}")


async def test_a_gang_is_placed_and_its_decisions_are_published_exactly_once(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path
) -> None:
    prefix = bus_settings.prefix
    await publish_events(js, prefix, gang_events("pg1", min_member=2, pods=2))
    async with running_planner(planner_settings(bus_settings, tmp_path), js, engine):
        (placement,) = await wait_for_placements(js, prefix, 1)
        await wait_for_tracked(engine, 4)
    assert placement.group == "default/pg1"
    assert sorted(member.name for member in placement.members) == ["pg1-0", "pg1-1"]
    published = await read_stream(js, subjects.stream_name(prefix, "DECISIONS"))
    ids = [message.headers["Nats-Msg-Id"] for message in published if message.headers]
    outbox = await rows(engine, tables.outbox)
    assert sorted(ids) == sorted(row.id for row in outbox) and len(set(ids)) == len(ids)
    assert all(row.published_at_ms is not None for row in outbox)
    assert [row.seq for row in await rows(engine, tables.audit_events)] == [1, 2, 3, 4]
    assert [row.plan_seq for row in await rows(engine, tables.rounds)][-1] == 4
    assert published[0].subject is not None
    assert published[0].subject.startswith(f"{prefix}.decisions.")


async def test_redelivered_events_at_or_below_the_tracked_seq_are_acked_and_skipped(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path
) -> None:
    prefix = bus_settings.prefix
    await publish_events(js, prefix, gang_events("pg1", min_member=2, pods=2))
    async with running_planner(planner_settings(bus_settings, tmp_path), js, engine):
        await wait_for_placements(js, prefix, 1)
        await wait_for_tracked(engine, 4)
    before = {table.name: await rows(engine, table) for table in
              (tables.audit_events, tables.outbox, tables.rounds)}
    service = PlannerService(PlannerStore(engine), Publisher(js), prefix=prefix,
                             config=PlannerConfig())
    await service.recover()
    # A consumer replaying the stream from seq 1: every message is a redelivery.
    source = await PullConsumer.open(
        js, stream=subjects.stream_name(prefix, "EVENTS"), durable=DURABLE,
        filter_subject=subjects.events_wildcard(prefix), start_seq=1, ack_policy=AckPolicy.ALL,
    )
    assert await service.run_once(source) == 4
    assert await source.fetch(10, 0.3) == []
    info = await js.consumer_info(subjects.stream_name(prefix, "EVENTS"), DURABLE)
    assert info.ack_floor.stream_seq == 4 and info.num_ack_pending == 0  # one ack, all acked
    await source.close()
    after = {table.name: await rows(engine, table) for table in
             (tables.audit_events, tables.outbox, tables.rounds)}
    assert after == before
    assert len(await placements(js, prefix)) == 1


async def test_poisoned_messages_are_dead_lettered_and_later_events_still_processed(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path
) -> None:
    prefix = bus_settings.prefix
    counted = metrics.dead_letters.labels(DURABLE)._value.get()
    await publish_raw(js, prefix, b"\xff not json", "garbage")
    await publish_raw(js, prefix, b'{"type": "PodExploded", "at_ms": 1}', "unknown-type")
    await publish_raw(js, prefix, b'{"type": "ClockTicked", "at_ms": "soon"}', "bad-value")
    deep = b'{"type": "PodObserved", "extra": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    await publish_raw(js, prefix, deep, "nested")  # msgspec: RecursionError, past its handlers
    async with running_planner(planner_settings(bus_settings, tmp_path), js, engine):
        await wait_for_tracked(engine, 4)
        await publish_events(js, prefix, gang_events("pg1", min_member=2, pods=2))
        await wait_for_placements(js, prefix, 1)
    dead = await rows(engine, tables.dead_letters)
    assert [row.seq for row in dead] == [1, 2, 3, 4]
    assert "recursion" in dead[3].reason
    assert all(row.published_at_ms is not None for row in dead)
    assert "PodExploded" in dead[1].reason or "type" in dead[1].reason
    letters = await read_stream(js, subjects.stream_name(prefix, "DEADLETTER"))
    assert [message.data for message in letters] == [row.data for row in dead]
    headers = letters[0].headers or {}
    assert headers[dead_letters.REASON_HEADER] == dead[0].reason
    assert headers[dead_letters.SEQ_HEADER] == "1"
    assert metrics.dead_letters.labels(DURABLE)._value.get() == counted + 4


async def test_a_restarted_planner_resumes_from_its_tracked_seq_with_the_same_state(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path
) -> None:
    prefix = bus_settings.prefix
    settings = planner_settings(bus_settings, tmp_path)
    first_pod_only = gang_events("pg1", min_member=2, pods=2)[:3]
    await publish_events(js, prefix, first_pod_only)
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 3)
    snapshot, tracked = await PlannerStore(engine).load()
    assert tracked == 3 and await placements(js, prefix) == []
    # not due on schedule, but written at the graceful stop: the restart re-plans nothing
    # (a crash's catch-up from the audit log: test_planner_snapshots.py)
    assert snapshot is not None and (await PlannerStore(engine).load_snapshot()).seq == 3

    resumed = PlannerService(PlannerStore(engine), Publisher(js), prefix=prefix,
                             config=PlannerConfig())
    assert await resumed.recover() == 4
    assert sorted(pod.name for pod in resumed.state.pods.values()) == ["pg1-0"]
    assert list(resumed.state.podgroups) == ["default/pg1"]

    async with running_planner(settings, js, engine):
        await publish_events(js, prefix, [
            make_pod("pg1-1").requests(cpu_milli=1000).in_group("pg1").created(1000).build(1001)
        ])
        (placement,) = await wait_for_placements(js, prefix, 1)
    assert sorted(member.name for member in placement.members) == ["pg1-0", "pg1-1"]
    assert [row.seq for row in await rows(engine, tables.audit_events)] == [1, 2, 3, 4]


async def test_an_empty_database_rebuilds_the_same_state_from_the_stream(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    databases: DatabaseFactory,
) -> None:
    prefix = bus_settings.prefix
    settings = planner_settings(bus_settings, tmp_path)
    await publish_events(js, prefix, gang_events("pg1", min_member=2, pods=2))
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 4)
    original = await restored(engine, prefix)
    fresh_url = await databases()
    await schema.migrate(fresh_url)
    rebuilt_engine = engines.create_engine(fresh_url)
    try:
        async with running_planner(settings, js, rebuilt_engine):
            await wait_for_tracked(rebuilt_engine, 4)
        assert state.encode_state(await restored(rebuilt_engine, prefix)) == state.encode_state(
            original)
    finally:
        await rebuilt_engine.dispose()
    assert len(await placements(js, prefix)) == 1  # re-derived ids: duplicates dropped


async def test_the_planner_refuses_a_database_without_the_schema(
    js: JetStreamContext, bus_settings: BusSettings, db_url: str, tmp_path: Path
) -> None:
    engine = engines.create_engine(db_url)
    try:
        with pytest.raises(SchemaMismatch, match="gangsched migrate"):
            await asyncio.wait_for(
                run_planner(planner_settings(bus_settings, tmp_path), js, engine), 30
            )
    finally:
        await engine.dispose()



async def test_a_nats_restart_mid_stream_loses_nothing_and_duplicates_nothing(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    nats_server: EmbeddedNats, databases: DatabaseFactory,
) -> None:
    prefix = bus_settings.prefix
    settings = planner_settings(bus_settings, tmp_path)
    async with running_planner(settings, js, engine):
        await publish_events(js, prefix, gang_events("pg1", min_member=2, pods=2))
        await wait_for_placements(js, prefix, 1)
        await nats_server.restart()
        second = [event for event in gang_events("pg2", min_member=2, pods=2)
                  if not isinstance(event, NodeObserved)]
        await publish_events(js, prefix, second)
        found = await wait_for_placements(js, prefix, 2)
        await wait_for_tracked(engine, 7)
    assert sorted(placement.group for placement in found) == ["default/pg1", "default/pg2"]
    ids = [message.headers["Nats-Msg-Id"] for message in
           await read_stream(js, subjects.stream_name(prefix, "DECISIONS")) if message.headers]
    assert len(ids) == len(set(ids)) == len(await rows(engine, tables.outbox))

    rebuilt_url = await databases()
    await schema.migrate(rebuilt_url)
    rebuilt_engine = engines.create_engine(rebuilt_url)
    try:
        async with running_planner(settings, js, rebuilt_engine):
            await wait_for_tracked(rebuilt_engine, 7)
        assert projection(await restored(rebuilt_engine, prefix)) == projection(
            await restored(engine, prefix))
    finally:
        await rebuilt_engine.dispose()


async def restored(engine: AsyncEngine, prefix: str) -> state.PlannerState:
    """The planner state committed in `engine` (latest snapshot plus catch-up)."""
    return (await catchup.restore(PlannerStore(engine), PlannerConfig(), prefix)).state


def projection(restored: state.PlannerState) -> tuple[object, ...]:
    """The cluster part of a planner state: nodes, pods, PodGroups (no bookkeeping)."""
    return (restored.nodes, restored.pods, restored.podgroups)


async def test_an_event_with_an_amount_beyond_the_limit_is_dead_lettered_and_the_rest_planned(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path
) -> None:
    # An allocatable beyond MAX_AMOUNT (here beyond int64) is a valid JSON integer but an
    # invalid event: refused at decoding, before it could overflow any aggregate.
    overflowing = make_node("huge").capacity(cpu_milli=2**64 - 1).build(1000)
    prefix = bus_settings.prefix
    await publish_events(js, prefix, [overflowing, *gang_events("pg1", min_member=2, pods=2)])
    async with running_planner(planner_settings(bus_settings, tmp_path), js, engine):
        (placement,) = await wait_for_placements(js, prefix, 1)
        await wait_for_tracked(engine, 5)
    assert {member.node for member in placement.members} == {"n1"}
    (dead,) = await rows(engine, tables.dead_letters)
    assert dead.seq == 1 and "allocatable" in dead.reason, dead.reason
    assert [row.seq for row in await rows(engine, tables.audit_events)] == [2, 3, 4, 5]


async def test_a_consumer_narrowed_behind_the_planners_back_skips_nothing(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine
) -> None:
    prefix, stream = bus_settings.prefix, subjects.stream_name(bus_settings.prefix, "EVENTS")
    service = PlannerService(PlannerStore(engine), Publisher(js), prefix=prefix,
                             config=PlannerConfig())
    source = await PullConsumer.open(
        js, stream=stream, durable=DURABLE, filter_subject=subjects.events_wildcard(prefix),
        start_seq=await service.recover(), ack_policy=AckPolicy.ALL,
        check_interval_seconds=3600)  # only the gap in its deliveries may reveal it
    node, group, *pods = gang_events("pg1", min_member=2, pods=2)
    # another NATS user leaves the pods out of the planner's filter, keeping its position
    await js.add_consumer(stream, config=ConsumerConfig(
        name=DURABLE, durable_name=DURABLE, ack_policy=AckPolicy.ALL, ack_wait=30,
        max_ack_pending=10000, deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=1,
        filter_subjects=[f"{prefix}.events.{kind}.>" for kind in ("node", "podgroup")]))
    gaps = metrics.consumer_repairs.labels(DURABLE, "sequence_gap")
    gaps_before = gaps._value.get()
    await publish_events(js, prefix, [node, pods[0], group, pods[1]])
    for _ in range(10):
        if service.tracked_seq == 4:
            break
        await service.run_once(source)
    audited = await rows(engine, tables.audit_events)
    assert [row.seq for row in audited] == [1, 2, 3, 4]
    assert gaps._value.get() == gaps_before + 1
    info = await js.consumer_info(stream, DURABLE)
    assert info.config.filter_subject == subjects.events_wildcard(prefix)
    assert len(await wait_for_placements(js, prefix, 1)) == 1
    await source.close()


async def test_a_durable_changed_behind_its_back_is_repaired_on_the_next_check(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    source = await PullConsumer.open(
        js, stream=stream, durable=DURABLE, filter_subject=subjects.events_wildcard(
            bus_settings.prefix), ack_wait_seconds=6, check_interval_seconds=0)
    wanted = (await js.consumer_info(stream, DURABLE)).config
    await js.add_consumer(stream, config=dataclasses.replace(
        wanted, filter_subject=f"{bus_settings.prefix}.events.nothing.>", ack_wait=30))
    assert await source.fetch(1, 0.2) == []  # the check runs before the fetch
    repaired = (await js.consumer_info(stream, DURABLE)).config
    assert differences(wanted, repaired) == []
    await source.close()


async def test_a_planner_a_batch_behind_catches_up_before_it_plans_once(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine
) -> None:
    """Three batches' worth of backlog: one fetch loop takes them all and plans once, at the
    newest event's time (a lagging planner's decisions were otherwise minutes old)."""
    from services.config.settings import PlannerServiceSettings

    prefix = bus_settings.prefix
    events = [make_node(f"n{i}").capacity(cpu_milli=1000).build(at_ms=1000 + i)
              for i in range(12)]
    await publish_events(js, prefix, events)
    await schema.migrate(str(engine.url))
    service = PlannerService(PlannerStore(engine), Publisher(js), prefix=prefix,
                             config=PlannerConfig(),
                             settings=PlannerServiceSettings(batch_size=4,
                                                             fetch_timeout_seconds=0.5))
    await service.recover()
    source = await PullConsumer.open(
        js, stream=subjects.stream_name(prefix, "EVENTS"), durable=DURABLE,
        filter_subject=subjects.events_wildcard(prefix), start_seq=1, ack_policy=AckPolicy.ALL,
    )
    assert await service.run_once(source) == 12
    assert [row.plan_seq for row in await rows(engine, tables.rounds)] == [12]
    assert service.state.now_ms == 1011


async def test_a_batch_costs_one_transaction_and_marks_the_last_batchs_decisions(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine
) -> None:
    """Decisions are published from memory after their commit and marked published by the
    next batch's transaction, or by the first fetch that brings nothing; never lost."""
    prefix = bus_settings.prefix
    service = PlannerService(PlannerStore(engine), Publisher(js), prefix=prefix,
                             config=PlannerConfig(),
                             settings=planner_settings(bus_settings, Path()).planner)
    await service.recover()
    source = await PullConsumer.open(
        js, stream=subjects.stream_name(prefix, "EVENTS"), durable=DURABLE,
        filter_subject=subjects.events_wildcard(prefix), start_seq=1, ack_policy=AckPolicy.ALL,
    )
    transactions: list[object] = []

    def began(connection: object) -> None:
        transactions.append(connection)

    sqlalchemy.event.listen(engine.sync_engine, "begin", began)
    try:
        await publish_events(js, prefix, gang_events("pg1", min_member=2, pods=2))
        assert await service.run_once(source) == 4
        assert len(transactions) == 1
        transactions.clear()
        first = [d.id for d in await published_decisions(js, prefix)]
        assert len(first) >= 1 and service.unmarked == first
        assert {row.id: row.published_at_ms for row in await rows(engine, tables.outbox)} == {
            decision_id: None for decision_id in first}

        await publish_events(js, prefix, gang_events("pg2", min_member=2, pods=2)[1:])
        transactions.clear()  # the reads above are transactions too
        assert await service.run_once(source) == 3
        assert len(transactions) == 1
        second = [d.id for d in await published_decisions(js, prefix)][len(first):]
        assert second and service.unmarked == second
        marked = {row.id: row.published_at_ms is not None
                  for row in await rows(engine, tables.outbox)}
        assert marked == {**dict.fromkeys(first, True), **dict.fromkeys(second, False)}

        transactions.clear()
        assert await service.run_once(source) == 0  # nothing comes: mark what is left
        assert len(transactions) == 1 and service.unmarked == []
        assert all(row.published_at_ms is not None for row in await rows(engine, tables.outbox))
        transactions.clear()
        assert await service.run_once(source) == 0
        assert transactions == []  # nothing to mark, no transaction
    finally:
        sqlalchemy.event.remove(engine.sync_engine, "begin", began)
        await source.close()


class DatabaseGoesDown:
    """A PlannerStore whose writes fail once `down` is set (the database went away)."""

    def __init__(self, store: PlannerStore) -> None:
        self._store, self.down = store, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def commit_batch(self, *args: Any, **kwargs: Any) -> None:
        if self.down:
            raise ConnectionError("database down")
        await self._store.commit_batch(*args, **kwargs)

    async def mark_published(self, ids: Any) -> None:
        if self.down:
            raise ConnectionError("database down")
        await self._store.mark_published(ids)


async def test_decisions_published_but_not_marked_are_not_published_again_after_any_outage(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine
) -> None:
    """The database goes away after a batch was published and before it was marked; the
    planner is back only after the DECISIONS duplicate window (JetStream would store copies):
    the restart finds them in the stream and marks them instead."""
    prefix = bus_settings.prefix
    settings = planner_settings(bus_settings, Path()).planner
    store = DatabaseGoesDown(PlannerStore(engine))
    service = PlannerService(store, Publisher(js), prefix=prefix,
                             config=PlannerConfig(), settings=settings)
    await service.recover()
    source = await PullConsumer.open(
        js, stream=subjects.stream_name(prefix, "EVENTS"), durable=DURABLE,
        filter_subject=subjects.events_wildcard(prefix), start_seq=1, ack_policy=AckPolicy.ALL,
    )
    await publish_events(js, prefix, gang_events("pg1", min_member=2, pods=2))
    assert await service.run_once(source) == 4  # committed and published, not yet marked
    published = [decision.id for decision in await published_decisions(js, prefix)]
    assert published and service.unmarked == published
    store.down = True
    await publish_events(js, prefix, gang_events("pg2", min_member=2, pods=2)[1:])
    with pytest.raises(ConnectionError):
        await service.serve(source)  # the next commit fails, and so does the mark at stop
    await source.close()
    info = await js.stream_info(subjects.stream_name(prefix, "DECISIONS"))
    info.config.duplicate_window = 1.0  # >= 120 s in production; the outage outlasts it
    await js.update_stream(info.config)
    await asyncio.sleep(1.5)
    restarted = PlannerService(PlannerStore(engine), Publisher(js), prefix=prefix,
                               config=PlannerConfig(), settings=settings)
    await restarted.recover()
    assert [decision.id for decision in await published_decisions(js, prefix)] == published
    assert all(row.published_at_ms is not None for row in await rows(engine, tables.outbox))


async def test_a_restart_publishes_only_the_unmarked_decisions_the_stream_lacks(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine
) -> None:
    """A stop in the middle of a batch's publishes: the stored ones are marked, the others
    published, each decision in DECISIONS once, in outbox order."""
    prefix = bus_settings.prefix
    store, publisher = PlannerStore(engine), Publisher(js)
    rows_ = [(f"9-{i}", 9, f"{prefix}.decisions.StatusUpdate.default.g{i}", b"{}")
             for i in range(3)]
    await store.commit_batch([], rows_, None, None, 9)
    await publisher.publish(rows_[1][2], rows_[1][3], msg_id=rows_[1][0])  # stored, unmarked
    assert await publication.publish_outbox(store, publisher, prefix) == 2
    stored = await read_stream(js, subjects.stream_name(prefix, "DECISIONS"))
    assert [message.headers["Nats-Msg-Id"] for message in stored if message.headers] == [
        "9-1", "9-0", "9-2"]
    assert await store.pending_outbox() == []
    assert await publication.publish_outbox(store, publisher, prefix) == 0
