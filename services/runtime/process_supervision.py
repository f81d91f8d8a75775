"""Supervise child processes: start each, restart it when it exits, stop them all together.

Layer: runtime. A child is an argv given a payload on its stdin and talking back in JSON lines
on its stdout (protocol: `services.runtime.child_channel`); its stderr is this process's. Each
child gets its own session (a terminal's Ctrl-C reaches only this process, which then stops
the children in order) and the parent-death signal SIGTERM, so no child outlives this
process, not even a `kill -9` of it.

A child that exits while not asked to (any exit code, any signal) is restarted after a capped
exponential backoff, as `services.runtime.supervision` restarts a failed task, and counted in
`gangsched_task_restarts_total{task=<name>}`. A child that exits `crash_loop_limit` times in a
row without ever reporting ready (`{"ready": true}`) will not start: supervision ends with
`ChildFailed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from services.runtime import metrics, parent_death
from services.runtime.child_channel import frame
from services.runtime.supervision import (
    FIRST_BACKOFF_SECONDS,
    HEALTHY_RUN_SECONDS,
    MAX_BACKOFF_SECONDS,
)

log = logging.getLogger(__name__)

CRASH_LOOP_LIMIT = 5
NOT_STARTED_CODE = 127
"""The return code told for a child that could not even be started (as a shell says)."""
STOP_TIMEOUT_SECONDS = 30.0
"""How long `stop` waits after SIGTERM before it SIGKILLs the children still running."""

OnMessage = Callable[[str, dict[str, Any]], None]
"""Called with (child name, message) for every message a child sends."""
OnExit = Callable[[str], None]
"""Called with the child's name each time it exits (before any restart)."""


@dataclasses.dataclass(frozen=True)
class ChildSpec:
    """One child: `argv` (argv[0] the executable), the `payload` bytes for its stdin, and its
    environment (None: this process's)."""

    name: str
    argv: Sequence[str]
    payload: bytes = dataclasses.field(repr=False)
    env: Mapping[str, str] | None = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass(frozen=True)
class Limits:
    """How supervision waits and gives up. Units: seconds, but `crash_loop_limit` (exits)."""

    first_backoff_seconds: float = FIRST_BACKOFF_SECONDS
    max_backoff_seconds: float = MAX_BACKOFF_SECONDS
    crash_loop_limit: int = CRASH_LOOP_LIMIT
    stop_timeout_seconds: float = STOP_TIMEOUT_SECONDS


class ChildFailed(Exception):
    """A child exited `crash_loop_limit` times in a row before it was ready, or exited after
    sending `{"fatal": line}` (an error no restart mends): the message says which and why."""


def describe_exit(code: int) -> str:
    """'with code 1' or 'on SIGKILL' for an asyncio return code (negative: a signal)."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"on {signal.Signals(-code).name}"
        return f"on signal {-code}"
    return f"with code {code}"


class ProcessSupervisor:
    """Children started, restarted and stopped together.

    Backoffs double per consecutive exit, up to `limits.max_backoff_seconds`, and start from
    the first again after a run of `HEALTHY_RUN_SECONDS`.
    """

    def __init__(self, on_message: OnMessage, on_exit: OnExit,
                 limits: Limits = Limits()) -> None:
        self._on_message = on_message
        self._on_exit = on_exit
        self._limits = limits
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._processes: dict[str, asyncio.subprocess.Process] = {}
        self._stopping = False
        self._stopped = asyncio.Event()

    def pid(self, name: str) -> int | None:
        """The pid of child `name` while it runs, else None."""
        process = self._processes.get(name)
        return process.pid if process is not None and process.returncode is None else None

    def start(self, spec: ChildSpec) -> None:
        """Start `spec` and keep it running until `stop` (names are unique)."""
        if spec.name in self._tasks:
            raise ValueError(f"child {spec.name} already started")
        self._tasks[spec.name] = asyncio.create_task(self._keep(spec), name=spec.name)

    async def wait(self) -> None:
        """Wait until `stop`, or until a child will not start.

        Raises:
            ChildFailed: a child exited `crash_loop_limit` times in a row before it was ready.
        """
        if not self._tasks:
            return
        done, _ = await asyncio.wait(list(self._tasks.values()),
                                     return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    async def stop(self) -> None:
        """SIGTERM every child, wait for all to exit (SIGKILL those still running after
        `stop_timeout_seconds`); idempotent."""
        self._stopping = True
        self._stopped.set()
        tasks = list(self._tasks.values())
        for process in list(self._processes.values()):
            _signal(process, signal.SIGTERM)
        if tasks:
            await asyncio.wait(tasks, timeout=self._limits.stop_timeout_seconds)
            for name, process in list(self._processes.items()):
                if process.returncode is None:
                    log.error("%s process ignored SIGTERM for %gs; killing it", name,
                              self._limits.stop_timeout_seconds)
                    _signal(process, signal.SIGKILL)
            await asyncio.wait(tasks)
        for task in tasks:
            if not task.cancelled() and isinstance(task.exception(), Exception) \
                    and not isinstance(task.exception(), ChildFailed):
                log.error("supervising %s ended with %r", task.get_name(), task.exception())
        self._tasks.clear()

    async def _keep(self, spec: ChildSpec) -> None:
        """Run `spec` again each time it exits, until `stop`."""
        backoff = self._limits.first_backoff_seconds
        exits_before_ready = 0
        while True:
            started = time.monotonic()
            fatal: list[str] = []
            try:
                code, was_ready = await self._run_once(spec, fatal)
            except OSError as error:  # not started at all (no such executable, no memory)
                log.error("%s process could not start: %s", spec.name, error)
                code, was_ready = NOT_STARTED_CODE, False
            self._on_exit(spec.name)
            if self._stopping:
                log.info("%s process exited %s", spec.name, describe_exit(code))
                return
            if fatal:  # no restart mends it: said once, by the parent, and the run ends
                raise ChildFailed(fatal[-1])
            exits_before_ready = 0 if was_ready else exits_before_ready + 1
            if exits_before_ready >= self._limits.crash_loop_limit:
                raise ChildFailed(
                    f"the {spec.name} process exited {exits_before_ready} times in a row "
                    f"before it was ready, last {describe_exit(code)} (its log is above)")
            if time.monotonic() - started >= HEALTHY_RUN_SECONDS:
                backoff = self._limits.first_backoff_seconds
            log.error("%s process exited %s; restarting it in %.1fs", spec.name,
                      describe_exit(code), backoff)
            metrics.task_restarts.labels(spec.name).inc()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), backoff)
            if self._stopping:
                return
            backoff = min(backoff * 2, self._limits.max_backoff_seconds)

    async def _run_once(self, spec: ChildSpec, fatal: list[str]) -> tuple[int, bool]:
        """Start the child, hand it its payload, relay its messages until it exits; return
        its return code and whether it reported ready. A `{"fatal": line}` it sent is
        appended to `fatal`."""
        process = await asyncio.create_subprocess_exec(
            *spec.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=dict(spec.env) if spec.env is not None else None, start_new_session=True,
            preexec_fn=parent_death.preexec())
        self._processes[spec.name] = process
        log.info("%s process %d started", spec.name, process.pid)
        if self._stopping:  # stopped while it was being started
            _signal(process, signal.SIGTERM)
        ready = False
        try:
            assert process.stdin is not None and process.stdout is not None
            with contextlib.suppress(ConnectionError):
                process.stdin.write(frame(spec.payload))
                await process.stdin.drain()
            async for line in process.stdout:
                message = _message(spec.name, line)
                if message is not None:
                    ready = ready or message.get("ready") is True
                    if isinstance(message.get("fatal"), str):
                        fatal.append(message["fatal"])
                    self._on_message(spec.name, message)
            return await process.wait(), ready
        except asyncio.CancelledError:
            _signal(process, signal.SIGKILL)
            await process.wait()
            raise
        finally:
            if process.stdin is not None:
                process.stdin.close()
            del self._processes[spec.name]


def _message(name: str, line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if not isinstance(message, dict):
        log.warning("%s process sent something not a message: %r", name, line[:200])
        return None
    return message


def _signal(process: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)
