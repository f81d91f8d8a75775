"""A NATS server that stays down is logged once and then every tenth retry, not every second."""

from __future__ import annotations

import asyncio
import logging

import pytest
from nats.aio.client import Client

from services.bus import connection
from services.runtime import unreachable


def test_the_same_connection_error_is_logged_once_then_with_its_count(
        caplog: pytest.LogCaptureFixture) -> None:
    callbacks = connection._Callbacks("gangsched-planner", Client())
    callbacks.connected = True  # a connection that was up, now retrying
    refused = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 1)")

    async def errors() -> None:
        for _ in range(25):
            await callbacks.on_error(refused)
        await callbacks.on_error(TimeoutError())
        await callbacks.on_reconnected()
        await callbacks.on_error(refused)

    with caplog.at_level(logging.WARNING, logger=connection.__name__):
        asyncio.run(errors())
    shown = "connection refused"  # in words, not the exception's repr
    assert [record.getMessage() for record in caplog.records] == [
        f"NATS client gangsched-planner: {shown}",
        f"NATS client gangsched-planner: {shown} (11 such errors in a row)",
        f"NATS client gangsched-planner: {shown} (21 such errors in a row)",
        "NATS client gangsched-planner: timed out",
        "NATS client gangsched-planner reconnected",  # as loud as the disconnect: a command
        # showing warnings only (`decisions --follow`) says it resumed
        f"NATS client gangsched-planner: {shown}",
    ]


def test_servers_failing_in_turn_with_their_own_addresses_count_as_one_kind(
        caplog: pytest.LogCaptureFixture) -> None:
    callbacks = connection._Callbacks("gangsched-binder", Client())
    callbacks.connected = True
    errors = [ConnectionRefusedError(111, f"Connect call failed ('10.0.0.{n % 3}', 4222)")
              for n in range(20)]

    async def fail() -> None:
        for error in errors:
            await callbacks.on_error(error)

    with caplog.at_level(logging.WARNING, logger=connection.__name__):
        asyncio.run(fail())
    assert [record.getMessage() for record in caplog.records] == [
        "NATS client gangsched-binder: connection refused",
        "NATS client gangsched-binder: connection refused (11 such errors in a row)",
    ]


def test_a_first_connection_that_fails_is_one_error_naming_its_cause(
        caplog: pytest.LogCaptureFixture) -> None:
    """Nothing is logged while the first connection is tried; the error raised names what the
    server did (refused the connection), not the timeout that ended the wait."""
    from services.bus.errors import BusUnavailable
    from services.config.settings import BusSettings

    async def connect() -> None:
        await connection.connect(BusSettings(url="nats://127.0.0.1:1"), name="gangsched-cli",
                                 first_connect_timeout_seconds=1.0)

    with caplog.at_level(logging.WARNING, logger=connection.__name__), \
            pytest.raises(BusUnavailable) as raised:
        asyncio.run(connect())
    assert caplog.records == []
    assert str(raised.value).endswith("unreachable for 1s: connection refused")


def test_waiting_for_a_first_connection_says_why_at_once_then_every_tenth_failure(
        caplog: pytest.LogCaptureFixture) -> None:
    callbacks = connection._Callbacks("gangsched-binder", Client(),
                                      waiting_for="nats://10.0.0.5:4222")
    refused = ConnectionRefusedError(111, "Connect call failed ('10.0.0.5', 4222)")

    waiting = "cannot reach NATS at nats://10.0.0.5:4222"
    assert logged(callbacks, [refused] * 21 + [TimeoutError()], caplog) == [
        f"{waiting}: connection refused; retrying every 1s",
        f"{waiting}: connection refused; retrying every 1s (11 such failures)",
        f"{waiting}: connection refused; retrying every 1s (21 such failures)",
        f"{waiting}: timed out; retrying every 1s",
    ]
    assert not callbacks.refused.is_set()


def test_refused_credentials_are_never_logged_as_an_unreachable_server(
        caplog: pytest.LogCaptureFixture) -> None:
    import nats.errors

    callbacks = connection._Callbacks("gangsched-binder", Client(),
                                      waiting_for="nats://nats:4222")
    with caplog.at_level(logging.WARNING, logger=connection.__name__):
        asyncio.run(callbacks.on_error(nats.errors.AuthorizationError()))
    assert caplog.records == []
    assert callbacks.refused.is_set()


def test_the_reason_a_connection_failed_is_in_words() -> None:
    import socket

    assert unreachable.reason(ConnectionRefusedError(111, "Connect call failed")) == \
        "connection refused"
    assert unreachable.reason(TimeoutError()) == "timed out"
    assert unreachable.reason(socket.gaierror(-2, "Name or service not known")) == \
        "name or service not known"


def test_servers_failing_each_in_its_own_way_are_not_logged_every_second(
        caplog: pytest.LogCaptureFixture) -> None:
    # a cluster's URLs while it starts: one refuses, one's name does not resolve yet; the
    # two kinds alternate, and each kind is still logged once, then every tenth time
    import socket

    callbacks = connection._Callbacks("gangsched-binder", Client(),
                                      waiting_for="nats://nats-0:4222,nats://nats-1:4222")
    refused = ConnectionRefusedError(111, "Connect call failed ('10.0.0.5', 4222)")
    unknown = socket.gaierror(-2, "Name or service not known")

    waiting = "cannot reach NATS at nats://nats-0:4222,nats://nats-1:4222"
    assert logged(callbacks, [refused, unknown] * 20, caplog) == [
        f"{waiting}: connection refused; retrying every 1s",
        f"{waiting}: name or service not known; retrying every 1s",
        f"{waiting}: connection refused; retrying every 1s (11 such failures)",
        f"{waiting}: name or service not known; retrying every 1s (11 such failures)",
    ]


def logged(callbacks: connection._Callbacks, failures: list[Exception],
           caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warnings `callbacks` log for `failures`, met in that order."""
    async def fail() -> None:
        for failure in failures:
            await callbacks.on_error(failure)

    with caplog.at_level(logging.WARNING, logger=connection.__name__):
        asyncio.run(fail())
    return [record.getMessage() for record in caplog.records]
