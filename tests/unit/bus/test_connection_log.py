"""A NATS server that stays down is logged once and then every tenth retry, not every second."""

from __future__ import annotations

import asyncio
import logging

import pytest
from nats.aio.client import Client

from services.bus import connection


def test_the_same_connection_error_is_logged_once_then_with_its_count(
        caplog: pytest.LogCaptureFixture) -> None:
    callbacks = connection._Callbacks("gangsched-planner", Client())
    refused = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 1)")

    async def errors() -> None:
        for _ in range(25):
            await callbacks.on_error(refused)
        await callbacks.on_error(TimeoutError())
        await callbacks.on_reconnected()
        await callbacks.on_error(refused)

    with caplog.at_level(logging.WARNING, logger=connection.__name__):
        asyncio.run(errors())
    shown = repr(refused)
    assert [record.getMessage() for record in caplog.records] == [
        f"NATS client gangsched-planner: {shown}",
        f"NATS client gangsched-planner: {shown} (11 times in a row)",
        f"NATS client gangsched-planner: {shown} (21 times in a row)",
        "NATS client gangsched-planner: TimeoutError()",
        f"NATS client gangsched-planner: {shown}",
    ]
