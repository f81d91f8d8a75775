"""A consumer closed while it held its service's readiness down gives the hold back."""

from __future__ import annotations

import asyncio

import nats
from nats.js.api import AckPolicy, ConsumerConfig

from services.bus.consuming import PullConsumer
from services.runtime.health import ReadyFlag


class _Subscription:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    async def fetch(self, batch: int, timeout: float) -> list[object]:
        if self.error is not None:
            raise self.error
        raise nats.errors.TimeoutError()

    async def unsubscribe(self) -> None:
        return None


class _JetStream:
    async def consumer_info(self, stream: str, durable: str) -> object:
        raise nats.js.errors.ServiceUnavailableError()


def _consumer(ready: ReadyFlag, subscription: _Subscription) -> PullConsumer:
    consumer = PullConsumer(_JetStream(), "S-EVENTS",  # type: ignore[arg-type]
                            ConsumerConfig(durable_name="planner", ack_policy=AckPolicy.ALL))
    consumer._ready = ready
    consumer._subscription = subscription  # type: ignore[assignment]
    return consumer


def test_a_closed_consumer_releases_the_readiness_it_held() -> None:
    ready = ReadyFlag("planner")
    ready.set()
    old = _consumer(ready, _Subscription(nats.errors.NoRespondersError()))
    asyncio.run(old.fetch(10, 0.01))  # fetches failing: not ready
    assert not ready.is_ready
    asyncio.run(old.close())  # its run ended (a database outage, a lost lease, a restart)
    new = _consumer(ready, _Subscription())
    assert asyncio.run(new.fetch(10, 0.01)) == []
    ready.set()
    assert ready.holds == [] and ready.is_ready
