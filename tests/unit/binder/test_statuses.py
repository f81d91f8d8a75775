"""PodScheduled condition and PodGroup status patches: only what changed, None when current."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from services.binder import statuses
from services.contracts.decisions import StatusUpdate
from tests.unit.binder.fakes import make_pod

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
EARLIER = "2024-05-01T11:00:00Z"


def update(**fields: Any) -> StatusUpdate:
    values: dict[str, Any] = {
        "id": "7-0", "plan_seq": 7, "at_ms": 0, "group": "ml/train", "phase": "Scheduling",
        "running": 0, "succeeded": 0, "failed": 0,
    }
    return StatusUpdate(**(values | fields))


def test_an_unschedulable_pod_gets_the_podscheduled_false_condition() -> None:
    condition = statuses.unschedulable(None, "gang ml/train: 3 of 4 members fit", NOW)
    assert condition is not None
    assert statuses.unschedulable_patch(condition) == {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "gang ml/train: 3 of 4 members fit",
        "lastTransitionTime": "2024-05-01T12:00:00Z",
    }]}


def test_the_same_condition_is_not_written_again() -> None:
    assert statuses.unschedulable(statuses.Unschedulable("m", EARLIER), "m", NOW) is None


def test_a_new_message_keeps_the_transition_time_while_the_status_stays_false() -> None:
    condition = statuses.unschedulable(statuses.Unschedulable("old", EARLIER), "new", NOW)
    assert condition == statuses.Unschedulable("new", EARLIER)
    patch = statuses.unschedulable_patch(condition)
    assert patch["conditions"][0]["lastTransitionTime"] == EARLIER
    assert patch["conditions"][0]["message"] == "new"


def test_a_pod_bound_meanwhile_gets_podscheduled_true_back_without_reason_or_message() -> None:
    assert statuses.scheduled_patch(NOW) == {"conditions": [{
        "type": "PodScheduled", "status": "True", "reason": None, "message": None,
        "lastTransitionTime": "2024-05-01T12:00:00Z",
    }]}


def test_podgroup_status_carries_phase_counts_start_time_and_a_scheduled_condition() -> None:
    podgroup = {"metadata": {"generation": 2}, "status": {}}
    start_ms = int(datetime(2024, 5, 1, 11, 59, tzinfo=UTC).timestamp() * 1000)
    patch = statuses.podgroup_status(
        update(phase="Running", running=3, occupied_by="ml/job", schedule_start_ms=start_ms,
               condition_reason="Scheduled", condition_message="3 of 3 members bound"),
        podgroup, NOW,
    )
    assert patch == {
        "phase": "Running", "running": 3, "succeeded": 0, "failed": 0, "occupiedBy": "ml/job",
        "scheduleStartTime": "2024-05-01T11:59:00Z",
        "conditions": [{
            "type": "Scheduled", "status": "True", "reason": "Scheduled",
            "message": "3 of 3 members bound", "observedGeneration": 2,
            "lastTransitionTime": "2024-05-01T12:00:00Z",
        }],
    }


def test_a_podgroup_status_already_current_is_not_written() -> None:
    podgroup: dict[str, Any] = {"metadata": {}, "status": {}}
    first = statuses.podgroup_status(update(condition_reason="Unschedulable",
                                            condition_message="m"), podgroup, NOW)
    assert first is not None
    podgroup["status"] = first
    later = datetime(2024, 5, 1, 13, 0, tzinfo=UTC)
    assert statuses.podgroup_status(update(condition_reason="Unschedulable",
                                           condition_message="m"), podgroup, later) is None


def test_only_changed_fields_are_patched_and_other_conditions_are_kept() -> None:
    other = {"type": "Custom", "status": "True", "reason": "X", "message": "",
             "lastTransitionTime": EARLIER}
    old = {"type": "Scheduled", "status": "False", "reason": "Unschedulable", "message": "m",
           "lastTransitionTime": EARLIER}
    podgroup = {"metadata": {}, "status": {"phase": "Pending", "running": 0, "succeeded": 0,
                                           "failed": 0, "conditions": [other, old]}}
    patch = statuses.podgroup_status(
        update(phase="Pending", condition_reason="Unschedulable", condition_message="m2"),
        podgroup, NOW,
    )
    assert patch is not None
    assert set(patch) == {"conditions"}
    assert patch["conditions"][0] == other
    assert patch["conditions"][1]["message"] == "m2"
    assert patch["conditions"][1]["lastTransitionTime"] == EARLIER


def test_condition_reasons_are_made_valid() -> None:
    assert statuses.condition_reason("Unschedulable") == "Unschedulable"
    assert statuses.condition_reason("rolled back: pod gone") == "RolledBackPodGone"
    assert statuses.condition_reason("3 of 4 fit") == "Of4Fit"
    assert statuses.condition_reason("!!!") == "Unknown"


def test_a_native_podgroup_gets_only_the_podgroupscheduled_condition() -> None:
    podgroup = {"apiVersion": "scheduling.k8s.io/v1alpha2", "metadata": {"generation": 1},
                "status": {}}
    patch = statuses.podgroup_status(
        update(phase="Running", running=3, condition_reason="GroupBound",
               condition_message="3 of 3 members bound"), podgroup, NOW)
    assert patch == {"conditions": [{
        "type": "PodGroupScheduled", "status": "True", "reason": "Scheduled",
        "message": "3 of 3 members bound", "observedGeneration": 1,
        "lastTransitionTime": "2024-05-01T12:00:00Z",
    }]}
    podgroup["status"] = patch
    assert statuses.podgroup_status(
        update(phase="Running", running=3, condition_reason="GroupBound",
               condition_message="3 of 3 members bound"), podgroup, NOW) is None


def test_a_native_podgroup_that_does_not_fit_is_unschedulable() -> None:
    podgroup = {"apiVersion": "scheduling.k8s.io/v1alpha2", "metadata": {}, "status": {}}
    patch = statuses.podgroup_status(
        update(condition_reason="NoFit", condition_message="gang ml/train: 3 of 4 fit"),
        podgroup, NOW)
    assert patch is not None
    assert [(c["type"], c["status"], c["reason"]) for c in patch["conditions"]] == [
        ("PodGroupScheduled", "False", "Unschedulable")]


@pytest.mark.parametrize("reason", ["Unschedulable", "Binding", "Preempted"])
def test_a_running_gang_whose_members_of_ours_wait_is_not_scheduled(reason: str) -> None:
    """Phase Running (old members terminating, or another scheduler's pods, still run) while
    the planner's reason says ours wait: the condition follows the reason, False, in both
    PodGroup APIs (the phase made it True beside the reason Unschedulable)."""
    running = update(phase="Running", running=2, condition_reason=reason,
                     condition_message="gang ml/train: 0 of 2 members fit")
    patch = statuses.podgroup_status(running, {"metadata": {}, "status": {}}, NOW)
    assert patch is not None
    assert [(c["status"], c["reason"]) for c in patch["conditions"]] == [("False", reason)]
    native = statuses.podgroup_status(
        running, {"apiVersion": "scheduling.k8s.io/v1alpha2", "status": {}}, NOW)
    assert native is not None
    assert [(c["status"], c["reason"]) for c in native["conditions"]] == [
        ("False", "Unschedulable")]


def test_a_native_podgroup_running_without_a_reason_is_scheduled() -> None:
    """No reason from the planner: the phase decides (Running: the gang was placed)."""
    patch = statuses.podgroup_status(update(phase="Running", running=3),
                                     {"apiVersion": "scheduling.k8s.io/v1alpha2",
                                      "status": {}}, NOW)
    assert patch is not None
    assert [(c["status"], c["reason"]) for c in patch["conditions"]] == [("True", "Scheduled")]


PREEMPTING = "gangsched: preempting to accommodate a higher priority podgroup"


def test_a_victim_gets_the_disruption_target_condition_of_kube_scheduler() -> None:
    pod = make_pod("low", node="n1")
    pod["metadata"]["generation"] = 3
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert statuses.disruption_target_status(pod, PREEMPTING, NOW) == {"conditions": [{
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
        "message": PREEMPTING, "lastTransitionTime": "2024-05-01T12:00:00Z",
        "observedGeneration": 3,
    }]}


def test_a_pod_without_a_generation_gets_no_observed_generation() -> None:
    patch = statuses.disruption_target_status(make_pod("low"), PREEMPTING, NOW)
    assert patch is not None and "observedGeneration" not in patch["conditions"][0]


def test_the_same_disruption_target_is_not_written_again() -> None:
    pod = make_pod("low")
    pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                    "reason": "PreemptionByScheduler", "message": PREEMPTING,
                                    "lastTransitionTime": EARLIER}]
    assert statuses.disruption_target_status(pod, PREEMPTING, NOW) is None


def test_another_disruption_target_is_replaced_keeping_its_transition_time() -> None:
    pod = make_pod("low")
    pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                    "reason": "DeletionByTaintManager", "message": "taint",
                                    "lastTransitionTime": EARLIER}]
    patch = statuses.disruption_target_status(pod, PREEMPTING, NOW)
    assert patch is not None
    assert patch["conditions"][0]["reason"] == "PreemptionByScheduler"
    assert patch["conditions"][0]["lastTransitionTime"] == EARLIER


def test_a_false_disruption_target_turns_true_now() -> None:
    pod = make_pod("low")
    pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "False",
                                    "reason": "PreemptionByScheduler", "message": PREEMPTING,
                                    "lastTransitionTime": EARLIER}]
    patch = statuses.disruption_target_status(pod, PREEMPTING, NOW)
    assert patch is not None
    assert patch["conditions"][0]["status"] == "True"
    assert patch["conditions"][0]["lastTransitionTime"] == "2024-05-01T12:00:00Z"


def test_a_preemptor_is_nominated_unless_it_names_the_node_already() -> None:
    pod = make_pod("high")
    assert statuses.nominated_status(pod, "n1") == {"nominatedNodeName": "n1"}
    pod["status"]["nominatedNodeName"] = "n1"
    assert statuses.nominated_status(pod, "n1") is None
    assert statuses.nominated_status(pod, "n2") == {"nominatedNodeName": "n2"}
