"""Run the planner service alone, for tests that kill it: `python -m
tests.integration.planner_process NATS_URL PREFIX DB_URL READY_FILE`. Creates READY_FILE once
the planner is ready; stops on SIGTERM; the fault switch `GANGSCHED_TEST_CRASH_AFTER_COMMIT=1`
(see services/planner/faults.py) makes it SIGKILL itself.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

from services.bus import connection
from services.config.settings import BusSettings, PlannerServiceSettings, Settings
from services.planner.service import run_planner
from services.runtime.health import ReadyFlag
from services.runtime.shutdown import run_until_signalled
from services.store import engines


class ReadyFile(ReadyFlag):
    """A ready flag that also tells the test process, through a file."""

    def __init__(self, path: Path) -> None:
        super().__init__("planner")
        self.path = path

    def set(self, is_ready: bool = True) -> None:
        super().set(is_ready)
        if is_ready:
            self.path.touch()


async def main(nats_url: str, prefix: str, db_url: str, ready_file: str) -> None:
    bus = BusSettings(url=nats_url, prefix=prefix)
    settings = Settings(data_dir=Path("."), bus=bus,
                        planner=PlannerServiceSettings(fetch_timeout_seconds=0.1))
    client = await connection.connect(bus, name="planner-under-test")
    engine = engines.create_engine(db_url)
    try:
        await run_until_signalled(
            run_planner(settings, client.jetstream(), engine, ReadyFile(Path(ready_file)))
        )
    finally:
        await engine.dispose()
        await client.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(main(*sys.argv[1:5]))
