"""`gangsched decisions --follow` of a `gangsched run` ends, with the reason, once that run
stops or restarts elsewhere, instead of retrying a server that is gone (a new user found it
retrying the old port for minutes)."""

from __future__ import annotations

import asyncio

import pytest
from nats.js import JetStreamContext

from services.bus.errors import BusUnavailable
from services.cli import following
from services.config.settings import BusSettings

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
