"""The planner when its NATS store is lost mid-run (one fatal line, not a hot loop), when its
EVENTS stream was made anew (one fatal line, at start or mid-run; a database that recorded no
stream adopts it) and while NATS is down (not ready, ready again once reconnected)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy
from nats.aio.client import Client
from nats.js import JetStreamContext
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus import connection, consuming, reading
from services.bus.consuming import Delivery, PullConsumer
from services.bus.embedded import EmbeddedNats
from services.config.settings import BusSettings
from services.contracts import subjects
from services.planner import service
from services.planner.service import EventStreamRecreated, StreamBehindTracking, run_planner
from services.runtime.health import ReadyFlag
from services.runtime.supervision import Fatal
from services.store import engines, schema, tables
from services.store.errors import SchemaMismatch
from services.store.planner_store import PlannerStore
from tests.integration.planner_harness import (
    gang_events,
    planner_settings,
    publish_events,
    publish_raw,
    running_planner,
)
from tests.integration.test_bus_store_lost import events_stream, recreate_events
from tests.integration.test_planner_service import wait_for_tracked
from tests.integration.test_serve_waits_for_nats import Planner, _ended_with_status_1
from tests.support.stream_backup import backup, restore
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration


@contextlib.asynccontextmanager
async def planner(js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
                  tmp_path: Path) -> AsyncIterator[tuple[asyncio.Task[None], ReadyFlag]]:
    """The planner running until the block ends, and its readiness; it may end lost."""
    ready = ReadyFlag("planner")
    async with running_planner(planner_settings(bus_settings, tmp_path), js, engine, ready,
                               ends_with=(StreamBehindTracking,)) as task:
        yield task, ready


async def test_the_events_stream_gone_mid_run_ends_the_planner_with_one_fatal_error(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consuming, "FIRST_RETRY_SECONDS", 0.1)
    async with planner(js, bus_settings, engine, tmp_path) as (task, _ready):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 2)
        await js.delete_stream(subjects.stream_name(bus_settings.prefix, "EVENTS"))
        with pytest.raises(StreamBehindTracking) as raised:
            await asyncio.wait_for(asyncio.shield(task), 15)
    assert isinstance(raised.value, Fatal)  # the supervisor does not restart it
    said = str(raised.value)
    assert "is gone (the NATS store was lost or the stream deleted)" in said
    assert "applied up to seq" in said and "\n" not in said


async def test_the_store_wiped_across_a_nats_restart_ends_the_planner_with_one_fatal_error(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    nats_server: EmbeddedNats, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consuming, "FIRST_RETRY_SECONDS", 0.1)
    async with planner(js, bus_settings, engine, tmp_path) as (task, _ready):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 2)
        await nats_server.stop()
        shutil.rmtree(nats_server.data_dir / "jetstream")
        await nats_server.start()
        with pytest.raises(StreamBehindTracking, match="is gone"):
            await asyncio.wait_for(asyncio.shield(task), 20)


def recreated_line(stream: str, was: str, now: str, tracked: int) -> str:
    """The planner's one line for an EVENTS stream made anew under the database's feet, which
    holds another event at the database's tracked sequence."""
    return (f"the event stream {stream} was created anew at {now} and holds another message "
            f"at seq {tracked}, the position read up to in the one created at {was}: so it "
            f"holds other events than the planner database applied (up to seq {tracked}); "
            "restore the NATS store (or a backup of the stream) the database was used with, "
            "or point the planner at a fresh database to rebuild its state from this stream")


async def tracked_row(engine: AsyncEngine) -> tuple[int, str | None]:
    """The planner's tracked sequence and the identity of the stream it belongs to."""
    snapshot = await PlannerStore(engine).load_snapshot()
    return snapshot.tracked_seq, snapshot.stream_created


@dataclass
class Gate:
    """Closed, every `PullConsumer.fetch` waits before it asks NATS anything: the test changes
    the stream while the planner looks away."""

    opened: asyncio.Event = field(default_factory=asyncio.Event)
    parked: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once a fetch waits at the closed gate."""

    async def close(self) -> None:
        """Close the gate; return once the planner's next fetch waits at it (the one under
        way has ended)."""
        self.opened.clear()
        self.parked.clear()
        await asyncio.wait_for(self.parked.wait(), 10)

    def open(self) -> None:
        self.opened.set()


@pytest.fixture
def gated_fetches(monkeypatch: pytest.MonkeyPatch) -> Gate:
    """The gate of every `PullConsumer.fetch` (`Gate`), open."""
    gate = Gate()
    gate.open()
    fetch = PullConsumer.fetch

    async def gated(self: PullConsumer, batch: int, timeout_seconds: float) -> list[Delivery]:
        if not gate.opened.is_set():
            gate.parked.set()
            await gate.opened.wait()
        return await fetch(self, batch, timeout_seconds)

    monkeypatch.setattr(PullConsumer, "fetch", gated)
    return gate


async def test_the_events_stream_made_anew_mid_run_ends_the_planner_with_one_fatal_line(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    gated_fetches: Gate,
) -> None:
    async with planner(js, bus_settings, engine, tmp_path) as (task, _ready):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 3)
        await gated_fetches.close()
        was, now = await recreate_events(js, bus_settings)
        await publish_events(js, bus_settings.prefix, gang_events("pg2", min_member=2, pods=2))
        gated_fetches.open()
        with pytest.raises(EventStreamRecreated) as raised:
            await asyncio.wait_for(asyncio.shield(task), 15)
    assert isinstance(raised.value, Fatal)
    assert str(raised.value) == recreated_line(events_stream(bus_settings), was, now, 3)
    assert await tracked_row(engine) == (3, was)


async def test_a_planner_started_on_an_events_stream_made_anew_refuses_with_one_line(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
) -> None:
    settings = planner_settings(bus_settings, tmp_path)
    async with running_planner(settings, js, engine):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 3)
    was, now = await recreate_events(js, bus_settings)
    await publish_events(js, bus_settings.prefix, gang_events("pg2", min_member=2, pods=2))
    with pytest.raises(EventStreamRecreated) as raised:
        await asyncio.wait_for(run_planner(settings, js, engine, ReadyFlag("planner")), 15)
    assert str(raised.value) == recreated_line(events_stream(bus_settings), was, now, 3)
    assert await tracked_row(engine) == (3, was)


async def test_a_database_tracking_no_stream_yet_adopts_the_one_it_finds(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A database tracked before schema revision 0003 (NULL identity): the stream found at
    the next start, even one made anew with more events, is taken as the one it tracked."""
    settings = planner_settings(bus_settings, tmp_path)
    async with running_planner(settings, js, engine):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 3)
    async with engine.begin() as connection:
        await connection.execute(sqlalchemy.update(tables.tracking).values(stream_created=None))
    _was, now = await recreate_events(js, bus_settings)
    await publish_events(js, bus_settings.prefix, gang_events("pg2", min_member=2, pods=2))
    caplog.set_level(logging.INFO, logger=service.__name__)
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 4)
    assert await tracked_row(engine) == (4, now)
    assert [record.getMessage() for record in caplog.records
            if record.name == service.__name__ and "without saying" in record.getMessage()] == [
        f"the planner database tracks seq 3 of stream {events_stream(bus_settings)} without "
        f"saying which stream it was (written before schema revision 0003): taking it to be "
        f"this one, created at {now}"]


async def test_a_planner_started_on_an_events_stream_made_anew_exits_1_with_one_line(
    js: JetStreamContext, bus_settings: BusSettings, nats_server: EmbeddedNats,
    tmp_path: Path,
) -> None:
    """`gangsched planner` itself: exit status 1, the line last, no traceback."""
    await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
    database = tmp_path / "data" / "gangsched.db"
    engine = engines.create_engine(f"sqlite+aiosqlite:///{database}", make_directory=True)
    first = Planner(tmp_path, nats_server.url, "--prefix", bus_settings.prefix)
    try:
        async def tracked() -> bool:
            assert first.process.poll() is None, first.output()
            if not database.is_file():  # made by the planner (opening it here would make it)
                return False
            with contextlib.suppress(SchemaMismatch, OperationalError):
                await schema.check_schema(engine)  # migrated by the planner at its start
                return (await tracked_row(engine))[0] == 3
            return False

        await eventually_async(tracked, timeout=30, what="tracked seq 3")
        assert first.stop() == 0
        was, now = await recreate_events(js, bus_settings)
        await publish_events(js, bus_settings.prefix, gang_events("pg2", min_member=2, pods=2))
        output = await _ended_with_status_1(
            Planner(tmp_path, nats_server.url, "--prefix", bus_settings.prefix))
        assert output.strip().splitlines()[-1] == "Error: NATS: " + recreated_line(
            events_stream(bus_settings), was, now, 3)
        assert await tracked_row(engine) == (3, was)
    finally:
        first.stop()
        await engine.dispose()


async def test_a_planner_goes_on_on_its_events_stream_restored_from_a_backup(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """The stream restored from its backup (what the fatal line advises) has a new creation
    time and the events the database applied at their sequences: the planner goes on, and
    tracks the new identity (it refused the stream for good when only the creation times were
    compared, and its line said to restore the store: a loop)."""
    settings = planner_settings(bus_settings, tmp_path)
    stream = events_stream(bus_settings)
    async with running_planner(settings, js, engine):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 3)
    was = (await tracked_row(engine))[1]
    saved = await backup(nc, stream)
    await js.delete_stream(stream)  # the store lost ...
    await restore(nc, stream, saved)  # ... and restored from its backup
    now = (await reading.stream_state(js, stream)).created
    await publish_events(js, bus_settings.prefix, gang_events("pg2", min_member=2, pods=2))
    # the 4 new events at seqs 4..7 (n1 again: a restore does not bring the stream's
    # de-duplication window back)
    assert (await reading.stream_state(js, stream)).last_seq == 7
    caplog.set_level(logging.INFO, logger=consuming.__name__)
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 7)
    assert await tracked_row(engine) == (7, now)
    assert was is not None and now != was
    assert [record.getMessage() for record in caplog.records
            if record.name == consuming.__name__ and "going on" in record.getMessage()] == [
        f"stream {stream} was created anew at {now} (restored from a backup?) and holds the "
        f"message consumer planner read at seq 3 in the one created at {was}: going on"]


async def test_a_planner_behind_a_restored_stream_that_holds_its_events_goes_on(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
    tmp_path: Path,
) -> None:
    """A backup taken while the stream was ahead of the database (a planner down), restored:
    the planner goes on from its tracked sequence."""
    settings = planner_settings(bus_settings, tmp_path)
    stream = events_stream(bus_settings)
    async with running_planner(settings, js, engine):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 3)
    await publish_events(js, bus_settings.prefix, gang_events("pg2", min_member=2, pods=2))
    saved = await backup(nc, stream)
    await js.delete_stream(stream)
    await restore(nc, stream, saved)
    restored = await reading.stream_state(js, stream)
    assert restored.last_seq == 6  # n1 deduplicated before the backup
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 6)
    assert await tracked_row(engine) == (6, restored.created)


async def test_the_tracked_event_published_again_after_a_restore_is_told_by_its_stored_time(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
    tmp_path: Path,
) -> None:
    """Restored from an older backup (ending at seq 1), the stream gets another event at seq 2
    and the very bytes the planner applied at its tracked seq 3 again (a publish retried
    across the restore: the de-duplication window went with the old stream). Subject and
    bytes at seq 3 match; the time NATS stored them does not: the planner refuses the stream
    (it went on, applying seq 4, a pod of a PodGroup at seq 2 it never saw)."""
    settings = planner_settings(bus_settings, tmp_path)
    stream, prefix = events_stream(bus_settings), bus_settings.prefix
    n1, pg1, pod1 = gang_events("pg1", min_member=1, pods=1)
    await publish_events(js, prefix, [n1])
    saved = await backup(nc, stream)  # an older backup: ends at seq 1
    await publish_events(js, prefix, [pg1, pod1])
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 3)
    was = (await tracked_row(engine))[1]
    old3 = await js.get_msg(stream, 3)
    await js.delete_stream(stream)
    await restore(nc, stream, saved)
    now = (await reading.stream_state(js, stream)).created
    _n1, pg2, pod2 = gang_events("pg2", min_member=1, pods=1)
    for event in (pg2, pod1, pod2):  # seqs 2, 3 (the bytes applied at 3, again) and 4
        await publish_events(js, prefix, [event])
    new3 = await js.get_msg(stream, 3)
    assert (new3.subject, new3.data) == (old3.subject, old3.data)
    assert new3.time != old3.time
    with pytest.raises(EventStreamRecreated) as raised:
        await asyncio.wait_for(run_planner(settings, js, engine, ReadyFlag("planner")), 10)
    assert was is not None and now is not None
    assert str(raised.value) == recreated_line(stream, was, now, 3)
    async with engine.connect() as connection:
        applied = (await connection.execute(
            sqlalchemy.select(tables.audit_events.c.seq).order_by(tables.audit_events.c.seq)
        )).scalars().all()
    assert applied == [1, 2, 3]


async def test_a_planner_whose_tracked_seq_was_dead_lettered_goes_on_after_a_restore(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
    tmp_path: Path,
) -> None:
    """The tracked message was refused (undecodable, dead-lettered): its subject, bytes and
    stored time are what the stream restored from its backup holds there; the planner goes
    on."""
    settings = planner_settings(bus_settings, tmp_path)
    stream, prefix = events_stream(bus_settings), bus_settings.prefix
    await publish_events(js, prefix, gang_events("pg1", min_member=1, pods=1))
    await publish_raw(js, prefix, b"\xff\x00 not json \xc3", "poison-1")  # seq 4
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 4)
    stored = await js.get_msg(stream, 4)
    assert await PlannerStore(engine).message_at(4) == (
        stored.subject, b"\xff\x00 not json \xc3", reading.stored_at_us(stored.time))
    saved = await backup(nc, stream)
    await js.delete_stream(stream)
    await restore(nc, stream, saved)
    now = (await reading.stream_state(js, stream)).created
    await publish_events(js, prefix, gang_events("pg2", min_member=1, pods=1))  # 5..7
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 7)
    assert await tracked_row(engine) == (7, now)


async def test_a_tracked_seq_recorded_without_its_stored_time_is_told_by_its_bytes(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
    tmp_path: Path,
) -> None:
    """Tracked before schema revision 0004 (no stored time, NULL): a stream restored from its
    backup is told by the subject and bytes at the tracked seq; the planner goes on and
    records the stored time of its next batch."""
    settings = planner_settings(bus_settings, tmp_path)
    stream, prefix = events_stream(bus_settings), bus_settings.prefix
    await publish_events(js, prefix, gang_events("pg1", min_member=1, pods=1))
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 3)
    async with engine.begin() as connection:
        await connection.execute(sqlalchemy.update(tables.tracking).values(
            last_stored_at_us=None))
    saved = await backup(nc, stream)
    await js.delete_stream(stream)
    await restore(nc, stream, saved)
    now = (await reading.stream_state(js, stream)).created
    await publish_events(js, prefix, gang_events("pg2", min_member=1, pods=1))  # 4..6
    async with running_planner(settings, js, engine):
        await wait_for_tracked(engine, 6)
    assert await tracked_row(engine) == (6, now)
    stored = await js.get_msg(stream, 6)
    message = await PlannerStore(engine).message_at(6)
    assert message is not None
    assert message[2] == reading.stored_at_us(stored.time)


async def test_a_running_planner_refuses_its_events_stream_restored_from_an_older_backup(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
    tmp_path: Path, gated_fetches: Gate,
) -> None:
    """A backup holds the consumers: restored from an older one, the `planner` durable is
    there again at the backup's position (3) and delivers the stream's new events at seqs the
    planner applied (4..6) before it (tracked 6). The planner checks the stream's message at
    its position and ends with one line (it skipped seqs 4..6 as already applied and applied
    7 and 8: events lost without a word)."""
    stream = events_stream(bus_settings)
    async with planner(js, bus_settings, engine, tmp_path) as (task, _ready):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 3)
        was = (await tracked_row(engine))[1]
        saved = await backup(nc, stream)  # stream and durable at seq 3
        await publish_events(js, bus_settings.prefix, gang_events("pg2", min_member=1, pods=2))
        await wait_for_tracked(engine, 6)
        await gated_fetches.close()
        await js.delete_stream(stream)
        await restore(nc, stream, saved)  # an older backup: ends at 3, its durable there too
        now = (await reading.stream_state(js, stream)).created
        # pg3: n1 (the de-duplication window went with the old stream), its PodGroup and 3
        # pods, at seqs 4..8
        await publish_events(js, bus_settings.prefix, gang_events("pg3", min_member=1, pods=3))
        assert (await reading.stream_state(js, stream)).last_seq == 8
        gated_fetches.open()
        with pytest.raises(EventStreamRecreated) as raised:
            await asyncio.wait_for(asyncio.shield(task), 15)
    assert was is not None and now is not None
    assert str(raised.value) == recreated_line(stream, was, now, 6)
    assert await tracked_row(engine) == (6, was)
    async with engine.connect() as connection:
        applied_after = (await connection.execute(
            sqlalchemy.select(sqlalchemy.func.count()).select_from(tables.audit_events)
            .where(tables.audit_events.c.seq > 6))).scalar_one()
    assert applied_after == 0


async def test_the_planner_is_not_ready_while_nats_is_down_and_ready_again_after(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    nats_server: EmbeddedNats,
) -> None:
    async with planner(js, bus_settings, engine, tmp_path) as (task, ready):
        await nats_server.stop()

        async def not_ready() -> bool:
            return not ready.is_ready

        await eventually_async(not_ready, timeout=15, what="planner not ready")
        assert connection.NATS_DISCONNECTED in ready.holds
        await asyncio.sleep(1.5)
        assert not ready.is_ready and not task.done()
        await nats_server.start()

        async def is_ready() -> bool:
            return ready.is_ready

        await eventually_async(is_ready, timeout=20, what="planner ready again")
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 2)
