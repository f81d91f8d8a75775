"""The watcher's readiness follows its list/watches: a real loopback HTTP server standing in for
the API server is stopped and started again while /readyz is asked."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from services.config.settings import KubeSettings, Settings, WatcherSettings
from services.kube import client, listwatch
from services.kube.resources import NODES, PODS, STORAGECLASSES
from services.runtime.health import HealthServer, Readiness
from services.watcher.service import Watcher
from tests.support.waiting import eventually_async

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t0ken}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""


class ApiServer:
    """Lists are empty; the first watch of each resource expires (410), later ones end after
    `WATCH_SECONDS` (as a watch's timeout ends it); stoppable and startable on one port."""

    WATCH_SECONDS = 1.2

    def __init__(self) -> None:
        self.port = 0
        self.expired: set[str] = set()
        self._runner: web.AppRunner | None = None
        self._stopped = asyncio.Event()
        self._watches: set[asyncio.Task[object]] = set()

    async def start(self) -> None:
        self._stopped.clear()
        app = web.Application()
        app.router.add_get("/{path:.*}", self._get)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        """Close every connection at once (watches break off), then end their handlers."""
        assert self._runner is not None
        await self._runner.cleanup()
        self._stopped.set()
        await asyncio.gather(*self._watches, return_exceptions=True)  # some were cancelled

    async def _get(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            return web.json_response({"metadata": {"resourceVersion": "10"}, "items": []})
        response = web.StreamResponse()
        await response.prepare(request)
        if request.path not in self.expired:
            self.expired.add(request.path)
            await response.write(b'{"type": "ERROR", "object": {"kind": "Status", '
                                 b'"code": 410, "reason": "Expired"}}\n')
        else:
            task = asyncio.current_task()
            assert task is not None
            self._watches.add(task)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopped.wait(), self.WATCH_SECONDS)
            finally:
                self._watches.discard(task)
        return response


class Publisher:
    async def publish_many(self, items: Sequence[tuple[str, bytes, str]]) -> None:
        return None


@contextlib.asynccontextmanager
async def watching(tmp_path: Path, api: ApiServer) -> AsyncIterator[str]:
    """A watcher of nodes, pods and storage classes on `api`; yields its /readyz URL."""
    (tmp_path / "kubeconfig").write_text(KUBECONFIG.format(port=api.port))
    kube = await client.connect(KubeSettings(kubeconfig=tmp_path / "kubeconfig"))
    readiness = Readiness()
    health = HealthServer(readiness)
    port = await health.start()
    watcher = Watcher(kube, Publisher(), Settings(watcher=WatcherSettings(tick_seconds=60)),
                      resources=(NODES, PODS, STORAGECLASSES))
    task = asyncio.create_task(watcher.run(readiness.flag("watcher")))
    try:
        yield f"http://127.0.0.1:{port}/readyz"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await health.stop()
        await kube.close()


async def readyz(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as response:
        return response.status, await response.text()


@pytest.mark.timeout(60)
async def test_readyz_turns_503_while_the_api_server_is_down_and_200_once_it_is_back(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)  # loopback requests go straight to the server
    caplog.set_level(logging.INFO)
    api = ApiServer()
    await api.start()
    async with watching(tmp_path, api) as url, aiohttp.ClientSession() as session:
        async def answers(expected: tuple[int, str]) -> bool:
            return await readyz(session, url) == expected

        await eventually_async(lambda: answers((200, "ready\n")), timeout=10, interval=0.05,
                               what="ready after the first lists")
        # watches expiring (410) and ending at their timeout never make it unready
        steady_until = time.monotonic() + 2 * ApiServer.WATCH_SECONDS
        while time.monotonic() < steady_until:
            assert await readyz(session, url) == (200, "ready\n")
            await asyncio.sleep(0.05)
        assert api.expired == {NODES.list_path, PODS.list_path, STORAGECLASSES.list_path}

        await api.stop()
        stopped = time.monotonic()
        refusing = (f"not ready: watcher (cannot reach the API server at "
                    f"http://127.0.0.1:{api.port}: connection refused)\n")
        await eventually_async(lambda: answers((503, refusing)), timeout=15,
                               interval=0.05, what="not ready once the API server is down")
        took = time.monotonic() - stopped
        assert listwatch.UNREADY_AFTER_SECONDS <= took < listwatch.UNREADY_AFTER_SECONDS + 3

        await api.start()
        try:
            await eventually_async(lambda: answers((200, "ready\n")), timeout=15,
                                   interval=0.05, what="ready again once the API server is back")
        except BaseException:
            await api.stop()
            raise
    await api.stop()  # after the watcher, which would log its going away

    messages = [record.getMessage() for record in caplog.records]
    server = f"http://127.0.0.1:{api.port}"
    refused = f"cannot reach the API server at {server}: connection refused; retrying in "
    # once, then again after ten more failures of the kind: that comes when the restart is
    # late (three resources retrying at 0.5, 1.5, 3.5, 7.5 s after a first "broke off" each)
    told = [message for message in messages if message.startswith(refused)]
    assert len(told) in (1, 2), told
    assert told[1:] == [] or told[1].endswith(" (11 such failures)"), told
    assert not [message for message in messages if "list/watch failed" in message]
    assert messages.count(
        "watcher not ready: list/watch of nodes, pods, storageclasses failing for 4s or "
        "longer") == 1
    assert messages.count("watcher ready again: every list/watch reaches the API server") == 1
    assert messages.count(f"the API server at {server} answers again") == 1


@pytest.mark.timeout(60)
async def test_readyz_says_why_from_the_start_when_the_api_server_was_never_reached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It said only `not ready: watcher` for as long as the API server could not be reached,
    where the binder beside it named the reason."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    api = ApiServer()
    await api.start()
    await api.stop()  # its port, where nobody listens until it starts again
    async with watching(tmp_path, api) as url, aiohttp.ClientSession() as session:
        async def answers(expected: tuple[int, str]) -> bool:
            return await readyz(session, url) == expected

        started = time.monotonic()
        await eventually_async(lambda: answers((503, (
            f"not ready: watcher (cannot reach the API server at http://127.0.0.1:{api.port}: "
            "connection refused)\n"))), timeout=10, interval=0.05, what="/readyz naming it")
        assert time.monotonic() - started < listwatch.UNREADY_AFTER_SECONDS  # no grace: it
        # was never ready
        await api.start()
        try:
            await eventually_async(lambda: answers((200, "ready\n")), timeout=15,
                                   interval=0.05, what="ready once the API server answers")
        finally:
            await api.stop()
