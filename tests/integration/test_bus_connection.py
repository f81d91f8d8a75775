"""`connection.close` (drain and close) on a real nats-server: a cancellation arriving at any
point of it ends the caller, although nats-py's `drain` and `flush` swallow one. Before,
`gangsched run` signalled while it checked NATS went on to start its services and never
stopped (the parent hung on SIGTERM until killed)."""

from __future__ import annotations

import asyncio

import pytest

from services.bus import connection
from services.config.settings import BusSettings

pytestmark = pytest.mark.integration

STEPS = 12
"""Loop iterations to let the close run before it is cancelled: 1 is as nats-py's drain
starts; the subscription drain, the flush and the close follow within a few. (At 0 the task
would be cancelled before it ever ran: asyncio never starts its body, a test artifact: `close`
is awaited, not spawned.)"""


async def _connected_with_a_subscription(bus_settings: BusSettings) -> connection.Connection:
    client = await connection.connect(bus_settings, name="test-close")
    await client.subscribe(f"{bus_settings.prefix}.close", cb=_ignore)
    return client


async def _ignore(_message: object) -> None:
    return None


@pytest.mark.parametrize("steps", range(1, STEPS))
async def test_a_close_cancelled_at_any_point_ends_cancelled_with_the_client_closed(
        bus_settings: BusSettings, steps: int) -> None:
    client = await _connected_with_a_subscription(bus_settings)
    closing = asyncio.create_task(connection.close(client))
    for _ in range(steps):
        await asyncio.sleep(0)
    if closing.done():  # closed before the cancellation could arrive: nothing to cut short
        await closing
    else:
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
    await asyncio.wait_for(_closed(client), 10)


async def _closed(client: connection.Connection) -> None:
    """Wait until nats-py says `client` is closed (its drain closes it in the background
    once the cancellation cut our wait short)."""
    while not client.is_closed:
        await asyncio.sleep(0.01)


async def test_a_client_already_closed_is_closed_again_without_an_error(
        bus_settings: BusSettings) -> None:
    client = await _connected_with_a_subscription(bus_settings)
    await client.close()
    await connection.close(client)
    assert client.is_closed


async def test_a_close_not_cancelled_returns_with_the_client_closed(
        bus_settings: BusSettings) -> None:
    client = await _connected_with_a_subscription(bus_settings)
    await connection.close(client)
    assert client.is_closed
