"""Watch events that repeat an object's last published event are left out; lists never are."""

from __future__ import annotations

import copy
import typing
from typing import Any

from services.contracts import codec, producers
from services.contracts.events import PodGroupObserved, PodObserved
from services.kube.listwatch import Change
from services.watcher import kueue, messages
from services.watcher.repeats import Observation, Repeats


def pod(rv: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "w0", "namespace": "ml", "uid": "p1", "resourceVersion": rv,
                         "creationTimestamp": "2024-05-01T10:00:00Z"},
            "spec": {"schedulerName": "gangsched", "containers": [{"name": "c"}]},
            "status": {"phase": "Pending", **status}}


def node(rv: str, heartbeat: str) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "uid": "nu", "resourceVersion": rv},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastHeartbeatTime": heartbeat}]}}


def ids(repeats: Repeats, kind: str, change: Change, at_ms: int = 1000) -> list[str]:
    return [msg_id for _, _, msg_id in
            messages.change_messages("gs", kind, change, at_ms, repeats=repeats)]


def test_a_watched_status_heartbeat_is_left_out_and_a_real_change_is_not() -> None:
    repeats = Repeats()
    assert ids(repeats, "node", Change("observed", node("1", "10:00"))) == ["node/nu/1/observed"]
    assert ids(repeats, "node", Change("observed", node("2", "10:01"), is_watched=True),
               at_ms=2000) == []
    cordoned = node("3", "10:02")
    cordoned["spec"] = {"unschedulable": True}
    assert ids(repeats, "node", Change("observed", cordoned, is_watched=True)) == [
        "node/nu/3/observed"]
    assert ids(repeats, "node", Change("observed", node("4", "10:03"), is_watched=True)) == [
        "node/nu/4/observed"]  # uncordoned: a change from the last one published


def test_a_pods_condition_is_left_out_and_its_phase_is_not() -> None:
    repeats = Repeats()
    assert ids(repeats, "pod", Change("observed", pod("1"))) == ["pod/p1/1/observed"]
    written = pod("2", conditions=[{"type": "PodScheduled", "status": "False",
                                    "reason": "Unschedulable"}])
    assert ids(repeats, "pod", Change("observed", written, is_watched=True)) == []
    running = pod("3", phase="Running", startTime="2024-05-01T10:00:05Z")
    assert ids(repeats, "pod", Change("observed", running, is_watched=True)) == [
        "pod/p1/3/observed"]


def test_a_list_publishes_every_object_even_unchanged() -> None:
    """A resync restates each object so the log's retention always holds one event of it."""
    repeats = Repeats()
    assert ids(repeats, "pod", Change("observed", pod("1"))) == ["pod/p1/1/observed"]
    assert ids(repeats, "pod", Change("observed", pod("1"))) == ["pod/p1/1/observed"]
    assert ids(repeats, "pod", Change("observed", pod("2"), is_watched=True)) == []


def test_a_deleted_object_is_forgotten_and_published_when_it_comes_back() -> None:
    repeats = Repeats()
    ids(repeats, "pod", Change("observed", pod("1")))
    assert ids(repeats, "pod", Change("deleted", pod("2"))) == ["pod/p1/2/deleted"]
    assert len(repeats) == 0
    assert ids(repeats, "pod", Change("observed", pod("3"), is_watched=True)) == [
        "pod/p1/3/observed"]


def test_objects_of_two_kinds_with_one_uid_are_told_apart() -> None:
    repeats = Repeats()
    shared = node("1", "10:00")
    shared["metadata"]["uid"] = "p1"
    ids(repeats, "node", Change("observed", shared))
    assert ids(repeats, "pod", Change("observed", pod("1"), is_watched=True)) == [
        "pod/p1/1/observed"]


def test_a_repeated_kueue_member_still_restates_its_group_but_not_itself() -> None:
    """The synthetic group reads the member's total-count annotation, which its pod event
    does not carry: it is published as before (JetStream keeps one per count)."""
    repeats = Repeats()
    member = pod("1")
    member["metadata"]["labels"] = {kueue.GROUP_LABEL: "train"}
    member["metadata"]["annotations"] = {kueue.TOTAL_COUNT_ANNOTATION: "4"}
    first = messages.change_messages("gs", "pod", Change("observed", member), 1000,
                                     repeats=repeats)
    assert [type(codec.decode_event(data)) for _, data, _ in first] == [
        PodGroupObserved, PodObserved]
    again = copy.deepcopy(member)
    again["metadata"]["resourceVersion"] = "2"
    assert ids(repeats, "pod", Change("observed", again, is_watched=True)) == [
        "podgroup/kueue/ml/train/4/28575960/0/observed"]


def test_without_a_memory_every_change_is_published() -> None:
    items = messages.change_messages("gs", "pod", Change("observed", pod("2"), is_watched=True),
                                     1000)
    assert [msg_id for _, _, msg_id in items] == ["pod/p1/2/observed"]


def test_a_repeat_is_published_once_the_last_publish_is_old_either_way() -> None:
    """A stale or refused last event (a second watcher's late resync, events dead-lettered
    after a clock jump) is mended at the object's next update, within REPUBLISH_AFTER_MS."""
    repeats = Repeats(republish_after_ms=60_000)
    assert ids(repeats, "node", Change("observed", node("1", "10:00")), at_ms=1_000_000)
    assert ids(repeats, "node", Change("observed", node("2", "10:01"), is_watched=True),
               at_ms=1_059_999) == []
    assert ids(repeats, "node", Change("observed", node("3", "10:02"), is_watched=True),
               at_ms=1_060_000) == ["node/nu/3/observed"]
    assert ids(repeats, "node", Change("observed", node("4", "10:03"), is_watched=True),
               at_ms=1_060_001) == []  # counted from that publish
    assert ids(repeats, "node", Change("observed", node("5", "10:04"), is_watched=True),
               at_ms=1_000_000) == ["node/nu/5/observed"]  # the clock stepped back a minute


def test_every_observation_the_watcher_publishes_may_be_a_repeat() -> None:
    """A kind added to the watcher is left out of `Observation` only by a failing test."""
    observed = {event_type for event_type, kind in producers.KIND_OF_TYPE.items()
                if producers.PRODUCER_OF_KIND[kind] == producers.WATCHER
                and event_type.__name__.endswith("Observed")}
    assert observed == set(typing.get_args(Observation))
