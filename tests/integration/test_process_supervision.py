"""Supervision of real child processes (`services.runtime.process_supervision`): a child
that dies is restarted and counted, one that never gets ready ends supervision with one
reason, `stop` ends them all (SIGTERM, then SIGKILL for one that ignores it)."""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from services.cli.child import ChildPayload
from services.config.settings import Settings
from services.planner.core.config import PlannerConfig
from services.runtime import metrics
from services.runtime.child_channel import frame
from services.runtime.process_supervision import (
    ChildFailed,
    ChildSpec,
    Limits,
    ProcessSupervisor,
)
from tests.support.supervised_child import FAIL_CODE, FATAL_LINE

pytestmark = pytest.mark.integration

CHILD = (sys.executable, "-m", "tests.support.supervised_child")


class Recorder:
    """What the supervisor reported: messages and exits, by child name."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self.exits: list[str] = []
        self.changed = asyncio.Event()

    def on_message(self, name: str, message: dict[str, Any]) -> None:
        self.messages.append((name, message))
        self.changed.set()

    def on_exit(self, name: str) -> None:
        self.exits.append(name)
        self.changed.set()

    def pids(self, name: str) -> list[int]:
        return [int(m["pid"]) for n, m in self.messages if n == name and "pid" in m]

    async def until(self, condition: Callable[[], object]) -> None:
        async with asyncio.timeout(60):
            while not condition():
                self.changed.clear()
                await self.changed.wait()


def spec(name: str, mode: str) -> ChildSpec:
    return ChildSpec(name=name, argv=CHILD, payload=mode.encode())


def restarts(name: str) -> float:
    value: float = metrics.task_restarts.labels(name)._value.get()
    return value


async def test_a_child_killed_is_restarted_and_counted_and_stop_ends_it() -> None:
    recorder = Recorder()
    supervisor = ProcessSupervisor(recorder.on_message, recorder.on_exit,
                                   Limits(first_backoff_seconds=0.01))
    before = restarts("killed-child")
    supervisor.start(spec("killed-child", "serve"))
    try:
        await recorder.until(lambda: recorder.pids("killed-child"))
        first = recorder.pids("killed-child")[0]
        assert supervisor.pid("killed-child") == first
        os.kill(first, signal.SIGKILL)
        await recorder.until(lambda: len(recorder.pids("killed-child")) == 2)
        second = recorder.pids("killed-child")[1]
        assert second != first
        assert recorder.exits == ["killed-child"]
        assert restarts("killed-child") == before + 1
    finally:
        await supervisor.stop()
    assert recorder.exits == ["killed-child", "killed-child"]
    assert not psutil.pid_exists(second) or psutil.Process(second).status() == "zombie"
    assert supervisor.pid("killed-child") is None


async def test_a_child_that_never_gets_ready_ends_supervision_with_its_reason() -> None:
    recorder = Recorder()
    supervisor = ProcessSupervisor(recorder.on_message, recorder.on_exit,
                                   Limits(first_backoff_seconds=0.01, crash_loop_limit=3))
    supervisor.start(spec("doomed", "fail"))
    try:
        with pytest.raises(ChildFailed) as failure:
            await supervisor.wait()
    finally:
        await supervisor.stop()
    assert str(failure.value) == (
        f"the doomed process exited 3 times in a row before it was ready, last with code "
        f"{FAIL_CODE} (its log is above)")
    assert recorder.exits == ["doomed"] * 3


async def test_a_child_that_says_no_restart_mends_it_ends_supervision_with_its_line() -> None:
    """A fatal line (a lost NATS store, a schema behind) ends the run at the first exit, even
    after the child was ready: restarted, it failed again for ever (review, session 29)."""
    recorder = Recorder()
    supervisor = ProcessSupervisor(recorder.on_message, recorder.on_exit,
                                   Limits(first_backoff_seconds=0.01, crash_loop_limit=3))
    supervisor.start(spec("planner-fatal", "fatal"))
    try:
        with pytest.raises(ChildFailed) as failure:
            await supervisor.wait()
    finally:
        await supervisor.stop()
    assert str(failure.value) == FATAL_LINE
    assert recorder.exits == ["planner-fatal"]


async def test_stop_terminates_every_child_and_kills_one_ignoring_sigterm() -> None:
    recorder = Recorder()
    supervisor = ProcessSupervisor(recorder.on_message, recorder.on_exit,
                                   Limits(stop_timeout_seconds=1.0))
    supervisor.start(spec("polite", "serve"))
    supervisor.start(spec("stubborn", "stubborn"))
    await recorder.until(lambda: recorder.pids("polite") and recorder.pids("stubborn"))
    stubborn = psutil.Process(recorder.pids("stubborn")[0])
    polite = psutil.Process(recorder.pids("polite")[0])
    await supervisor.stop()
    assert sorted(recorder.exits) == ["polite", "stubborn"]
    assert not polite.is_running() and not stubborn.is_running()
    await supervisor.wait()  # returns at once: nothing left to supervise


async def test_a_child_started_without_a_parent_payload_says_so() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli.child", stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    _, stderr = await process.communicate()
    assert process.returncode == 2
    assert stderr.decode().strip() == (
        "gangsched: stdin ended before the payload; not a supervised start (this module is "
        "started by `gangsched run`)")


async def test_a_child_whose_argument_names_another_service_than_its_payload_says_so() -> None:
    payload = pickle.dumps(ChildPayload("planner", Settings(), PlannerConfig()))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli.child", "binder", stdin=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    _, stderr = await process.communicate(frame(payload))
    assert process.returncode == 2
    assert stderr.decode().strip() == (
        "gangsched: started as the binder process with a planner payload")


async def test_stop_does_not_wait_out_a_restart_backoff() -> None:
    recorder = Recorder()
    supervisor = ProcessSupervisor(recorder.on_message, recorder.on_exit,
                                   Limits(first_backoff_seconds=3600.0))
    supervisor.start(spec("backing-off", "fail"))
    await recorder.until(lambda: recorder.exits == ["backing-off"])
    async with asyncio.timeout(60):  # an hour of backoff otherwise
        await supervisor.stop()
    assert recorder.exits == ["backing-off"]


async def test_a_child_that_cannot_even_be_started_counts_as_failing_before_ready(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    supervisor = ProcessSupervisor(recorder.on_message, recorder.on_exit,
                                   Limits(first_backoff_seconds=0.01, crash_loop_limit=2))
    supervisor.start(ChildSpec(name="absent", argv=(str(tmp_path / "no-such-program"),),
                               payload=b""))
    try:
        with pytest.raises(ChildFailed, match="exited 2 times in a row before it was ready, "
                                              "last with code 127"):
            await supervisor.wait()
    finally:
        await supervisor.stop()
