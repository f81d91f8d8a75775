"""Requests beyond the client's slots wait for one before their timeout starts: a burst larger
than the connection pool against a slow API server finishes without a timeout, never with more
requests in flight than `REQUEST_SLOTS`.

The far end is a loopback aiohttp server that answers each request after `DELAY_SECONDS`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from services.config.settings import KubeSettings
from services.kube import client
from tests.support.kubeconfigs import TOKEN_KUBECONFIG as KUBECONFIG

DELAY_SECONDS = 0.05
TIMEOUT_SECONDS = 1.0
BURST = 200
"""200 requests through 6 connections take 34 rounds of the delay (1.7 s): queued in the pool,
the last ones would outlast their 1 s timeout; each has 20 times its delay to spare once it
holds a slot."""



class SlowServer:
    """Answers every GET with `{}` after DELAY_SECONDS; counts requests in flight."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most_in_flight = 0
        self.answered = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(DELAY_SECONDS)
        finally:
            self.in_flight -= 1
        self.answered += 1
        return web.json_response({})


@pytest.fixture
async def slow_server() -> AsyncIterator[tuple[SlowServer, int]]:
    server = SlowServer()
    app = web.Application()
    app.router.add_get("/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield server, port
    finally:
        await runner.cleanup()


async def test_a_burst_beyond_the_pool_waits_for_slots_and_none_times_out(
        slow_server: tuple[SlowServer, int], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, port = slow_server
    monkeypatch.setattr(client, "POOL_SIZE", 6)
    monkeypatch.setattr(client, "REQUEST_SLOTS", 4)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.format(server=f"http://127.0.0.1:{port}"))
    kube = await client.connect(KubeSettings(kubeconfig=kubeconfig,
                                             request_timeout_seconds=TIMEOUT_SECONDS))
    try:
        answers = await asyncio.gather(*(kube.request("GET", f"/api/v1/nodes/n{i}")
                                         for i in range(BURST)))
    finally:
        await kube.close()
    assert answers == [{}] * BURST
    assert server.answered == BURST
    assert server.most_in_flight == 4
