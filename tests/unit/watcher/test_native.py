"""Slimming the native PodGroup API and pods' `spec.schedulingGroup`."""

from __future__ import annotations

from typing import Any

from services.kube.listwatch import Change
from services.watcher import messages, native


def native_podgroup(policy: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "ml", "uid": "g1",
                         "resourceVersion": "4"},
            "spec": {"schedulingPolicy": policy}}


def test_a_gang_policy_min_count_is_the_min_member() -> None:
    event = native.podgroup_event(native_podgroup({"gang": {"minCount": 3}}), 1000)
    assert (event.min_member, event.invalid_reason) == (3, None)
    assert event.api_version == "scheduling.k8s.io/v1alpha2"


def test_a_basic_policy_is_a_gang_of_one() -> None:
    assert native.podgroup_event(native_podgroup({"basic": {}}), 1000).min_member == 1


def test_a_gang_without_a_valid_min_count_is_invalid_and_named() -> None:
    event = native.podgroup_event(native_podgroup({"gang": {"minCount": "three"}}), 1000)
    assert event.invalid_reason is not None and "gang.minCount" in event.invalid_reason


def test_a_pod_joins_its_scheduling_group_unless_it_has_the_coscheduling_label() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "w-0", "namespace": "ml", "uid": "p1"},
                           "spec": {"schedulingGroup": {"podGroupName": "train"},
                                    "containers": []}}
    assert native.pod_event(pod, 1000).group_name == "train"
    pod["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "other"}
    assert native.pod_event(pod, 1000).group_name == "other"


def test_the_scheduling_group_is_read_only_when_the_native_api_is_on() -> None:
    pod = {"metadata": {"name": "w-0", "namespace": "ml", "uid": "p1", "resourceVersion": "1"},
           "spec": {"schedulingGroup": {"podGroupName": "train"}, "containers": []}}
    plain = messages.change_message("g", "pod", Change("observed", pod), 1000)
    read = messages.change_message("g", "pod", Change("observed", pod), 1000, is_native=True)
    assert b"train" not in plain[1] and b"train" in read[1]
