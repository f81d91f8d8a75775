"""`gangsched run`'s /readyz says why a child is not ready, as the child's own /readyz does:
the child reports what holds its readiness down (`services.cli.child`), and the parent holds
that child's flag down with the same reasons (`services.cli.run_processes`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from services.cli import child
from services.cli.run_processes import _Children
from services.cli.serve import NATS_FLAG, SERVICES, waiting_readiness
from services.config.settings import Settings
from services.runtime.cancellation import cancel_and_wait
from services.runtime.health import HealthServer, Readiness


class Pipe:
    """The child's channel to the parent, as JSON lines: each message is handed to the
    parent's `on_message` as it would arrive, and queued for the test to await."""

    def __init__(self, parent: _Children, name: str) -> None:
        self._parent, self._name = parent, name
        self.sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def send(self, message: dict[str, Any]) -> None:
        arrived = json.loads(json.dumps(message))
        self._parent.on_message(self._name, arrived)
        self.sent.put_nowait(arrived)


@pytest.fixture
async def parent() -> AsyncIterator[tuple[_Children, str]]:
    """The parent's children record, its /readyz on a loopback port (the address), and every
    child but the planner ready."""
    children = _Children(SERVICES)
    for name in SERVICES:
        if name != "planner":
            children.on_message(name, {"ready": True, "not_ready": [], "holds": []})
    server = HealthServer(children.readiness, port=0)
    port = await server.start()
    yield children, f"http://127.0.0.1:{port}/readyz"
    await server.stop()


async def readyz(address: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(address) as response:
        return response.status, await response.text()


async def test_the_parent_says_why_a_child_is_not_ready_as_the_child_does(
        parent: tuple[_Children, str]) -> None:
    children, address = parent
    readiness = Readiness()
    connected, planner = readiness.flag(NATS_FLAG), readiness.flag("planner")
    connected.set()
    planner.set()
    planner.hold("NATS disconnected")
    pipe = Pipe(children, "planner")
    reporting = asyncio.ensure_future(
        child._reporter(pipe)(Settings(), readiness, None, ("planner",)))
    try:
        assert await pipe.sent.get() == {"http_port": None}
        assert await pipe.sent.get() == {"ready": False, "not_ready": ["planner"],
                                         "holds": ["NATS disconnected"]}
        assert await readyz(address) == (503, "not ready: planner (NATS disconnected)\n")
        assert readiness.described() == ["planner (NATS disconnected)"]  # the child's own

        planner.release("NATS disconnected")
        planner.hold("cannot reach the database sqlite:///x.db")  # still not ready, new reason
        assert await pipe.sent.get() == {
            "ready": False, "not_ready": ["planner"],
            "holds": ["cannot reach the database sqlite:///x.db"]}
        assert await readyz(address) == (
            503, "not ready: planner (cannot reach the database sqlite:///x.db)\n")

        planner.release("cannot reach the database sqlite:///x.db")
        assert await pipe.sent.get() == {"ready": True, "not_ready": [], "holds": []}
        assert await readyz(address) == (200, "ready\n")
    finally:
        await cancel_and_wait(reporting)


async def test_a_child_that_exits_is_not_ready_without_the_reasons_it_gave(
        parent: tuple[_Children, str]) -> None:
    children, address = parent
    children.on_message("planner", {"ready": False, "not_ready": ["planner"],
                                    "holds": ["NATS disconnected"]})
    children.on_exit("planner")
    assert await readyz(address) == (503, "not ready: planner\n")


async def test_a_child_not_ready_without_a_hold_is_named_alone(
        parent: tuple[_Children, str]) -> None:
    """A child connected to NATS whose service is not ready yet (a planner catching up):
    nothing holds it, so nothing is said but its name. (A child still waiting for NATS is
    no such case: its services are held down, `serve.waiting_readiness`.)"""
    children, address = parent
    children.on_message("planner", {"ready": False, "not_ready": ["planner"], "holds": []})
    assert await readyz(address) == (503, "not ready: planner\n")


async def test_a_child_restarted_while_nats_is_down_is_named_with_why_by_the_parent(
        parent: tuple[_Children, str]) -> None:
    """The planner child was ready, lost NATS and exited; the parent restarts it while NATS
    is still down: the new child, waiting for its connection, reports its service held down
    for it, and the parent says so (not a bare `not ready: planner`)."""
    children, address = parent
    children.on_message("planner", {"ready": False, "not_ready": ["planner"],
                                    "holds": ["NATS disconnected"]})
    children.on_exit("planner")
    readiness = waiting_readiness(("planner",))  # as `serve.serve` makes it
    own = HealthServer(readiness, port=0)
    own_port = await own.start()
    pipe = Pipe(children, "planner")
    reporting = asyncio.ensure_future(
        child._reporter(pipe)(Settings(), readiness, None, ("planner",)))
    try:
        assert await pipe.sent.get() == {"http_port": None}
        assert await pipe.sent.get() == {"ready": False, "not_ready": ["nats", "planner"],
                                         "holds": ["NATS disconnected"]}
        assert await readyz(f"http://127.0.0.1:{own_port}/readyz") == (
            503, "not ready: nats, planner (NATS disconnected)\n")
        assert await readyz(address) == (503, "not ready: planner (NATS disconnected)\n")
    finally:
        await cancel_and_wait(reporting)
        await own.stop()
