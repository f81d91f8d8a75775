"""The planner's shell while its database cannot be reached: a leader steps down, and a
database that answers reads but refuses writes keeps backing off (reviews, session 29)."""

from __future__ import annotations

import asyncio

import pytest

from services.config.settings import PlannerServiceSettings, Settings
from services.planner import service
from services.runtime import election
from services.runtime.health import ReadyFlag
from services.store import engines
from services.store.errors import StoreUnavailable


class _Nats:
    is_connected = True


class _JetStream:
    _nc = _Nats()


class _Lease:
    def __init__(self) -> None:
        self.renewals = 0
        self.released = False

    async def acquire(self) -> int:
        return 1

    async def renew(self, revision: int) -> int:
        self.renewals += 1
        return revision + 1

    async def release(self, revision: int) -> None:
        self.released = True


def test_a_leader_whose_database_does_not_answer_steps_down() -> None:
    settings = Settings(planner=PlannerServiceSettings(leader_election=True,
                                                        leader_lease_seconds=1.0))

    async def main() -> tuple[bool, bool]:
        engine = engines.create_engine("postgresql+asyncpg://u:p@127.0.0.1:9/db")
        lease, ready = _Lease(), ReadyFlag("planner")
        task = asyncio.create_task(election.lead(
            lease, election.Timing(lease_seconds=1.0, retry_seconds=0.2),
            lambda: service.run_planner(settings, _JetStream(), engine, ready),  # type: ignore[arg-type]
            ready=ready))
        await asyncio.sleep(4)
        released = lease.released
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await engine.dispose()
        return released, ready.is_ready

    released, is_ready = asyncio.run(main())
    assert released and not is_ready


def test_the_database_counts_as_answering_only_once_a_batch_is_done(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A database that answers recovery's reads but refuses the first batch's writes (disk
    full, read-only) is not "answering again": its backoff and warnings go on growing."""
    told: list[str] = []
    outcomes: list[BaseException | None] = [StoreUnavailable("x", why="disk full"), None,
                                            asyncio.CancelledError()]

    async def run_once(self: service.PlannerService, source: object) -> int:
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return 0

    async def nothing(self: service.PlannerService) -> None:
        return None

    monkeypatch.setattr(service.PlannerService, "run_once", run_once)
    monkeypatch.setattr(service.PlannerService, "mark_unmarked", nothing)
    monkeypatch.setattr(service.PlannerService, "snapshot_at_stop", nothing)
    planner = service.PlannerService.__new__(service.PlannerService)
    with pytest.raises(StoreUnavailable):
        asyncio.run(planner.serve(object(), None, lambda: told.append("answered")))  # type: ignore[arg-type]
    assert told == []
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(planner.serve(object(), None, lambda: told.append("answered")))  # type: ignore[arg-type]
    assert told == ["answered"]
