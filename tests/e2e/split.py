"""gangsched's services as separate processes on one NATS, for tests that must come between them.

A test that needs a decision to exist before the binder sees it (a member or node deleted
between decision and bind, a paused API server) starts `gangsched watcher` and
`gangsched planner` first, waits for the Placement on DECISIONS (`last_message`), changes the
cluster, and only then starts `gangsched binder`. Several binders on one NATS share the durable
work-queue consumer (scale-out).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import nats
from nats.js.api import ConsumerConfig, DeliverPolicy

from services.bus.embedded import find_binary
from services.contracts import codec, decisions, subjects
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey
from tests.support.waiting import eventually

PREFIX = "gangsched"
STOP_TIMEOUT_SECONDS = 20.0


class NatsServer:
    """A private nats-server with JetStream on a free loopback port (synchronous, for e2e)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self, port: int = -1) -> str:
        """Start the server (on `port`, else a free one: a restart passes the old one so its
        clients reconnect); return its URL once it accepts clients."""
        ports = self.data_dir / "ports"
        ports.mkdir(parents=True, exist_ok=True)
        binary = find_binary()
        with (self.data_dir / "nats-server.log").open("ab") as log:
            self.process = subprocess.Popen(
                [str(binary), "--jetstream", "--store_dir", str(self.data_dir / "jetstream"),
                 "--addr", "127.0.0.1", "--port", str(port), "--ports_file_dir", str(ports)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        ports_file = ports / f"{binary.name}_{self.process.pid}.ports"
        eventually(ports_file.exists, timeout=30, interval=0.05, what="nats-server ports file")
        self.url = str(eventually(lambda: json.loads(ports_file.read_text())["nats"][0],
                                  timeout=5, interval=0.05, what="nats-server URL"))
        return self.url

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        _terminate(self.process)


class ServiceProcess:
    """`gangsched <command>` (watcher, planner or binder) on a given NATS, logging to a file."""

    def __init__(self, command: str, kubeconfig: Path, data_dir: Path, nats_url: str,
                 *extra: str, key_file: Path | None = None) -> None:
        self.command = command
        self.key_file = key_file
        self.kubeconfig = kubeconfig
        self.data_dir = data_dir
        self.nats_url = nats_url
        self.extra = extra
        self.log_path = data_dir / f"{command}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, ready_timeout: float = 60.0) -> ServiceProcess:
        """Start the process and wait until it wrote `run.json` (every service ready)."""
        self.launch()
        return self.wait_ready(ready_timeout)

    def launch(self) -> ServiceProcess:
        """Start the process without waiting."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "run.json").unlink(missing_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "services.cli.main", self.command,
                 "--kubeconfig", str(self.kubeconfig), "--data-dir", str(self.data_dir),
                 "--nats", self.nats_url, "--prefix", PREFIX,
                 "--log-level", "DEBUG" if self.command == "binder" else "INFO",
                 *self.extra],
                stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1",
                     **({"GANGSCHED_DECISION_KEY_FILE": str(self.key_file)}
                        if self.key_file else {})})
        return self

    def wait_ready(self, ready_timeout: float = 60.0) -> ServiceProcess:
        """Wait until the process wrote `run.json` (every service ready)."""
        eventually(self._ready, timeout=ready_timeout, interval=0.1,
                   what=f"gangsched {self.command} ready")
        return self

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"gangsched {self.command} exited {self.process.returncode}:\n"
                               f"{self.log_tail()}")
        return (self.data_dir / "run.json").exists()

    def signal(self, sig: signal.Signals) -> None:
        """Send `sig` (e.g. SIGSTOP / SIGCONT) to the process."""
        assert self.process is not None
        self.process.send_signal(sig)

    def stop(self) -> int:
        """SIGTERM (after SIGCONT, in case it is stopped) and wait; the exit code."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
        return _terminate(self.process)

    def log_text(self) -> str:
        """The whole log."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 80) -> str:
        """The last `lines` lines of the log."""
        return "\n".join(self.log_text().splitlines()[-lines:])


class Services:
    """One NATS and the gangsched processes a test runs on it; `close` stops them all.

    `start` launches services together (watcher and planner usually) and waits for all;
    `binder` adds a binder (several may run: they share the work-queue consumer). Planner and
    binders share one decision key (`key_file`), as the chart's Secret gives them.
    """

    def __init__(self, kubeconfig: Path, data_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.data_dir = data_dir
        self.key_file = data_dir / "decision.key"
        self.nats = NatsServer(data_dir / "nats")
        self.processes: list[ServiceProcess] = []

    def start(self, *commands: str, extra: tuple[str, ...] = ()) -> list[ServiceProcess]:
        """Start `commands` (e.g. "watcher", "planner") with the admin kubeconfig; wait for all."""
        if not self.nats.url:
            self.nats.start()
        started = [self._launch(command, self.kubeconfig, extra) for command in commands]
        for process in started:
            process.wait_ready()
        return started

    def launch(self, command: str, *extra: str,
               kubeconfig: Path | None = None) -> ServiceProcess:
        """Start one service (as another identity: `kubeconfig`) without waiting for it."""
        if not self.nats.url:
            self.nats.start()
        return self._launch(command, kubeconfig or self.kubeconfig, extra)

    def binder(self, *extra: str, kubeconfig: Path | None = None) -> ServiceProcess:
        """Start one more binder (optionally with another identity) and wait until it is ready."""
        return self.binders(1, *extra, kubeconfig=kubeconfig)[0]

    def binders(self, count: int, *extra: str,
                kubeconfig: Path | None = None) -> list[ServiceProcess]:
        """Start `count` more binders together and wait until all are ready."""
        started = [self._launch("binder", kubeconfig or self.kubeconfig, extra)
                   for _ in range(count)]
        for process in started:
            process.wait_ready()
        return started

    def _launch(self, command: str, kubeconfig: Path, extra: tuple[str, ...]) -> ServiceProcess:
        index = len(self.processes)
        if not self.key_file.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.key_file.write_text(secrets.token_hex(32))
        process = ServiceProcess(command, kubeconfig, self.data_dir / f"{index}-{command}",
                                 self.nats.url, *extra, key_file=self.key_file)
        self.processes.append(process)
        return process.launch()

    def close(self) -> dict[str, int]:
        """Stop every process (binders first, NATS last); their exit codes by log name."""
        codes = {}
        for process in reversed(self.processes):
            codes[process.log_path.parent.name] = process.stop()
        self.nats.stop()
        return codes

    def logs(self, lines: int = 60) -> str:
        """The tail of every process log, for a failing test's output."""
        return "\n".join(f"----- {p.log_path} -----\n{p.log_tail(lines)}" for p in self.processes)


def _terminate(process: subprocess.Popen[bytes] | None) -> int:
    if process is None:
        return 0
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def decision_subject(decision_type: str, namespace: str, group: str) -> str:
    """The DECISIONS subject of one group's decisions of `decision_type` (e.g. Placement)."""
    return subjects.decisions_subject(PREFIX, decision_type, namespace, group)


def outcome_subject(namespace: str, group: str | None) -> str:
    """The EVENTS subject of one group's bind outcomes (every group's in `namespace`: None)."""
    if group is None:
        return f"{subjects.events_subject(PREFIX, 'outcome', namespace, 'x')[:-1]}*"
    return subjects.events_subject(PREFIX, "outcome", namespace, group)


def last_message(nats_url: str, stream: str, subject: str) -> dict[str, Any] | None:
    """The last message on `subject` of stream `EVENTS` or `DECISIONS`, decoded; None if none."""
    async def read() -> dict[str, Any] | None:
        nc = await nats.connect(nats_url)
        try:
            message = await nc.jetstream().get_last_msg(
                subjects.stream_name(PREFIX, stream), subject)
        except nats.js.errors.NotFoundError:
            return None
        finally:
            await nc.close()
        assert message.data is not None
        result: dict[str, Any] = json.loads(message.data)
        return result

    return asyncio.run(read())


def messages(nats_url: str, stream: str, subject: str) -> list[dict[str, Any]]:
    """Every message on `subject` (wildcards allowed) of stream `stream`, decoded, in order."""
    return [json.loads(data) for _, data in _stored(nats_url, subject, stream)]


def _stored(nats_url: str, subject: str, stream: str) -> list[tuple[dict[str, str], bytes]]:
    """Every message stored on `subject` (wildcards allowed) of stream `stream` (EVENTS,
    DECISIONS, DEADLETTER), as (headers, data), in order."""
    async def read() -> list[tuple[dict[str, str], bytes]]:
        nc = await nats.connect(nats_url)
        try:
            subscription = await nc.jetstream().pull_subscribe(
                subject, stream=subjects.stream_name(PREFIX, stream),
                config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL, inactive_threshold=30))
            found: list[tuple[dict[str, str], bytes]] = []
            while True:
                try:
                    batch = await subscription.fetch(256, timeout=0.5)
                except (nats.errors.TimeoutError, TimeoutError):
                    return found
                for message in batch:
                    found.append((dict(message.headers or {}), message.data))
                    await message.ack()
                if batch[-1].metadata.num_pending == 0:
                    return found
        finally:
            await nc.close()

    return asyncio.run(read())


def waiting_pulls(nats_url: str, consumer: str = "binder") -> int:
    """Pull requests waiting on the DECISIONS consumer `consumer` (0 while its binders sleep)."""
    async def read() -> int:
        nc = await nats.connect(nats_url)
        try:
            info = await nc.jetstream().consumer_info(
                subjects.stream_name(PREFIX, "DECISIONS"), consumer)
        finally:
            await nc.close()
        return int(info.num_waiting or 0)

    return asyncio.run(read())


def publish(nats_url: str, subject: str, data: bytes, headers: dict[str, str]) -> None:
    """Publish one message to JetStream as any NATS client could (a forger, in trust tests)."""
    async def send() -> None:
        nc = await nats.connect(nats_url)
        try:
            await nc.jetstream().publish(subject, data, headers=headers or None)
        finally:
            await nc.close()

    asyncio.run(send())


def publish_decision(nats_url: str, decision: decisions.Decision, key: DecisionKey | None) -> None:
    """Publish `decision` on its DECISIONS subject, signed with `key` (unsigned: None), as the
    planner, or a forger, would."""
    subject = decisions.decision_subject(PREFIX, decision)
    data = codec.encode(decision)
    publish(nats_url, subject, data, {SIGNATURE_HEADER: key.sign(subject, data)} if key else {})


def dead_letters(nats_url: str) -> list[tuple[dict[str, str], bytes]]:
    """Every dead letter (headers, payload) stored so far, in order."""
    return _stored(nats_url, subjects.dead_letter_subject(PREFIX), "DEADLETTER")
