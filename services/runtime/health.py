"""HTTP endpoints of every service: `/healthz` (alive), `/readyz` (ready), `/metrics`.

Layer: runtime. Serves with aiohttp; readiness comes from named flags that services set.
Never exposes anything but these three read-only endpoints.
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from services.runtime import metrics

log = logging.getLogger(__name__)


class ReadyFlag:
    """One service's readiness: false until the service says it is ready, and while anything
    holds it down.

    A hold names a condition of the service's surroundings that stops its work whatever the
    service itself says (its NATS connection down, a stream it consumes gone): the connection
    or consumer that sees the condition holds the flag and releases it when the condition
    ends, independently of `set`, so neither undoes the other.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._is_set = False
        self._holds: set[str] = set()

    @property
    def is_ready(self) -> bool:
        """Set, and held by nothing."""
        return self._is_set and not self._holds

    @property
    def holds(self) -> list[str]:
        """The reasons holding the flag down, sorted (empty when nothing holds it)."""
        return sorted(self._holds)

    def set(self, is_ready: bool = True) -> None:
        """Mark the service ready (or, with False, not ready)."""
        self._is_set = is_ready

    def hold(self, reason: str) -> None:
        """Hold the flag down (not ready) for `reason` until `release(reason)`; idempotent."""
        self._holds.add(reason)

    def release(self, reason: str) -> None:
        """End the hold for `reason`; idempotent."""
        self._holds.discard(reason)

    def hold_only(self, reasons: Iterable[str]) -> None:
        """Be held down for exactly `reasons` (none: held by nothing), releasing any other:
        for a flag that mirrors another process's (a `gangsched run` child's, in its parent)."""
        self._holds = set(reasons)


class Readiness:
    """The process is ready when every flag it handed out is set."""

    def __init__(self) -> None:
        self._flags: dict[str, ReadyFlag] = {}

    def flag(self, name: str) -> ReadyFlag:
        """The flag of service `name` (created unset on first use)."""
        return self._flags.setdefault(name, ReadyFlag(name))

    def not_ready(self) -> list[str]:
        """Names of the flags not ready (not set, or held), sorted."""
        return sorted(name for name, flag in self._flags.items() if not flag.is_ready)

    def holds(self) -> list[str]:
        """The reasons holding down the flags not ready, sorted, each once (what `described`
        shows in brackets): `["NATS disconnected"]`."""
        return sorted({hold for flag in self._flags.values() for hold in flag.holds})

    def described(self) -> list[str]:
        """`not_ready`, each held flag followed by its holds: `planner (NATS disconnected)`."""
        shown = []
        for name in self.not_ready():
            holds = self._flags[name].holds
            shown.append(f"{name} ({'; '.join(holds)})" if holds else name)
        return shown


class PortUnavailable(Exception):
    """The health endpoints' address cannot be bound (in use, not permitted)."""


HOST_ERRORS = frozenset({errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT})
"""Bind errors of the address itself (not of this machine; of a family it lacks)."""


def unbindable_hint(error: OSError) -> str:
    """What to change when the health endpoints cannot be bound: the host when the address
    is the problem (not this machine's, a name that does not resolve), else the port (in
    use, or below 1024 without the privilege)."""
    if isinstance(error, socket.gaierror) or error.errno in HOST_ERRORS:
        return "give another --http-host (an address of this machine, e.g. 127.0.0.1 or 0.0.0.0)"
    return "give another --http-port (-1: none)"


MetricsBody = Callable[[], Awaitable[bytes]]
"""Makes the body of one `/metrics` answer (Prometheus text), e.g. merged from several
processes (`services.runtime.metrics_merge`)."""


class HealthServer:
    """The aiohttp server for `/healthz`, `/readyz` and `/metrics`.

    `/metrics` serves `registry`, or what `metrics_body` makes when it is given.
    """

    def __init__(
        self,
        readiness: Readiness,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        registry: CollectorRegistry = metrics.REGISTRY,
        metrics_body: MetricsBody | None = None,
    ) -> None:
        self.readiness = readiness
        self.host = host
        self.port = port
        self._registry = registry
        self._metrics_body = metrics_body
        self._runner: web.AppRunner | None = None

    async def start(self) -> int:
        """Listen on `host:port` (0 = a free port); return the port actually bound.

        Raises:
            PortUnavailable: the address is in use or cannot be bound (the message says which).
        """
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError as error:
            await self._runner.cleanup()
            self._runner = None
            raise PortUnavailable(
                f"cannot serve /healthz, /readyz and /metrics on {self.host}:{self.port}: "
                f"{error.strerror or error}; {unbindable_hint(error)}") from None
        self.port = int(self._runner.addresses[0][1])
        return self.port

    async def stop(self) -> None:
        """Stop serving; idempotent."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, request: web.Request) -> web.Response:
        """Alive: the event loop answers."""
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        """Ready when every flag is set and held by nothing; else 503 naming the services not
        ready, with what holds them: `not ready: planner (NATS disconnected)`."""
        waiting = self.readiness.described()
        if waiting:
            return web.Response(status=503, text=f"not ready: {', '.join(waiting)}\n")
        return web.Response(text="ready\n")

    async def _metrics(self, request: web.Request) -> web.Response:
        """The Prometheus text exposition of the registry (or of `metrics_body`)."""
        body = await self._metrics_body() if self._metrics_body is not None \
            else generate_latest(self._registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
