"""The stream set-up before any service starts (`serve.ensure_streams_once`): a transient
failure is waited out, for a bounded time; a refusal ends the start at once."""

from __future__ import annotations

from typing import Any

import nats
import pytest

from services.bus import streams
from services.bus.errors import BusMisconfigured, JetStreamUnavailable
from services.cli import serve
from services.config.settings import Settings


class FakeConnection:
    def jetstream(self) -> object:
        return object()


def failing(errors: list[BaseException]) -> Any:
    """An `ensure_streams` raising `errors` in turn, then succeeding; its calls counted."""
    calls: list[int] = []

    async def ensure(_js: object, _settings: object) -> None:
        calls.append(1)
        if errors:
            raise errors.pop(0)

    ensure.calls = calls  # type: ignore[attr-defined]
    return ensure


async def test_a_transient_failure_is_retried_until_the_streams_are_set_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ensure = failing([nats.errors.TimeoutError(), nats.errors.TimeoutError()])
    monkeypatch.setattr(streams, "ensure_streams", ensure)
    await serve.ensure_streams_once(Settings(), FakeConnection())  # type: ignore[arg-type]
    assert len(ensure.calls) == 3


async def test_a_request_never_answered_ends_the_start_after_the_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streams, "ensure_streams",
                        failing([nats.errors.TimeoutError() for _ in range(1000)]))
    monkeypatch.setattr(serve, "STREAMS_GIVE_UP_SECONDS", 0.3)
    with pytest.raises(BusMisconfigured) as ended:
        await serve.ensure_streams_once(Settings(), FakeConnection())  # type: ignore[arg-type]
    assert str(ended.value) == (
        "the streams could not be set up for 0.3s (TimeoutError()): is JetStream enabled on "
        "the NATS server, and may this user use its API?")


async def test_a_refusal_ends_the_start_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ensure = failing([BusMisconfigured("stream X cannot be created: no")])
    monkeypatch.setattr(streams, "ensure_streams", ensure)
    with pytest.raises(BusMisconfigured, match=r"^stream X cannot be created: no$"):
        await serve.ensure_streams_once(Settings(), FakeConnection())  # type: ignore[arg-type]
    assert len(ensure.calls) == 1


async def test_a_nats_whose_jetstream_does_not_answer_is_waited_for_past_the_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Named, counted and held in /readyz by `ensure_streams`: waited for as NATS itself is."""
    ensure = failing([JetStreamUnavailable("NATS at nats://x:1 has no JetStream")
                      for _ in range(4)])
    monkeypatch.setattr(streams, "ensure_streams", ensure)
    monkeypatch.setattr(serve, "STREAMS_GIVE_UP_SECONDS", 0.0)
    await serve.ensure_streams_once(Settings(), FakeConnection())  # type: ignore[arg-type]
    assert len(ensure.calls) == 5
