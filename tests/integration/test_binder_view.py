"""The binder's view on a real nats-server: newest state per object at start, then follows."""

from __future__ import annotations

import logging
import re

import pytest
from nats.js import JetStreamContext

from services.binder.view_feed import ViewFeed
from services.bus import reading
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import codec, subjects
from services.contracts.events import Event
from services.watcher import slim
from tests.integration.test_bus_store_lost import events_stream, recreate_events
from tests.support.waiting import eventually_async
from tests.unit.binder.fakes import make_node, make_pod

pytestmark = pytest.mark.integration


async def publish(js: JetStreamContext, prefix: str, kind: str, name: str, event: Event,
                  msg_id: str) -> int:
    namespace = "" if kind == "node" else "default"
    ack = await js.publish(subjects.events_subject(prefix, kind, namespace, name),
                           codec.encode(event), headers={"Nats-Msg-Id": msg_id})
    return int(ack.seq)


async def test_the_view_starts_from_each_objects_newest_event_and_follows(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    prefix = bus_settings.prefix
    await publish(js, prefix, "pod", "a", slim.pod_event(make_pod("a"), 0), "1")
    await publish(js, prefix, "pod", "a", slim.pod_event(make_pod("a", node="n1"), 0), "2")
    await publish(js, prefix, "pod", "b", slim.pod_event(make_pod("b"), 0), "3")
    await publish(js, prefix, "pod", "b", slim.pod_deleted(make_pod("b"), 0), "4")
    last = await publish(js, prefix, "node", "n1", slim.node_event(make_node("n1"), 0), "5")
    feed = ViewFeed(js, prefix)
    await feed.start()
    try:
        assert await feed.caught_up(last, timeout_seconds=5)
        # a's newest event is bound: the view holds it but never answers for a bound pod (who
        # bound it shows only on the API object); the older, unbound event would be answered
        assert feed.view.pod("default", "a") is None
        assert len(feed.view) == 2  # pod a and node n1; b was deleted
        assert feed.view.pod("default", "b") is None
        assert feed.view.node("n1") is not None
        assert not await feed.caught_up(last + 1, timeout_seconds=0.2)
        later = await publish(js, prefix, "node", "n2",
                              slim.node_event(make_node("n2", is_ready=False), 0), "6")
        assert await feed.caught_up(later, timeout_seconds=5)
        node = feed.view.node("n2")
        assert node is not None and node["status"]["conditions"][0]["status"] == "False"
    finally:
        await feed.stop()


async def test_other_messages_move_the_view_on_and_poison_is_skipped(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    prefix = bus_settings.prefix
    feed = ViewFeed(js, prefix)
    await feed.start()
    try:
        bad = int((await js.publish(subjects.events_subject(prefix, "pod", "default", "x"),
                                    b"not an event")).seq)
        tick = await Publisher(js).publish(
            subjects.events_subject(prefix, "clock", "", "tick"), b"{}", msg_id="t")
        assert tick > bad
        assert await feed.caught_up(tick, timeout_seconds=5)
        assert len(feed.view) == 0
    finally:
        await feed.stop()


async def test_the_view_names_podgroups_from_their_events(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    prefix = bus_settings.prefix
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"namespace": "default", "name": "g", "uid": "pg-1",
                          "resourceVersion": "3", "creationTimestamp": "2026-11-30T00:00:00Z"},
             "spec": {"minMember": 2}}
    last = await publish(js, prefix, "podgroup", "g", slim.podgroup_event(group, 0), "pg")
    feed = ViewFeed(js, prefix)
    await feed.start()
    try:
        assert await feed.caught_up(last, timeout_seconds=5)
        assert feed.view.podgroup("default", "g") == ("pg-1", "scheduling.x-k8s.io/v1alpha1")
    finally:
        await feed.stop()


async def test_an_events_stream_made_anew_gives_a_view_built_afresh_from_it(
    js: JetStreamContext, bus_settings: BusSettings, caplog: pytest.LogCaptureFixture,
) -> None:
    prefix = bus_settings.prefix
    for index, name in enumerate(["n1", "n2", "n3"]):
        last = await publish(js, prefix, "node", name, slim.node_event(make_node(name), 0),
                             str(index))
    feed = ViewFeed(js, prefix)
    await feed.start()
    try:
        assert await feed.caught_up(last, timeout_seconds=5)
        was, now = await recreate_events(js, bus_settings)
        caplog.set_level(logging.WARNING, logger=reading.__name__)
        first = await publish(js, prefix, "node", "n4", slim.node_event(make_node("n4"), 0), "4")
        later = await publish(js, prefix, "pod", "a", slim.pod_event(make_pod("a"), 0), "5")
        assert (first, later) == (1, 2)

        async def afresh() -> bool:  # until its next fetch finds the stream made anew, the
            return feed.view.node("n1") is None  # old view answers (its seqs are higher)

        await eventually_async(afresh, timeout=10, what="the view built afresh")
        assert await feed.caught_up(later, timeout_seconds=10)
        assert feed.view.applied_seq == 2 and len(feed.view) == 2
        assert feed.view.node("n4") is not None and feed.view.node("n1") is None
        assert feed.view.pod("default", "a") is not None
        (said,) = [record.getMessage() for record in caplog.records
                   if record.name == reading.__name__]
        assert re.fullmatch(
            rf"stream {re.escape(events_stream(bus_settings))} was created anew at {now} \(the "
            rf"one reader binder-view-[0-9a-f]{{16}} read was created at {was}\): reading it "
            r"afresh", said), said
    finally:
        await feed.stop()
