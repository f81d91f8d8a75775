"""The replay benchmark's own log replays and verifies whole, from SQLite and, copied as the
benchmark's `--postgres` does, from PostgreSQL (a small log: the benchmark is run by
`make bench-replay`; this keeps its code from rotting and no timing is asserted)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import asyncpg
import pytest

from bench import replay_bench
from services.planner.core.config import PlannerConfig
from tests.support.postgres import Postgres

pytestmark = pytest.mark.integration


async def test_the_benchmark_log_verifies_every_decision_it_recorded(
        tmp_path: Path, postgres: Postgres) -> None:
    path, config = tmp_path / "bench.db", PlannerConfig()
    events, decisions, rounds = await asyncio.to_thread(replay_bench.build, path, 5000, config)
    assert events >= 5000 and decisions > 0
    expected = f"verified {decisions} decisions at {rounds} plan points"
    measured = await replay_bench.measure(f"sqlite+aiosqlite:///{path}", config, verify=True)
    assert (measured.events, measured.summary) == (events, expected)
    name = f"bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(postgres.dsn())
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        await replay_bench.copy_to_postgres(path, postgres.url(name))
        measured = await replay_bench.measure(postgres.url(name), config, verify=True)
        assert (measured.events, measured.summary) == (events, expected)
    finally:
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()
