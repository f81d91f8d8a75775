"""The watcher is not ready while its EVENTS stream is gone (its publishes back off), /readyz
naming the stream, and ready again once a publish is stored: a real nats-server, and a real
loopback HTTP server standing in for the API server."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import aiohttp
import pytest
from nats.aio.client import Client

from services.bus import streams
from services.config.settings import BusSettings, KubeSettings, Settings, WatcherSettings
from services.contracts import subjects
from services.runtime.health import HealthServer, Readiness
from services.watcher.service import run_watcher
from tests.support.waiting import eventually_async
from tests.unit.watcher.test_api_server_readiness import KUBECONFIG, ApiServer

pytestmark = pytest.mark.integration


@pytest.mark.timeout(90)
async def test_the_watcher_is_not_ready_while_its_events_stream_is_gone(
        tmp_path: Path, nc: Client, bus_settings: BusSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)  # loopback requests go straight to the server
    api = ApiServer()
    await api.start()
    (tmp_path / "kubeconfig").write_text(KUBECONFIG.format(port=api.port))
    settings = Settings(bus=bus_settings, kube=KubeSettings(kubeconfig=tmp_path / "kubeconfig"),
                        watcher=WatcherSettings(tick_seconds=0.2))  # ticks: steady publishes
    readiness = Readiness()
    health = HealthServer(readiness)
    url = f"http://127.0.0.1:{await health.start()}/readyz"
    watcher = asyncio.create_task(run_watcher(settings, nc, readiness.flag("watcher")))
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    try:
        async with aiohttp.ClientSession() as session:
            async def answers(expected: tuple[int, str]) -> bool:
                async with session.get(url) as response:
                    return (response.status, await response.text()) == expected

            await eventually_async(lambda: answers((200, "ready\n")), timeout=20,
                                   interval=0.05, what="ready after the first lists")
            await nc.jetstream().delete_stream(stream)
            await eventually_async(
                lambda: answers((503, f"not ready: watcher (publishing: stream {stream} "
                                      "gone or leaderless)\n")),
                timeout=10, interval=0.05, what="not ready, naming the stream")
            await streams.ensure_streams(nc.jetstream(), bus_settings)
            await eventually_async(lambda: answers((200, "ready\n")), timeout=15,
                                   interval=0.05, what="ready again once a publish is stored")
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        await health.stop()
        await api.stop()
