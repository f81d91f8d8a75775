"""Kueue's plain pod groups read as gangs: its group label and total-count annotation."""

from __future__ import annotations

from typing import Any

import msgspec

from services.contracts import codec
from services.contracts.events import PodGroupObserved, PodObserved
from services.kube.listwatch import Change
from services.watcher import kueue, messages


def kueue_pod(count: Any = "4", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "w0", "namespace": "ml", "uid": "p1", "resourceVersion": "7",
                         "labels": {kueue.GROUP_LABEL: "train", **labels},
                         "annotations": {kueue.TOTAL_COUNT_ANNOTATION: count}},
            "spec": {"schedulerName": "gangsched", "containers": [{"name": "main"}]}}


def observed(obj: dict[str, Any]) -> list[Any]:
    items = messages.change_messages("gs", "pod", Change("observed", obj), 1000)
    return [codec.decode_event(data) for _, data, _ in items]


def test_a_kueue_group_member_yields_its_group_of_the_total_count_and_joins_it() -> None:
    group, pod = observed(kueue_pod("4"))
    assert isinstance(group, PodGroupObserved) and isinstance(pod, PodObserved)
    assert (group.namespace, group.name, group.min_member) == ("ml", "train", 4)
    assert (group.invalid_reason, group.api_version) == (None, kueue.API_VERSION)
    assert pod.group_name == "train"


def test_a_group_named_by_the_annotation_alone_is_a_gang_as_with_the_label() -> None:
    """Kueue v0.18 and later name the group in an annotation, not the label
    (WorkloadIdentifierAnnotations, on by default), and read the annotation first: its pods
    were each a gang of one, and some of a group that did not fit were bound."""
    obj = kueue_pod("3")
    del obj["metadata"]["labels"][kueue.GROUP_LABEL]
    obj["metadata"]["annotations"][kueue.GROUP_ANNOTATION] = "train"
    group, pod = observed(obj)
    assert isinstance(group, PodGroupObserved) and isinstance(pod, PodObserved)
    assert (group.name, group.min_member, pod.group_name) == ("train", 3, "train")
    obj["metadata"]["labels"][kueue.GROUP_LABEL] = "other"  # both: the annotation wins
    assert kueue.group_name(obj) == "train"


def test_a_group_with_fast_admission_is_no_gang() -> None:
    """Kueue admits a fast-admission group with its first pod (its StatefulSet integration
    sets it, and an OrderedReady StatefulSet makes the next pod only once that one runs): a
    gang of the total count waited for quorum for good; each pod is placed as it comes."""
    obj = kueue_pod("3")
    obj["metadata"]["annotations"][kueue.FAST_ADMISSION_ANNOTATION] = "true"
    (pod,) = observed(obj)
    assert isinstance(pod, PodObserved) and pod.group_name is None


def test_a_total_count_that_is_not_a_positive_integer_is_invalid_and_named() -> None:
    for bad in ("four", "0", "-1", 4):
        group = kueue.podgroup_event(kueue_pod(bad), 1000)
        assert group is not None and group.invalid_reason is not None
        assert kueue.TOTAL_COUNT_ANNOTATION in group.invalid_reason


def test_the_coscheduling_label_wins_and_nothing_is_synthesized() -> None:
    (pod,) = observed(kueue_pod("4", **{"scheduling.x-k8s.io/pod-group": "pg"}))
    assert isinstance(pod, PodObserved) and pod.group_name == "pg"


def test_a_pod_without_the_kueue_label_is_one_message_as_before() -> None:
    obj = kueue_pod("4")
    del obj["metadata"]["labels"][kueue.GROUP_LABEL]
    (pod,) = observed(obj)
    assert isinstance(pod, PodObserved) and pod.group_name is None


def test_a_deleted_member_is_only_the_pod_delete() -> None:
    items = messages.change_messages("gs", "pod", Change("deleted", kueue_pod("4")), 1000)
    assert [msg_id for _, _, msg_id in items] == ["pod/p1/7/deleted"]


def test_every_member_of_one_count_shares_the_group_message_id() -> None:
    first, second = kueue_pod("4"), kueue_pod("4")
    second["metadata"].update(name="w1", uid="p2")
    ids = {messages.change_messages("gs", "pod", Change("observed", obj), 1000)[0][2]
           for obj in (first, second)}
    assert ids == {"podgroup/kueue/ml/train/4/0/0/observed"}


def test_members_created_within_a_minute_share_the_group_message_id() -> None:
    """So a gang whose members are created over several seconds stores its group once per
    JetStream duplicate window, not once per second of creation."""
    ids = set()
    for second in range(0, 60, 4):
        member = kueue_pod("4")
        member["metadata"].update(name=f"w{second}", uid=f"p{second}",
                                  creationTimestamp=f"2024-05-01T10:00:{second:02d}Z")
        ids.add(messages.change_messages("gs", "pod", Change("observed", member), 1000)[0][2])
    assert len(ids) == 1


def test_a_run_created_later_under_the_same_name_and_count_has_its_own_message_id() -> None:
    """Else JetStream would drop a quick re-run's group as a duplicate of the last run's."""
    first, later = kueue_pod("4"), kueue_pod("4")
    first["metadata"]["creationTimestamp"] = "2024-05-01T10:00:00Z"
    later["metadata"].update(name="w1", uid="p2", creationTimestamp="2024-05-01T10:01:00Z")
    ids = [messages.change_messages("gs", "pod", Change("observed", obj), 1000)[0][2]
           for obj in (first, later)]
    assert ids[0] != ids[1]


def test_a_finished_or_deleting_member_keeps_its_group_but_does_not_state_it() -> None:
    """A finished member of an earlier run, observed again, would state that run's creation
    for a group run again under the same name."""
    finished = kueue_pod("4")
    finished["status"] = {"phase": "Succeeded"}
    deleting = kueue_pod("4")
    deleting["metadata"]["deletionTimestamp"] = "2024-05-01T10:00:00Z"
    for obj in (finished, deleting):
        (pod,) = observed(obj)
        assert isinstance(pod, PodObserved) and pod.group_name == "train"


def group_ids(counts: kueue.CountChanges, *steps: tuple[str, int]) -> list[str]:
    """The group message ids of members observed with these (total count, at_ms), in order."""
    ids = []
    for n, (count, at_ms) in enumerate(steps):
        member = kueue_pod(count)
        member["metadata"].update(name=f"w{n}", uid=f"p{n}")
        items = messages.change_messages("gs", "pod", Change("observed", member), at_ms,
                                         counts=counts)
        ids.append(items[0][2])
    return ids


def test_a_count_gone_back_to_an_earlier_one_has_a_new_message_id() -> None:
    """4, 3, then 4 again within JetStream's duplicate window: the third group event, were its
    id the first's, would be dropped and the group kept minMember 3."""
    ids = group_ids(kueue.CountChanges(), ("4", 1000), ("4", 2000), ("3", 3000), ("3", 4000),
                    ("4", 5000), ("3", 6000))
    assert ids == ["podgroup/kueue/ml/train/4/0/1000/observed"] * 2 + [
        "podgroup/kueue/ml/train/3/0/3000/observed"] * 2 + [
        "podgroup/kueue/ml/train/4/0/5000/observed", "podgroup/kueue/ml/train/3/0/6000/observed"]


def test_count_changes_forget_the_least_recently_published_group_beyond_capacity() -> None:
    counts = kueue.CountChanges(capacity=2)
    group = kueue.podgroup_event(kueue_pod("4"), 1000)
    assert group is not None
    others = [msgspec.structs.replace(group, uid=f"kueue/ml/{name}") for name in ("a", "b")]
    assert counts.since(group) == 1000
    assert [counts.since(other) for other in others] == [1000, 1000]
    assert len(counts) == 2
    assert counts.since(msgspec.structs.replace(group, at_ms=9000)) == 9000  # forgotten
    assert counts.since(msgspec.structs.replace(others[1], at_ms=9000)) == 1000  # kept


def test_a_count_flipping_back_within_one_millisecond_still_gets_an_id_of_its_own() -> None:
    """Members that disagree on the count, listed within one millisecond (found in review)."""
    ids = group_ids(kueue.CountChanges(), ("4", 1000), ("3", 1000), ("4", 1000), ("3", 999))
    assert ids == ["podgroup/kueue/ml/train/4/0/1000/observed",
                   "podgroup/kueue/ml/train/3/0/1001/observed",
                   "podgroup/kueue/ml/train/4/0/1002/observed",
                   "podgroup/kueue/ml/train/3/0/1003/observed"]
