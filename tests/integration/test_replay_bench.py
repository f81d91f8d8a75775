"""The replay benchmark's own log replays and verifies whole (a small one: the benchmark is
run by `make bench-replay`, this only keeps its code from rotting; no timing is asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import replay_bench
from services.planner.core.config import PlannerConfig

pytestmark = pytest.mark.integration


async def test_the_benchmark_log_verifies_every_decision_it_recorded(tmp_path: Path):
    path = tmp_path / "bench.db"
    config = PlannerConfig()
    events, decisions, rounds = await _built(path, config)
    assert events >= 5000 and decisions > 0
    measured = await replay_bench.measure(f"sqlite+aiosqlite:///{path}", config, verify=True)
    assert measured.events == events
    assert measured.summary == f"verified {decisions} decisions at {rounds} plan points"


async def _built(path: Path, config: PlannerConfig) -> tuple[int, int, int]:
    import asyncio

    return await asyncio.to_thread(replay_bench.build, path, 5000, config)
