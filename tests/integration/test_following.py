"""`gangsched decisions --follow` of a `gangsched run` ends, with the reason, once that run
stops or restarts elsewhere, instead of retrying a server that is gone (a new user found it
retrying the old port for minutes)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from nats.js import JetStreamContext

from services.bus.embedded import EmbeddedNats
from services.bus.errors import BusUnavailable, NotFound
from services.cli import following
from services.config.settings import BusSettings
from services.runtime.cancellation import cancel_and_wait
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration


async def test_following_ends_with_the_reason_once_the_run_it_follows_is_gone(
        js: JetStreamContext, bus_settings: BusSettings) -> None:
    reasons: list[str | None] = [None, None, "the gangsched run in d stopped or restarted"]
    asked: list[str | None] = []

    def gone() -> str | None:
        asked.append(reasons.pop(0) if len(reasons) > 1 else reasons[0])
        return asked[-1]

    with pytest.raises(BusUnavailable, match="the gangsched run in d stopped or restarted"):
        await asyncio.wait_for(following.print_decisions(
            bus_settings, None, follow=True, output="json", gone=gone), timeout=30)
    assert asked == [None, None, "the gangsched run in d stopped or restarted"]  # then it ended


async def test_following_says_it_follows_once_reading_began_and_never_when_it_cannot(
        js: JetStreamContext, bus_settings: BusSettings) -> None:
    """The banner of `decisions --follow` comes once NATS is reached and its DECISIONS stream
    found: before, a NATS or stream that is not there was told after it, in a second line."""
    said: list[str] = []
    reading = asyncio.ensure_future(following.print_decisions(
        bus_settings, None, follow=True, output="json", started=lambda: said.append("following")))
    try:
        await eventually_async(lambda: _said(said), timeout=10, what="following begun")
    finally:
        await cancel_and_wait(reading)
    elsewhere = dataclasses.replace(bus_settings, prefix=f"{bus_settings.prefix}x")
    with pytest.raises(NotFound):
        await following.print_decisions(elsewhere, None, follow=True, output="json",
                                        started=lambda: said.append("again"))
    assert said == ["following"]


async def _said(said: list[str]) -> bool:
    return bool(said)


async def test_ctrl_c_while_the_nats_it_follows_is_down_stops_it_as_a_ctrl_c(
        js: JetStreamContext, bus_settings: BusSettings, nats_server: EmbeddedNats) -> None:
    """Ctrl-C (the task cancelled, as `asyncio.run` does) after the server went away: closing
    the lost connection raised `ConnectionResetError`, which took the place of the
    cancellation, so `decisions --follow` said `cannot read the database` and exited 1."""
    said: list[str] = []
    reading = asyncio.ensure_future(following.print_decisions(
        bus_settings, None, follow=True, output="json", started=lambda: said.append("following")))
    try:
        await eventually_async(lambda: _said(said), timeout=10, what="following begun")
        await nats_server.stop()
        await asyncio.sleep(1)  # the client notices, and reconnects in vain
    finally:
        reading.cancel()
        done, _ = await asyncio.wait({reading}, timeout=30)
    assert done == {reading}
    assert reading.cancelled()
