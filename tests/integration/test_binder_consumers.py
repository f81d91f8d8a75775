"""The binder's two DECISIONS consumers on a real nats-server: placements apart from reports,
and an upgrade from the single all-decisions consumer loses and repeats nothing."""

from __future__ import annotations

import msgspec
import pytest
from nats.js import JetStreamContext

from services.binder.wiring import open_consumers
from services.bus.consuming import Delivery, PullConsumer
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects
from services.contracts.decisions import (
    Assignment,
    Decision,
    Placement,
    Preemption,
    Rejection,
    StatusUpdate,
    Victim,
)

pytestmark = pytest.mark.integration


def decisions(first_seq: int) -> list[Decision]:
    """A Placement, a Rejection, a StatusUpdate and a Preemption of group ns/g."""
    return [
        Placement(id=f"{first_seq}-0", plan_seq=first_seq, at_ms=0, group="ns/g", attempt=1,
                  deadline_ms=1, members=(Assignment("u", "ns", "p", "n1"),)),
        Rejection(id=f"{first_seq}-1", plan_seq=first_seq, at_ms=0, group="ns/g",
                  reason="waiting", pods=()),
        StatusUpdate(id=f"{first_seq}-2", plan_seq=first_seq, at_ms=0, group="ns/g",
                     phase="Pending", running=0, succeeded=0, failed=0),
        Preemption(id=f"{first_seq}-3", plan_seq=first_seq, at_ms=0, group="ns/g",
                   priority=100, deadline_ms=1, nominated=(Assignment("u", "ns", "p", "n1"),),
                   victims=(Victim("v", "ns", "low", "n1", "ns/pod:low", 0),)),
    ]


async def publish(js: JetStreamContext, prefix: str, batch: list[Decision]) -> None:
    await Publisher(js).publish_many([
        (subjects.decisions_subject(prefix, type(d).__name__, "ns", "g"),
         msgspec.json.encode(d), d.id) for d in batch
    ])


async def drain(consumer: PullConsumer) -> list[Delivery]:
    got: list[Delivery] = []
    while batch := await consumer.fetch(10, 0.5):
        got.extend(batch)
        for delivery in batch:
            await delivery.ack()
    return got


def kinds(got: list[Delivery]) -> list[str]:
    return [delivery.subject.split(".")[2] for delivery in got]


def seq_kinds(got: list[Delivery]) -> list[tuple[int, str]]:
    return [(delivery.seq, delivery.subject.split(".")[2]) for delivery in got]


async def test_placements_and_reports_are_consumed_apart(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    await publish(js, bus_settings.prefix, decisions(1))
    placements, reports = await open_consumers(js, bus_settings.prefix)
    try:
        assert kinds(await drain(placements)) == ["Placement", "Preemption"]
        assert kinds(await drain(reports)) == ["Rejection", "StatusUpdate"]
    finally:
        await placements.close()
        await reports.close()


async def test_upgrading_from_one_consumer_starts_reports_after_what_it_acknowledged(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    prefix = bus_settings.prefix
    stream = subjects.stream_name(prefix, "DECISIONS")
    await publish(js, prefix, decisions(1))           # stream seqs 1-4, all handled by the old
    old = await PullConsumer.open(js, stream=stream, durable="binder",
                                  filter_subject=subjects.decisions_wildcard(prefix))
    assert len(await drain(old)) == 4
    await old.close()
    await publish(js, prefix, decisions(2))           # seqs 5-8: nobody has seen them yet
    placements, reports = await open_consumers(js, prefix)
    try:
        got_placements, got_reports = await drain(placements), await drain(reports)
        assert seq_kinds(got_placements) == [(5, "Placement"), (8, "Preemption")]
        assert seq_kinds(got_reports) == [(6, "Rejection"), (7, "StatusUpdate")]
    finally:
        await placements.close()
        await reports.close()
    again_placements, again_reports = await open_consumers(js, prefix)  # a restart: no repeats
    try:
        assert await drain(again_placements) == []
        assert await drain(again_reports) == []
    finally:
        await again_placements.close()
        await again_reports.close()


async def test_a_placements_only_binder_is_widened_to_preemptions_keeping_its_place(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    prefix = bus_settings.prefix
    stream = subjects.stream_name(prefix, "DECISIONS")
    await publish(js, prefix, decisions(1)[:1])        # seq 1: the old binder's Placement
    old = await PullConsumer.open(
        js, stream=stream, durable="binder",
        filter_subject=subjects.decisions_of_type_wildcard(prefix, "Placement"))
    assert seq_kinds(await drain(old)) == [(1, "Placement")]
    await old.close()
    await publish(js, prefix, decisions(2))           # seqs 2-5, Preemption at 5
    placements, reports = await open_consumers(js, prefix)
    try:
        assert seq_kinds(await drain(placements)) == [(2, "Placement"), (5, "Preemption")]
        assert seq_kinds(await drain(reports)) == [(3, "Rejection"), (4, "StatusUpdate")]
    finally:
        await placements.close()
        await reports.close()
