"""`gangsched run` as four processes: this one, and watcher, planner and binder apart.

Layer: cli (top). The services are CPU-bound Python: in one process they share one core
(one GIL), in three the planner plans while the binder binds. This process keeps everything a
user sees of `gangsched run`: it owns the data directory (lock, embedded nats-server and its
credentials, the SQLite file, migrated here before any service starts, the decision key),
checks the Kubernetes credentials, the schema and NATS (waited for, not ready meanwhile)
before any child starts, serves /healthz, /readyz (ready when every child is) and /metrics
(its own, with each child's merged in: `services.runtime.metrics_merge`) on
`--http-host:--http-port`, writes run.json once every child is ready, and on SIGTERM stops the
children, then the nats-server, and exits 0.

Each child is `python -m services.cli.child` (`services.cli.child`), handed its service and
resolved settings on a pipe, supervised by `services.runtime.process_supervision`: one that
exits is restarted with backoff; one that cannot start (exits repeatedly before it is ready)
ends the run with one line and a non-zero exit. None outlives this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import pickle
import site
import sys
from pathlib import Path

import aiohttp
from prometheus_client import generate_latest

import services
from services.bus import connection
from services.cli import serve
from services.cli.child import ChildPayload
from services.config.settings import Settings, StoreSettings
from services.planner.core.config import PlannerConfig
from services.runtime import metrics, metrics_merge
from services.runtime.cancellation import cancel_and_wait
from services.runtime.health import Readiness
from services.runtime.process_supervision import ChildSpec, ProcessSupervisor

log = logging.getLogger(__name__)

CHILD_MODULE = "services.cli.child"
SCRAPE_TIMEOUT_SECONDS = 5.0
"""How long one /metrics answer waits for a child's; a child that does not answer in time
(busy planning) contributes its previous answer."""


async def serve_in_processes(settings: Settings, planner: PlannerConfig) -> None:
    """Run watcher, planner and binder each in a child process until cancelled.

    Raises:
        services.store.errors.SchemaMismatch, services.store.errors.StoreUnavailable,
        services.bus.errors.BusUnavailable, services.kube.errors.KubeError,
        services.runtime.health.PortUnavailable: as `serve.serve`; nothing is started.
        services.runtime.process_supervision.ChildFailed: a child could not start.
    """
    await serve.check_kube_credentials(settings)
    async with contextlib.AsyncExitStack() as stack:
        settings = await stack.enter_async_context(serve.bus_url(settings))
        async with serve.checked_store(settings):
            pass  # migrated (the embedded SQLite) and checked before any child opens it
        children = _Children(serve.SERVICES)
        stack.push_async_callback(children.close)
        connected = children.readiness.flag(serve.NATS_FLAG)  # /readyz names it until set
        health = await serve.health_server(settings, children.readiness, children.metrics)
        if health is not None:
            stack.push_async_callback(health.stop)
        await _check_bus(settings)
        connected.set()
        supervisor = ProcessSupervisor(children.on_message, children.on_exit)
        stack.push_async_callback(supervisor.stop)
        for name in serve.SERVICES:
            supervisor.start(_spec(name, _child_settings(settings), planner))
        announcing = asyncio.create_task(
            serve.announce_when_ready(settings, children.readiness, health, serve.SERVICES))
        try:
            await supervisor.wait()
        finally:
            await cancel_and_wait(announcing)


async def _check_bus(settings: Settings) -> None:
    """Wait until NATS can be reached (saying so at once when it cannot: `connection.connect`),
    before any child starts; fail at once when it refuses the credentials (the children
    would restart forever)."""
    nc = await connection.connect(settings.bus, name="gangsched-run",
                                  first_connect_timeout_seconds=None)
    await connection.close(nc)


def _child_settings(settings: Settings) -> Settings:
    """A child's settings: the resolved NATS URL and credentials, the database URL spelt out
    (never migrated by a child), /metrics on a free loopback port (none when disabled)."""
    return dataclasses.replace(
        settings, http_host="127.0.0.1", http_port=0 if settings.http_port >= 0 else -1,
        store=StoreSettings(url=settings.store_url()))


def _spec(name: str, settings: Settings, planner: PlannerConfig) -> ChildSpec:
    return ChildSpec(
        name=name, argv=(sys.executable, "-m", CHILD_MODULE, name),
        payload=pickle.dumps(ChildPayload(name, settings, planner)), env=_child_env())


def _child_env() -> dict[str, str]:
    """This environment, with the directory `services` was imported from first on
    PYTHONPATH unless it is an installation's site-packages (the child imports the same code
    wherever `run` was started from, e.g. a source tree run with `python -m`)."""
    package_root = str(Path(services.__file__).resolve().parent.parent)
    installed = {str(Path(p).resolve()) for p in site.getsitepackages()}
    if package_root in installed:
        return dict(os.environ)
    path = os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH"))))
    return {**os.environ, "PYTHONPATH": path}


class _Children:
    """What the children told: readiness flags and /metrics ports; merges their metrics."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.readiness = Readiness()
        for name in names:
            self.readiness.flag(name)
        self._ports: dict[str, int] = {}
        self._last: dict[str, str] = {}
        self._session: aiohttp.ClientSession | None = None

    def on_message(self, name: str, message: dict[str, object]) -> None:
        """A child's message: `{"http_port": n}` or `{"ready": bool, "holds": [reasons],
        ...}`; the child's flag here is held down by its holds, so /readyz says why as the
        child's own does (`not ready: planner (NATS disconnected)`)."""
        port = message.get("http_port")
        if isinstance(port, int):
            self._ports[name] = port
        if "ready" in message:
            flag = self.readiness.flag(name)
            held = message.get("holds")
            holds = [str(hold) for hold in held] if isinstance(held, list) else []
            if flag.is_ready and message["ready"] is not True:
                log.warning("%s process no longer ready: %s", name,
                            "; ".join(holds) or message.get("not_ready"))
            flag.hold_only(holds)
            flag.set(message["ready"] is True)

    def on_exit(self, name: str) -> None:
        """A child exited: not ready (held by nothing it said before), and no metrics until
        its next start reports."""
        self.readiness.flag(name).set(False)
        self.readiness.flag(name).hold_only(())
        self._ports.pop(name, None)
        self._last.pop(name, None)

    async def metrics(self) -> bytes:
        """This process's metrics with every running child's merged in."""
        await asyncio.gather(*(self._scrape(name, port) for name, port in self._ports.items()))
        own = generate_latest(metrics.REGISTRY).decode()
        return metrics_merge.merge(own, dict(self._last))

    async def close(self) -> None:
        """Close the HTTP client of the scrapes."""
        if self._session is not None:
            await self._session.close()

    async def _scrape(self, name: str, port: int) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=SCRAPE_TIMEOUT_SECONDS))
        try:
            async with self._session.get(f"http://127.0.0.1:{port}/metrics") as response:
                text = await response.text()
        except (aiohttp.ClientError, TimeoutError) as error:
            log.debug("%s process's /metrics did not answer: %r", name, error)
            return
        if self._ports.get(name) == port:  # not a child gone meanwhile
            self._last[name] = text
