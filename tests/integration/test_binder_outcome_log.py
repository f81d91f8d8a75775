"""A group's newest outcome is answered from the binder's bus view when the view holds
everything stored before the question (one read of the stream's newest message, shared by the
lookups that asked together), and from the group's subject otherwise; either way an outcome
stored before the lookup is never missed (`services.binder.outcome_log`).

Real nats-server (`nats_server` fixture); outcomes published as a binder publishes them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest
from nats.js import JetStreamContext

from services.binder import outcomes, view_feed
from services.binder.outcome_log import StreamOutcomeLog
from services.binder.view_feed import ViewFeed
from services.bus.publishing import Publisher
from services.bus.reading import StoredMessage
from services.config.settings import BusSettings
from services.contracts.events import GroupBound, GroupRolledBack, Outcome
from services.runtime import metrics


def rolled_back(group: str, decision: str) -> GroupRolledBack:
    return GroupRolledBack(at_ms=1, decision_id=decision, group=group, reason="x",
                           failed_pod=None, deleted_pods=())


async def publish(js: JetStreamContext, prefix: str, *published: Outcome) -> None:
    await Publisher(js).publish_many(outcomes.publish_items(prefix, published))


@pytest.fixture
async def feed(js: JetStreamContext, bus_settings: BusSettings) -> AsyncIterator[ViewFeed]:
    view = ViewFeed(js, bus_settings.prefix)
    await view.start()
    try:
        yield view
    finally:
        await view.stop()


async def test_a_group_the_view_knows_is_answered_without_reading_its_subject(
        js: JetStreamContext, bus_settings: BusSettings, feed: ViewFeed) -> None:
    prefix = bus_settings.prefix
    await publish(js, prefix, rolled_back("default/g", "1-0"), rolled_back("default/h", "2-0"))
    log = StreamOutcomeLog(js, prefix, feed)
    assert await log.newest("default/g") == rolled_back("default/g", "1-0")
    assert await log.newest("default/none") is None
    assert log.direct_reads == 0 and log.tail.reads == 2


async def test_lookups_asked_together_share_one_read_of_the_stream(
        js: JetStreamContext, bus_settings: BusSettings, feed: ViewFeed) -> None:
    prefix = bus_settings.prefix
    groups = [f"default/g{number}" for number in range(20)]
    await publish(js, prefix, *(rolled_back(group, "1-0") for group in groups))
    log = StreamOutcomeLog(js, prefix, feed)
    before = from_view()
    found = await asyncio.gather(*(log.newest(group) for group in groups))
    assert found == [rolled_back(group, "1-0") for group in groups]
    assert log.tail.reads == 1 and log.direct_reads == 0
    assert from_view() == before + 20


def from_view() -> float:
    return counted("view")


def counted(source: str) -> float:
    return metrics.REGISTRY.get_sample_value(
        "gangsched_binder_outcome_lookups_total", {"source": source}) or 0.0


async def test_an_outcome_stored_just_before_the_lookup_is_never_missed(
        js: JetStreamContext, bus_settings: BusSettings, feed: ViewFeed) -> None:
    prefix = bus_settings.prefix
    log = StreamOutcomeLog(js, prefix, feed)
    for number in range(1, 30):
        newest = (GroupBound(at_ms=1, decision_id=f"{number}-0", group="default/g")
                  if number % 2 else rolled_back("default/g", f"{number}-0"))
        await publish(js, prefix, newest)
        assert await log.newest("default/g") == newest
    assert log.direct_reads < 29  # the view answered (most of) them


async def test_a_binder_started_after_the_outcome_finds_it(
        js: JetStreamContext, bus_settings: BusSettings) -> None:
    prefix = bus_settings.prefix
    await publish(js, prefix, rolled_back("default/g", "1-0"), rolled_back("default/g", "3-0"))
    view = ViewFeed(js, prefix)  # as a binder (re)started now: the view reads the stream
    await view.start()
    try:
        log = StreamOutcomeLog(js, prefix, view)
        assert await log.newest("default/g") == rolled_back("default/g", "3-0")
    finally:
        await view.stop()


async def test_a_view_that_cannot_know_leaves_the_lookup_to_the_groups_subject(
        js: JetStreamContext, bus_settings: BusSettings) -> None:
    prefix = bus_settings.prefix
    await publish(js, prefix, rolled_back("default/g", "1-0"))
    idle = ViewFeed(js, prefix)  # never started: it applies nothing
    log = StreamOutcomeLog(js, prefix, idle)
    assert await log.newest("default/g") == rolled_back("default/g", "1-0")
    assert log.direct_reads == 1 and log.tail.reads == 1
    without = StreamOutcomeLog(js, prefix)  # no view at all: the subject, as before
    assert await without.newest("default/g") == rolled_back("default/g", "1-0")
    assert without.direct_reads == 1 and without.tail.reads == 0


async def test_a_message_at_the_same_sequence_of_another_stream_is_not_taken_as_applied(
        js: JetStreamContext, bus_settings: BusSettings) -> None:
    view = ViewFeed(js, bus_settings.prefix)
    subject = f"{bus_settings.prefix}.events.clock"
    applied = StoredMessage(seq=7, subject=subject, data=b"{}",
                            headers={"Nats-Msg-Id": "clock/1"}, stored_at_ms=1)
    view._apply(applied)
    assert view.has_applied(applied)
    other = StoredMessage(seq=7, subject=subject, data=b"{}", headers={"Nats-Msg-Id": "clock/9"},
                          stored_at_ms=1)  # EVENTS made anew: its seq 7 is another message
    assert not view.has_applied(other)
    assert not view.has_applied(StoredMessage(seq=8, subject=subject, data=b"{}",
                                              headers={}, stored_at_ms=1))


async def test_once_the_view_forgot_a_group_a_group_it_does_not_keep_is_read_directly(
        js: JetStreamContext, bus_settings: BusSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view_feed, "OUTCOME_SUBJECTS", 2)
    prefix = bus_settings.prefix
    view = ViewFeed(js, prefix)
    await view.start()
    try:
        log = StreamOutcomeLog(js, prefix, view)
        await publish(js, prefix, rolled_back("default/g0", "0-0"))
        assert await log.newest("default/new") is None and log.direct_reads == 0  # none
        await publish(js, prefix, *(rolled_back(f"default/g{number}", f"{number}-0")
                                    for number in range(1, 3)))
        assert await log.newest("default/g2") == rolled_back("default/g2", "2-0")
        assert log.direct_reads == 0  # kept
        assert await log.newest("default/g0") == rolled_back("default/g0", "0-0")
        assert log.direct_reads == 1  # forgotten: read from its subject
        assert await log.newest("default/new") is None
        assert log.direct_reads == 2  # not kept: none, or forgotten? its subject tells
    finally:
        await view.stop()


async def test_a_group_the_view_cannot_answer_for_costs_one_read_not_two(
        js: JetStreamContext, bus_settings: BusSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view_feed, "OUTCOME_SUBJECTS", 1)
    prefix = bus_settings.prefix
    view = ViewFeed(js, prefix)
    await view.start()
    try:
        log = StreamOutcomeLog(js, prefix, view)
        await publish(js, prefix, rolled_back("default/g0", "0-0"),
                      rolled_back("default/g1", "1-0"))
        assert await log.newest("default/g1") == rolled_back("default/g1", "1-0")  # caught up
        reads, from_stream = log.tail.reads, counted("stream")
        # a group the view forgot, or never had once it forgot one (a new group in a long-lived
        # installation): only its subject can tell, so the stream's newest is not read for it
        assert await log.newest("default/g0") == rolled_back("default/g0", "0-0")
        assert await log.newest("default/new") is None
        assert (log.tail.reads - reads, log.direct_reads) == (0, 2)
        assert counted("stream") == from_stream + 2
    finally:
        await view.stop()


async def test_the_stream_s_newest_is_asked_for_without_a_subject_filter(
        js: JetStreamContext, bus_settings: BusSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nats-server answers `last_by_subj` `>` from the stream's last sequence, but matches
    any other wildcard (`<prefix>.events.>`) against every subject of the stream: 1.7 ms of
    its CPU per read with 20,000 subjects, 3 ms with 60,000, 10-20x a group's own subject."""
    asked: list[str] = []
    get_last_msg = js.get_last_msg

    async def recording(stream: str, subject: str) -> object:
        asked.append(subject)
        return await get_last_msg(stream, subject)

    monkeypatch.setattr(js, "get_last_msg", recording)
    prefix = bus_settings.prefix
    await publish(js, prefix, rolled_back("default/g", "1-0"))
    log = StreamOutcomeLog(js, prefix, feed := ViewFeed(js, prefix))
    await feed.start()
    try:
        assert await log.newest("default/g") == rolled_back("default/g", "1-0")
    finally:
        await feed.stop()
    assert asked == [">"] and log.direct_reads == 0


async def test_the_same_message_stored_again_in_a_stream_made_anew_is_not_taken_as_applied(
        js: JetStreamContext, bus_settings: BusSettings) -> None:
    """The watcher publishes an unchanged object again with the same message id
    (`<kind>/<uid>/<resourceVersion>/<type>`), so a stream made anew can hold, at a sequence
    the view applied, the very message it applied there; until the view finds the stream
    new, everything before it may differ (a new group's outcome). When the stream stored it
    tells them apart, as it does for the view's own reader (`reading.holding`)."""
    view = ViewFeed(js, bus_settings.prefix)
    subject = f"{bus_settings.prefix}.events.node._.n1"
    applied = StoredMessage(seq=7, subject=subject, data=b"{}",
                            headers={"Nats-Msg-Id": "node/u1/42/ADDED"}, stored_at_ms=1000,
                            stored_at_us=1_000_123)
    view._apply(applied)
    assert view.has_applied(dataclasses.replace(applied, stored_at_ms=0))  # ms: not compared
    again = dataclasses.replace(applied, stored_at_ms=5000, stored_at_us=5_000_456)
    assert not view.has_applied(again)
