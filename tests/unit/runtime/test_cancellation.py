"""A cancellation that arrives with nats-py's answer still ends the task (CPython gh-86296).

The race is made exact as in tests/unit/planner/test_election.py: the awaited request, run
under `asyncio.wait_for` as nats-py runs its requests, cancels the waiting task and answers in
the same instant. On Python 3.11 `wait_for` then returns the answer and drops the cancellation.
Loops run a few rounds, not forever, so a lost cancellation fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import nats
import pytest
from nats.js.api import PubAck

from services.bus.consuming import Delivery
from services.bus.publishing import Publisher
from services.runtime import cancellation

ROUNDS = 3
"""Requests a loop would make if its cancellation were lost."""


async def answer_as_cancelled(answer: Any = "answer") -> Any:
    """What nats-py does with a request whose answer comes as its task is cancelled."""

    async def respond() -> Any:
        victim = waiting
        assert victim is not None
        victim.cancel()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    waiting = asyncio.current_task()
    assert waiting is not None
    return await asyncio.wait_for(respond(), timeout=5)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="wait_for keeps the cancel since 3.12")
async def test_unguarded_the_answer_wins_and_the_cancellation_is_lost() -> None:
    # the race these tests make: it is real, so the guard is needed
    async def once() -> Any:
        return await answer_as_cancelled()

    assert await asyncio.create_task(once()) == "answer"


async def test_a_guarded_request_loop_ends_at_the_request_that_lost_the_cancel() -> None:
    requests: list[str] = []

    @cancellation.guarded
    async def request() -> Any:
        requests.append("sent")
        return await answer_as_cancelled()

    async def loop() -> None:
        for _ in range(ROUNDS):
            await request()

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(loop())
    assert requests == ["sent"]


async def test_a_request_that_raises_after_losing_the_cancel_ends_in_cancellation() -> None:
    # e.g. a retry loop: nats-py's own timeout error must not be retried after a cancel
    async def request() -> None:
        with cancellation.kept():
            await answer_as_cancelled(nats.errors.TimeoutError())

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(request())


async def test_cleanup_after_a_delivered_cancellation_runs_to_its_end() -> None:
    # `finally` blocks close readers while the task is being cancelled: their requests'
    # answers are kept, only a cancellation during them counts
    closed: list[str] = []
    started = asyncio.Event()

    @cancellation.guarded
    async def close(name: str) -> None:
        await asyncio.sleep(0)
        closed.append(name)

    async def work() -> None:
        try:
            started.set()
            await asyncio.Event().wait()
        finally:
            await close("reader")
            await close("consumer")

    task = asyncio.create_task(work())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == ["reader", "consumer"]


class AnsweringMsg:
    """A nats-py message whose replies are answered as their sender is cancelled."""

    def __init__(self) -> None:
        self.replies: list[str] = []

    async def in_progress(self) -> None:
        self.replies.append("in progress")
        await answer_as_cancelled(None)

    async def ack(self) -> None:
        self.replies.append("ack")
        await answer_as_cancelled(None)


def delivery(msg: AnsweringMsg) -> Delivery:
    return Delivery(seq=1, subject="gs.decisions.Placement.ns.g", data=b"{}", headers={},
                    num_delivered=1, num_pending=0, stored_at_ms=0, stored_at_us=0,
                    msg=msg)  # type: ignore[arg-type]


@pytest.mark.parametrize(("reply", "sent"), [("in_progress", "in progress"), ("ack", "ack")])
async def test_a_reply_that_loses_the_cancel_ends_its_loop(reply: str, sent: str) -> None:
    # the binder's in-progress heartbeat and a consumer's acks both loop on such replies
    msg = AnsweringMsg()

    async def loop() -> None:
        for _ in range(ROUNDS):
            await getattr(delivery(msg), reply)()

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(loop())
    assert msg.replies == [sent]


class LosingStream:
    """A JetStream context whose publish fails as transient while its caller is cancelled
    (then, a few retries later, succeeds: where a lost cancellation would end up)."""

    def __init__(self) -> None:
        self.publishes = 0

    async def publish(self, *args: Any, **kwargs: Any) -> PubAck:
        self.publishes += 1
        if self.publishes < ROUNDS:
            await answer_as_cancelled(nats.errors.TimeoutError())
        return PubAck(stream="GS_EVENTS", seq=1)


async def test_a_publish_retried_while_nats_is_down_stops_at_the_lost_cancel() -> None:
    stream = LosingStream()
    publisher = Publisher(stream)  # type: ignore[arg-type]
    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(publisher.publish("gs.events.x", b"{}", msg_id="m"))
    assert stream.publishes == 1
