"""A Kueue group's synthetic PodGroup through a real JetStream: what the EVENTS stream keeps
when the group's total count changes and goes back within the duplicate window (2 minutes).

The watcher's messages for each member (`services.watcher.messages.change_messages`) are
published as the watcher publishes them (`Publisher.publish_many`), and the last message on
the group's subject is what a planner, or a restarted one, reads as the group.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from nats.js import JetStreamContext

from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects
from services.kube.listwatch import Change
from services.watcher import kueue, messages

pytestmark = pytest.mark.integration


def member(n: int, count: str) -> dict[str, Any]:
    """Member `w<n>` of Kueue group ml/train stating total count `count`, created at once."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"w{n}", "namespace": "ml", "uid": f"p{n}",
                         "resourceVersion": str(10 + n),
                         "creationTimestamp": "2026-12-07T10:00:00Z",
                         "labels": {kueue.GROUP_LABEL: "train"},
                         "annotations": {kueue.TOTAL_COUNT_ANNOTATION: count}},
            "spec": {"schedulerName": "gangsched", "containers": [{"name": "main"}]}}


async def last_group_count(js: JetStreamContext, settings: BusSettings,
                           counts: kueue.CountChanges | None) -> int:
    """The min_member stored last for ml/train after members stating 4, 3, then 4 again."""
    publisher = Publisher(js)
    for n, count in enumerate(("4", "4", "3", "3", "4")):
        await publisher.publish_many(messages.change_messages(
            settings.prefix, "pod", Change("observed", member(n, count)), 1_000 * (n + 1),
            counts=counts))
    group = subjects.events_subject(settings.prefix, "podgroup", "ml", "train")
    stored = await js.get_last_msg(subjects.stream_name(settings.prefix, "EVENTS"), group)
    value: int = json.loads(stored.data or b"{}")["min_member"]
    return value


async def test_a_count_gone_back_to_an_earlier_one_is_stored_as_the_groups_last(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    assert await last_group_count(js, bus_settings, kueue.CountChanges()) == 4


async def test_without_the_count_memory_the_stream_drops_it_as_a_duplicate(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    """What the memory is for: the ids of a stateless watcher repeat, and JetStream keeps 3."""
    assert await last_group_count(js, bus_settings, None) == 3
