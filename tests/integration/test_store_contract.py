"""The state store's contract, run on every backend (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import sqlalchemy
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from services.store import engines, schema, tables
from services.store.errors import SchemaMismatch
from services.store.planner_store import PlannerStore, Snapshot

pytestmark = pytest.mark.integration


def audit(seq: int) -> tuple[int, str, str, int, bytes]:
    return (seq, f"p.events.node._.n{seq}", "NodeObserved", 1000 + seq, b'{"seq":%d}' % seq)


def decision(plan_seq: int, index: int) -> tuple[str, int, str, bytes]:
    return (f"{plan_seq}-{index}", plan_seq, "p.decisions.Placement.ns.g", b"{}")


async def test_empty_database_loads_no_state_and_seq_zero(engine: AsyncEngine) -> None:
    assert await PlannerStore(engine).load() == (None, 0)


async def test_commit_batch_writes_every_table_and_load_returns_it(engine: AsyncEngine) -> None:
    store = PlannerStore(engine)
    await store.commit_batch([audit(1), audit(2)], [decision(2, 0), decision(2, 1)], 2,
                             b"state-2", 2, [(3, "p.events.x", "bad json", b"\x00")])
    assert await store.load() == (b"state-2", 2)
    assert await count(engine, tables.audit_events) == 2
    assert await count(engine, tables.rounds) == 1
    assert await count(engine, tables.dead_letters) == 1
    assert [row.id for row in await store.pending_outbox()] == ["2-0", "2-1"]


async def test_a_round_that_decides_nothing_is_still_recorded(engine: AsyncEngine) -> None:
    store = PlannerStore(engine)
    await store.commit_batch([audit(1)], [], 1, b"s", 1)
    async with engine.connect() as connection:
        rows = (await connection.execute(sqlalchemy.select(tables.rounds))).all()
    assert [(row.plan_seq, row.event_count, row.decision_count) for row in rows] == [(1, 1, 0)]


async def test_commit_batch_is_atomic_when_one_insert_fails(engine: AsyncEngine) -> None:
    store = PlannerStore(engine)
    await store.commit_batch([audit(1)], [decision(1, 0)], 1, b"state-1", 1)
    with pytest.raises(sqlalchemy.exc.IntegrityError):
        # seq 1 again: the audit insert of the second batch violates the primary key.
        await store.commit_batch([audit(2), audit(1)], [decision(2, 0)], 2, b"state-2", 2)
    assert await store.load() == (b"state-1", 1)
    assert await count(engine, tables.audit_events) == 1
    assert [row.id for row in await store.pending_outbox()] == ["1-0"]
    assert await count(engine, tables.rounds) == 1


async def test_outbox_is_pending_in_order_until_marked_published(engine: AsyncEngine) -> None:
    store = PlannerStore(engine)
    decisions = [decision(5, index) for index in range(12)]
    await store.commit_batch([audit(5)], decisions, 5, b"s", 5)
    pending = await store.pending_outbox()
    assert [row.id for row in pending] == [f"5-{index}" for index in range(12)]
    await store.mark_published(["5-0", "5-1"])
    await store.mark_published(["5-0"])
    assert [row.id for row in await store.pending_outbox()][:2] == ["5-2", "5-3"]
    await store.mark_published([row.id for row in pending])
    assert await store.pending_outbox() == []


async def test_tracking_and_snapshot_move_forward_per_batch(engine: AsyncEngine) -> None:
    store = PlannerStore(engine)
    for seq in (1, 2, 3):
        await store.commit_batch([audit(seq)], [], seq, f"state-{seq}".encode(), seq)
    assert await store.load() == (b"state-3", 3)


async def test_dead_letters_are_recorded_once_and_marked(engine: AsyncEngine) -> None:
    store = PlannerStore(engine)
    await store.record_dead_letter(7, "p.events.pod.ns.x", "not JSON", b"{")
    await store.record_dead_letter(7, "p.events.pod.ns.x", "not JSON", b"{")
    pending = await store.pending_dead_letters()
    assert [(row.seq, row.reason) for row in pending] == [(7, "not JSON")]
    await store.mark_dead_letters_published([7])
    assert await store.pending_dead_letters() == []


async def test_schema_check_refuses_an_empty_database_naming_migrate(db_url: str) -> None:
    engine = engines.create_engine(db_url)
    try:
        with pytest.raises(SchemaMismatch, match="gangsched migrate"):
            await schema.check_schema(engine)
    finally:
        await engine.dispose()


async def test_schema_check_refuses_a_database_behind_naming_migrate(db_url: str) -> None:
    await schema.migrate(db_url)
    engine = engines.create_engine(db_url)
    try:
        await stamp(engine, "0001")
        with pytest.raises(SchemaMismatch, match=r"0001, behind.*gangsched migrate"):
            await schema.check_schema(engine)
    finally:
        await engine.dispose()


async def test_schema_check_refuses_a_database_ahead_naming_migrate(engine: AsyncEngine) -> None:
    await stamp(engine, "9999")
    with pytest.raises(SchemaMismatch, match=r"ahead.*gangsched migrate"):
        await schema.check_schema(engine)


async def test_migrate_is_idempotent_and_check_passes(migrated_db_url: str) -> None:
    await schema.migrate(migrated_db_url)
    engine = engines.create_engine(migrated_db_url)
    try:
        await schema.check_schema(engine)
        assert await schema.current_revision(engine) == schema.head_revision()
    finally:
        await engine.dispose()


async def test_a_database_of_revision_0001_keeps_its_rounds_with_no_planner(db_url: str) -> None:
    await schema.migrate(db_url, "0001")
    engine = engines.create_engine(db_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(sqlalchemy.text(
                "INSERT INTO rounds (plan_seq, event_count, decision_count) VALUES (7, 3, 1)"))
        with pytest.raises(SchemaMismatch, match=r"0001, behind.*gangsched migrate"):
            await schema.check_schema(engine)
        await schema.migrate(db_url)
        async with engine.connect() as connection:
            rows = (await connection.execute(sqlalchemy.select(tables.rounds))).all()
        assert [tuple(row) for row in rows] == [(7, 3, 1, None)]
        await PlannerStore(engine, planner="gangsched test").commit_batch(
            [audit(8)], [], 8, None, 8)
        async with engine.connect() as connection:
            planners = (await connection.execute(
                sqlalchemy.select(tables.rounds.c.planner).order_by(tables.rounds.c.plan_seq))
            ).scalars().all()
        assert planners == [None, "gangsched test"]
    finally:
        await engine.dispose()


async def test_revision_0003_tracks_the_stream_and_downgrades_keeping_the_sequence(
        db_url: str) -> None:
    await schema.migrate(db_url, "0002")
    engine = engines.create_engine(db_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(sqlalchemy.text(
                "INSERT INTO tracking (consumer, last_seq) VALUES ('planner', 7)"))
        with pytest.raises(SchemaMismatch, match=r"0002, behind this gangsched's 0004: run "
                                                 r"`gangsched migrate"):
            await schema.check_schema(engine)
        assert await schema.migrate(db_url) == "0002"
        await schema.check_schema(engine)
        store = PlannerStore(engine)
        assert await store.load_snapshot() == Snapshot(None, 0, 7, None)
        await store.adopt_stream("2026-12-06T00:00:01.000001Z")
        assert await store.load_snapshot() == Snapshot(None, 0, 7, "2026-12-06T00:00:01.000001Z")
        await store.commit_batch([audit(8)], [], 8, None, 8)  # no identity: the one kept
        assert await store.load_snapshot() == Snapshot(None, 0, 8, "2026-12-06T00:00:01.000001Z")
        await store.commit_batch([audit(9)], [], 9, b"state", 9,
                                 stream_created="2026-12-06T00:00:02.000002Z")
        assert await store.load_snapshot() == Snapshot(b"state", 9, 9,
                                                       "2026-12-06T00:00:02.000002Z")
        await alembic_downgrade(engine, db_url, "0002")
        assert await schema.current_revision(engine) == "0002"
        async with engine.connect() as connection:
            rows = (await connection.execute(sqlalchemy.text(
                "SELECT * FROM tracking"))).mappings().all()
        assert [dict(row) for row in rows] == [{"consumer": "planner", "last_seq": 9}]
        assert await schema.migrate(db_url) == "0002"
        assert await store.load_snapshot() == Snapshot(b"state", 9, 9, None)
    finally:
        await engine.dispose()


async def test_revision_0004_records_when_the_tracked_message_was_stored(db_url: str) -> None:
    """A database at 0003 is refused until migrated; its tracked message has no stored time
    (NULL: subject and bytes alone are compared) until the next batch records one; a
    downgrade to 0003 keeps the sequence and the stream."""
    await schema.migrate(db_url, "0003")
    engine = engines.create_engine(db_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(sqlalchemy.text(
                "INSERT INTO tracking (consumer, last_seq, stream_created) "
                "VALUES ('planner', 1, '2026-12-06T00:00:01.000001Z')"))
        with pytest.raises(SchemaMismatch, match=r"0003, behind this gangsched's 0004: run "
                                                 r"`gangsched migrate"):
            await schema.check_schema(engine)
        assert await schema.migrate(db_url) == "0003"
        await schema.check_schema(engine)
        store = PlannerStore(engine)
        await store.commit_batch([audit(1)], [], 1, None, 1)
        assert await store.message_at(1) == ("p.events.node._.n1", b'{"seq":1}', None)
        await store.commit_batch([audit(2)], [], 2, None, 2,
                                 last_stored_at_us=1_796_518_764_485_123)
        assert await store.message_at(2) == ("p.events.node._.n2", b'{"seq":2}',
                                             1_796_518_764_485_123)
        assert await store.message_at(1) == ("p.events.node._.n1", b'{"seq":1}', None)
        await store.commit_batch([audit(3)], [], 3, None, 3)  # a batch that does not say
        assert await store.message_at(3) == ("p.events.node._.n3", b'{"seq":3}', None)
        await alembic_downgrade(engine, db_url, "0003")
        assert await schema.current_revision(engine) == "0003"
        async with engine.connect() as connection:
            rows = (await connection.execute(sqlalchemy.text(
                "SELECT * FROM tracking"))).mappings().all()
        assert [dict(row) for row in rows] == [{
            "consumer": "planner", "last_seq": 3,
            "stream_created": "2026-12-06T00:00:01.000001Z"}]
    finally:
        await engine.dispose()


async def test_a_stream_adopted_before_anything_is_tracked_is_tracked_at_seq_zero(
        engine: AsyncEngine) -> None:
    store = PlannerStore(engine)
    await store.adopt_stream("2026-12-06T00:00:01.000001Z")
    assert await store.load_snapshot() == Snapshot(None, 0, 0, "2026-12-06T00:00:01.000001Z")
    await store.adopt_stream("2026-12-06T00:00:02.000002Z")
    assert await store.load_snapshot() == Snapshot(None, 0, 0, "2026-12-06T00:00:02.000002Z")
    await store.commit_batch([audit(1)], [], 1, None, 1)
    assert await store.load_snapshot() == Snapshot(None, 0, 1, "2026-12-06T00:00:02.000002Z")


async def test_migrate_refuses_a_database_ahead_or_without_a_revision(
        migrated_db_url: str) -> None:
    engine = engines.create_engine(migrated_db_url)
    try:
        await stamp(engine, "9999")
        with pytest.raises(SchemaMismatch, match=r"9999, ahead of this gangsched's"):
            await schema.migrate(migrated_db_url)
        async with engine.begin() as connection:
            await connection.execute(sqlalchemy.text("DROP TABLE alembic_version"))
        with pytest.raises(SchemaMismatch, match=r"holds gangsched's tables but records no schema "
                                                 r"revision"):
            await schema.migrate(migrated_db_url)
        with pytest.raises(SchemaMismatch, match=r"holds gangsched's tables but records no schema "
                                                 r"revision"):
            await schema.check_schema(engine)
        assert await schema.current_revision(engine) is None  # migrate changed nothing:
        assert await count(engine, tables.rounds) == 0  # no revision stamped, tables kept
        async with engine.connect() as connection:
            names = await connection.run_sync(
                lambda sync: sqlalchemy.inspect(sync).get_table_names())
        assert "alembic_version" not in names and "rounds" in names
    finally:
        await engine.dispose()


async def test_migrate_refuses_a_sqlite_file_of_another_application_only(
        db_url: str) -> None:
    """SQLite: a --db pointed at another application's file is refused; PostgreSQL: a database
    a DBA prepared may hold extensions' tables (PostGIS's spatial_ref_sys), so it is taken."""
    engine = engines.create_engine(db_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(sqlalchemy.text("CREATE TABLE customers (id INTEGER)"))
        if db_url.startswith("sqlite"):
            refusing: Callable[[], Awaitable[object]]
            for refusing in (lambda: schema.migrate(db_url),
                             lambda: schema.check_schema(engine, db_url)):
                with pytest.raises(SchemaMismatch, match=r"is not gangsched's: it holds other "
                                                         r"tables \(customers\) and no "
                                                         r"gangsched schema"):
                    await refusing()
            async with engine.begin() as connection:
                await connection.execute(sqlalchemy.text("DROP TABLE customers"))
        assert await schema.migrate(db_url) is None  # migrated from nothing
        await schema.check_schema(engine)
    finally:
        await engine.dispose()


async def test_a_version_table_of_two_revisions_or_a_table_gone_is_refused_by_name(
        migrated_db_url: str) -> None:
    engine = engines.create_engine(migrated_db_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(sqlalchemy.text(
                "INSERT INTO alembic_version VALUES ('0001')"))
        two = r"damaged version table: alembic_version records 2 revisions \(0001, 0004\)"
        refusing: Callable[[], Awaitable[object]]
        for refusing in (lambda: schema.migrate(migrated_db_url),
                         lambda: schema.check_schema(engine),
                         lambda: schema.current_revision(engine)):
            with pytest.raises(SchemaMismatch, match=two):
                await refusing()
        async with engine.begin() as connection:
            await connection.execute(sqlalchemy.text(
                "DELETE FROM alembic_version WHERE version_num = '0001'"))
            await connection.execute(sqlalchemy.text("DROP TABLE outbox"))
        for refusing in (lambda: schema.migrate(migrated_db_url),
                         lambda: schema.check_schema(engine)):
            with pytest.raises(SchemaMismatch, match=r"at schema revision 0004 but lacks table "
                                                     r"outbox: it is damaged"):
                await refusing()
    finally:
        await engine.dispose()


async def test_migrations_create_exactly_the_declared_tables(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        differences = await connection.run_sync(_compare)
    assert differences == []


def test_migrate_sync_works_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()  # a given database's directory must exist (never made for it)
    url = f"sqlite:///{tmp_path / 'sub' / 'cli.db'}"
    schema.migrate_sync(url)
    schema.migrate_sync(url)
    assert (tmp_path / "sub" / "cli.db").exists()


async def test_sqlite_runs_in_wal_mode_with_immediate_transactions(tmp_path: Path) -> None:
    engine = engines.create_engine(f"sqlite+aiosqlite:///{tmp_path}/wal.db")
    try:
        async with engine.begin() as connection:
            mode = (await connection.exec_driver_sql("PRAGMA journal_mode")).scalar()
            assert connection.in_transaction()
        assert mode == "wal"
    finally:
        await engine.dispose()


async def count(engine: AsyncEngine, table: sqlalchemy.Table) -> int:
    async with engine.connect() as connection:
        query = sqlalchemy.select(sqlalchemy.func.count()).select_from(table)
        return int((await connection.execute(query)).scalar_one())


async def alembic_downgrade(engine: AsyncEngine, url: str, revision: str) -> None:
    """Downgrade the database at `url` to `revision` (alembic's own command, as an operator
    runs it), on a connection of `engine`."""
    def downgrade(connection: Connection) -> None:
        config = schema.alembic_config(url)
        config.attributes["connection"] = connection
        command.downgrade(config, revision)

    async with engine.begin() as connection:
        await connection.run_sync(downgrade)


async def stamp(engine: AsyncEngine, revision: str | None) -> None:
    """Force the recorded revision (as an older or newer gangsched would have left it);
    None leaves the tables but no revision (nothing can tell which they are)."""
    async with engine.begin() as connection:
        await connection.execute(sqlalchemy.text("DELETE FROM alembic_version"))
        if revision is not None:
            await connection.execute(
                sqlalchemy.text("INSERT INTO alembic_version (version_num) VALUES (:revision)"),
                {"revision": revision},
            )


def _compare(connection: Connection) -> list[object]:
    return list(compare_metadata(MigrationContext.configure(connection), tables.metadata))


async def test_the_message_taken_in_at_a_seq_is_the_event_applied_or_the_dead_letter(
        engine: AsyncEngine) -> None:
    """What the planner compares with the EVENTS stream's message at its tracked sequence;
    the time NATS stored it is recorded for the tracked sequence only."""
    store = PlannerStore(engine)
    await store.commit_batch([audit(1)], [], 1, None, 2,
                             dead_letters=[(2, "px.events.pod.ns.bad", "undecodable", b"{")],
                             last_stored_at_us=1_796_518_764_485_123)
    assert await store.message_at(1) == ("p.events.node._.n1", b'{"seq":1}', None)
    assert await store.message_at(2) == ("px.events.pod.ns.bad", b"{", 1_796_518_764_485_123)
    assert await store.message_at(3) is None


async def test_a_snapshot_is_stored_compressed_and_one_stored_plain_before_still_loads(
        engine: AsyncEngine) -> None:
    """Nodes' image names repeat across nodes: the stored snapshot is a zlib stream several
    times smaller than the state's bytes, and `load_snapshot` gives those bytes back; a
    snapshot written uncompressed (before compression) loads unchanged."""
    names = [f"registry.example/team/image-{i}:v{i}" for i in range(50)]
    state_bytes = (b'{"nodes":[' + b",".join(
        b'{"images":[' + b",".join(f'"{name}"'.encode() for name in names) + b"]}"
        for _ in range(200)) + b"]}")
    store = PlannerStore(engine)
    await store.commit_batch([audit(1)], [], 1, state_bytes, 1)
    async with engine.connect() as connection:
        stored = bytes((await connection.execute(
            sqlalchemy.select(tables.snapshots.c.data))).scalar_one())
    assert stored[0] == 0x78 and len(stored) * 10 < len(state_bytes)
    assert await store.load() == (state_bytes, 1)
    async with engine.begin() as connection:
        await connection.execute(sqlalchemy.update(tables.snapshots).values(data=b'{"old":1}'))
    assert await store.load() == (b'{"old":1}', 1)
