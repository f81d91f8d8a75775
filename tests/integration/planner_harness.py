"""Helpers for planner service tests: publish events like the watcher, read streams, run the
planner in this process or in a subprocess (for SIGKILL tests)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus.publishing import Publisher
from services.config.settings import BusSettings, PlannerServiceSettings, Settings
from services.contracts import codec, subjects
from services.contracts.decisions import Decision
from services.contracts.events import Event, NodeObserved, PodGroupObserved, PodObserved
from services.planner.service import run_planner
from services.runtime.health import ReadyFlag
from tests.support.waiting import eventually_async
from tests.unit.planner.builders import make_node, make_pod, make_podgroup

REPO = Path(__file__).resolve().parents[2]


def gang_events(group: str = "pg1", min_member: int = 2, pods: int = 2) -> list[Event]:
    """A node with room for the gang, its PodGroup, and its pods (1 cpu each)."""
    return [
        make_node("n1").capacity(cpu_milli=8000).build(1000),
        make_podgroup(group, min_member).created(1000).build(1000),
        *[make_pod(f"{group}-{i}").requests(cpu_milli=1000).in_group(group).created(1000)
          .build(1000 + i) for i in range(pods)],
    ]


def event_item(prefix: str, event: Event) -> tuple[str, bytes, str]:
    """`(subject, data, msg_id)` as the watcher publishes it."""
    if isinstance(event, NodeObserved):
        kind, namespace, name, uid = "node", "", event.name, event.uid
    elif isinstance(event, PodObserved | PodGroupObserved):
        kind = "pod" if isinstance(event, PodObserved) else "podgroup"
        namespace, name, uid = event.namespace, event.name, event.uid
    else:
        raise AssertionError(f"no subject for {event!r}")
    msg_id = f"{kind}/{uid}/{event.resource_version}/{type(event).__name__}"
    return subjects.events_subject(prefix, kind, namespace, name), codec.encode(event), msg_id


async def publish_events(js: JetStreamContext, prefix: str, events: Sequence[Event]) -> None:
    """Publish `events` to EVENTS in order."""
    await Publisher(js).publish_many([event_item(prefix, event) for event in events])


async def publish_raw(js: JetStreamContext, prefix: str, data: bytes, msg_id: str) -> None:
    """Publish arbitrary bytes to an events subject (a poisoned message)."""
    subject = subjects.events_subject(prefix, "pod", "ns", msg_id)
    await Publisher(js).publish(subject, data, msg_id=msg_id)


async def read_stream(js: JetStreamContext, stream: str) -> list[RawStreamMsg]:
    """Every message stored in `stream`, by sequence."""
    info = await js.stream_info(stream)
    first, last = info.state.first_seq, info.state.last_seq
    if info.state.messages == 0:
        return []
    return [await js.get_msg(stream, seq) for seq in range(first, last + 1)]


async def published_decisions(js: JetStreamContext, prefix: str) -> list[Decision]:
    """Every decision on the DECISIONS stream, in stream order."""
    messages = await read_stream(js, subjects.stream_name(prefix, "DECISIONS"))
    return [codec.decode_decision(message.data or b"") for message in messages]


def planner_settings(bus: BusSettings, tmp_path: Path) -> Settings:
    """Settings for a planner under test: short fetch timeout."""
    return Settings(data_dir=tmp_path, bus=bus,
                    planner=PlannerServiceSettings(batch_size=512, fetch_timeout_seconds=0.1))


@contextlib.asynccontextmanager
async def running_planner(
    settings: Settings, js: JetStreamContext, engine: AsyncEngine,
    ready: ReadyFlag | None = None, *, ends_with: tuple[type[BaseException], ...] = (),
) -> AsyncIterator[asyncio.Task[None]]:
    """Run `run_planner` as a task until the block ends; fail fast if it crashes before it is
    ready. `ready`: the flag it reports on (a new one if None); `ends_with`: errors the block
    expects the task to have ended with (not raised again when the block ends)."""
    ready = ready if ready is not None else ReadyFlag("planner")
    task = asyncio.create_task(run_planner(settings, js, engine, ready))

    async def is_ready() -> bool:
        if task.done():
            task.result()
        return ready.is_ready

    try:
        await eventually_async(is_ready, timeout=30, what="planner ready")
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, *ends_with):
            await task


async def start_planner_process(
    bus: BusSettings, db_url: str, log_path: Path, *, crash_after_commit: bool = False
) -> asyncio.subprocess.Process:
    """`python -m tests.integration.planner_process` with the fault switch on or off.

    `ready_path(log_path)` appears once this process's planner is ready (never with the switch
    on and events waiting: it dies first).
    """
    ready = ready_path(log_path)
    ready.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    env.pop("GANGSCHED_TEST_CRASH_AFTER_COMMIT", None)
    if crash_after_commit:
        env["GANGSCHED_TEST_CRASH_AFTER_COMMIT"] = "1"
    with log_path.open("ab") as log:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.integration.planner_process",
            str(bus.url), bus.prefix, db_url, str(ready), cwd=str(REPO), env=env,
            stdout=log, stderr=log, stdin=asyncio.subprocess.DEVNULL,
        )


def ready_path(log_path: Path) -> Path:
    """The ready file of the planner process logging to `log_path`."""
    return log_path.with_suffix(".ready")


async def wait_ready(process: asyncio.subprocess.Process, log_path: Path) -> None:
    """Wait until the planner process is ready; fail with its log if it exits first."""

    async def is_ready() -> bool:
        assert process.returncode is None, log_path.read_text()
        return ready_path(log_path).exists()

    await eventually_async(is_ready, timeout=60, what="planner process ready")
