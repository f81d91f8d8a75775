"""A service run apart (`gangsched planner --nats ... --db ...`) in the data directory of a live
`gangsched run` leaves the run's run.json and the credentials of its embedded NATS alone,
whichever started first and whenever it stops: it used to replace run.json once ready and remove
both as it exited, so `decisions --follow` on the run ended, later `decisions` said the run
"is not ready yet" for as long as it ran, and subscribers lost the NATS credentials.

The real `gangsched run` here never becomes ready (its API server is unreachable), so its
run.json comes from a stand-in: a process that holds the data directory's lock and announces
itself as `run` does once every service is ready (`serve.announce_when_ready`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.bus.embedded import EmbeddedNats
from services.cli import run_info
from services.store import schema
from tests.integration.test_run_locked_down import KUBECONFIG, stop
from tests.integration.test_serve_waits_for_nats import Planner
from tests.support.gangsched_process import GangschedRun
from tests.support.waiting import eventually, eventually_async

pytestmark = pytest.mark.integration

READY_SECONDS = 30.0
RUN_STAND_IN = """
import asyncio
import sys
from pathlib import Path

from services.cli import data_dir_lock, run_info, serve
from services.config.settings import BusSettings, Settings
from services.runtime.health import Readiness

data_dir = Path(sys.argv[1])
settings = Settings(data_dir=data_dir, bus=BusSettings(url=sys.argv[2]))
with data_dir_lock.hold(data_dir):
    run_info.write_credentials(data_dir, "run-user", "run-password")
    asyncio.run(serve.announce_when_ready(settings, Readiness(), None, serve.SERVICES))
    print("ready", flush=True)
    sys.stdin.read()
"""
"""A ready `gangsched run` as its data directory shows it (lock, credentials, run.json),
until its standard input closes."""


class RunStandIn:
    """`RUN_STAND_IN` in a subprocess on `data_dir`, its run.json naming `nats_url`."""

    def __init__(self, data_dir: Path, nats_url: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", RUN_STAND_IN, str(data_dir), nats_url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "ready\n"

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


@pytest.fixture
async def database(tmp_path: Path) -> str:
    """The planner's database, migrated (a given --db is never migrated by the planner)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'planner.db'}"
    await schema.migrate(url)
    return url


@pytest.fixture
def real_run(tmp_path: Path) -> Iterator[GangschedRun]:
    """A `gangsched run` on `tmp_path / "data"` (never ready: its API server is unreachable),
    launched by the test; stopped after it."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    run = GangschedRun(kubeconfig, tmp_path / "data", "--http-port", "-1")
    try:
        yield run
    finally:
        if run.process is not None:
            code = stop(run)
            print(run.log_tail(60))
            assert code == 0, run.log_tail()


def launch(run: GangschedRun) -> None:
    """`run.launch()`, leaving the data directory as it is (the helper removes run.json)."""
    log = run.log_path.open("ab")
    run.process = subprocess.Popen(
        [sys.executable, "-m", "services.cli.main", "run", "--kubeconfig", str(run.kubeconfig),
         "--data-dir", str(run.data_dir), "--log-level", "DEBUG", *run.extra],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    log.close()


def credentials_of(run: GangschedRun) -> str:
    """The text of the run's credentials file, once its embedded NATS is up."""
    path = run.data_dir / run_info.CREDENTIALS_FILE

    def written() -> str | None:
        assert run.process is not None and run.process.poll() is None, run.log_tail()
        return path.read_text() if path.is_file() else None

    text = eventually(written, timeout=READY_SECONDS, interval=0.1, what="run's credentials")
    assert text is not None  # `eventually` returns only a truthy value
    return text


async def ready(planner: Planner) -> None:
    """Wait until the planner run apart says every service is ready."""
    async def said() -> tuple[float, str]:
        return planner.logged(r"gangsched ready: planner")

    await eventually_async(said, timeout=READY_SECONDS, what="the planner ready")


def stopped(planner: Planner) -> None:
    code = planner.stop()
    assert code == 0, planner.output()
    assert "Traceback" not in planner.output()


async def test_a_service_started_beside_a_ready_run_leaves_its_files_when_it_stops(
        tmp_path: Path, nats_server: EmbeddedNats, database: str) -> None:
    data_dir = tmp_path / "data"
    run = RunStandIn(data_dir, nats_server.url)
    try:
        run_json = (data_dir / run_info.RUN_FILE).read_text()
        assert json.loads(run_json)["pid"] == run.process.pid
        planner = Planner(tmp_path, nats_server.url, "--db", database)
        try:
            await ready(planner)
            assert (data_dir / run_info.RUN_FILE).read_text() == run_json  # not replaced
            assert f"keeps that of the gangsched (pid {run.process.pid}) serving there" in \
                planner.output()
        finally:
            stopped(planner)
        assert (data_dir / run_info.RUN_FILE).read_text() == run_json
        assert run_info.nats_credentials(None, data_dir) == ("run-user", "run-password")
        decisions = subprocess.run(
            [sys.executable, "-m", "services.cli.main", "decisions", "--data-dir", str(data_dir)],
            capture_output=True, text=True, timeout=60)
        assert decisions.returncode == 0, decisions.stderr
        assert decisions.stderr == "no decision on the DECISIONS stream\n"  # not "not ready"
    finally:
        run.stop()


async def test_a_run_started_beside_a_ready_service_replaces_its_run_json_which_stays(
        tmp_path: Path, nats_server: EmbeddedNats, database: str) -> None:
    data_dir = tmp_path / "data"
    planner = Planner(tmp_path, nats_server.url, "--db", database)
    try:
        await ready(planner)
        assert run_info.owner(data_dir) == planner.process.pid  # no other gangsched there
        run = RunStandIn(data_dir, nats_server.url)
        try:
            run_json = (data_dir / run_info.RUN_FILE).read_text()
            assert json.loads(run_json)["pid"] == run.process.pid
            stopped(planner)
            assert (data_dir / run_info.RUN_FILE).read_text() == run_json
            assert run_info.nats_credentials(None, data_dir) == ("run-user", "run-password")
        finally:
            run.stop()
    finally:
        planner.stop()


async def test_a_service_beside_a_real_run_leaves_its_credentials_in_either_order(
        tmp_path: Path, nats_server: EmbeddedNats, database: str, real_run: GangschedRun) -> None:
    """A `gangsched run` removes its credentials as it stops; a service run apart, never."""
    first = Planner(tmp_path, nats_server.url, "--db", database)
    try:
        await ready(first)
        assert run_info.owner(real_run.data_dir) == first.process.pid
        launch(real_run)
        credentials = credentials_of(real_run)
        assert run_info.owner(real_run.data_dir) == first.process.pid  # the run is never ready
    finally:
        stopped(first)  # its own run.json went with it
    assert not (real_run.data_dir / run_info.RUN_FILE).exists()
    assert (real_run.data_dir / run_info.CREDENTIALS_FILE).read_text() == credentials
    second = Planner(tmp_path, nats_server.url, "--db", database)
    try:
        await ready(second)
        assert not (real_run.data_dir / run_info.RUN_FILE).exists()  # the run holds the lock
    finally:
        stopped(second)
    assert (real_run.data_dir / run_info.CREDENTIALS_FILE).read_text() == credentials
    assert real_run.process is not None and real_run.process.poll() is None
    assert stop(real_run) == 0, real_run.log_tail()
    assert not (real_run.data_dir / run_info.CREDENTIALS_FILE).exists()
