"""`connection.connect` waiting for NATS ends when cancelled once, even when nats-py loses
that cancellation: on Python 3.11 `asyncio.wait_for` inside its connect attempt can return the
attempt's own error (here connection refused) as the cancellation arrives (CPython gh-86296),
and nats-py then retries forever. A SIGTERM cancels a service's main task once, so a lost
cancellation kept `gangsched run` waiting for a NATS that would not come."""

from __future__ import annotations

import asyncio

import pytest
from nats.aio import transport

from services.bus import connection
from services.config.settings import BusSettings


async def test_a_connect_cancelled_once_ends_although_nats_py_loses_the_cancellation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    lost: list[bool] = []

    async def refused(self: object, *args: object, **kwargs: object) -> None:
        try:
            await asyncio.sleep(0.3)
        except asyncio.CancelledError:
            if lost:
                raise
            lost.append(True)  # the first cancellation turns into the attempt's error
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(transport.TcpTransport, "connect", refused)
    waiting = asyncio.create_task(connection.connect(
        BusSettings(url="nats://127.0.0.1:4"), name="t", first_connect_timeout_seconds=None))
    await asyncio.sleep(0.1)
    waiting.cancel()
    done, _ = await asyncio.wait({waiting}, timeout=5)
    assert lost == [True]  # the cancellation was lost once, as on Python 3.11
    assert done == {waiting} and waiting.cancelled()
