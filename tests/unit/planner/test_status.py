"""PodGroup status: phase and counts derived from members, told on change."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from services.binder import statuses
from services.contracts.decisions import StatusUpdate
from services.contracts.events import GroupBound, PodGroupDeleted
from services.planner.core import status
from tests.unit.planner.builders import PodBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

COSCHEDULING_API = "scheduling.x-k8s.io/v1alpha1"
NATIVE_API = "scheduling.k8s.io/v1alpha2"
NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def prebound(count: int, phase: str, group: str | None = "g", prefix: str = "g"
             ) -> list[PodBuilder]:
    pods = [make_pod(f"{prefix}-{i}").on_node("n0", phase) for i in range(count)]
    return [pod.in_group(group) for pod in pods] if group else pods


def latest(cluster: Cluster, group: str = "default/g") -> tuple[str, tuple[int, int, int]]:
    update = cluster.statuses(group)[-1]
    return update.phase, (update.running, update.succeeded, update.failed)


def start(*pods: PodBuilder, min_member: int = 3) -> Cluster:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", min_member), *pods)
    cluster.plan()
    return cluster


def test_b1_pending_then_running() -> None:
    cluster = start(*prebound(3, "Pending"))
    assert latest(cluster) == ("Scheduling", (0, 0, 0))
    for i in range(3):
        cluster.set_phase(f"g-{i}", "Running")
    cluster.plan()
    assert latest(cluster) == ("Running", (3, 0, 0))


def test_b2_running_then_all_succeeded_is_finished() -> None:
    cluster = start(*prebound(3, "Running"))
    assert latest(cluster) == ("Running", (3, 0, 0))
    for i in range(3):
        cluster.set_phase(f"g-{i}", "Succeeded")
    cluster.plan()
    assert latest(cluster) == ("Finished", (0, 3, 0))


def test_b3_one_succeeded_stays_running() -> None:
    cluster = start(*prebound(3, "Running"))
    cluster.set_phase("g-0", "Succeeded")
    cluster.plan()
    assert latest(cluster) == ("Running", (2, 1, 0))


def test_b4_one_failed_below_min_is_failed() -> None:
    cluster = start(*prebound(3, "Running"))
    cluster.set_phase("g-0", "Failed")
    cluster.plan()
    assert latest(cluster) == ("Failed", (2, 0, 1))


def test_b5_pods_without_the_label_leave_the_group_pending() -> None:
    cluster = start(*prebound(3, "Running", group=None))
    assert latest(cluster) == ("Pending", (0, 0, 0))


def test_b6_a_failure_with_quorum_still_met_stays_running() -> None:
    cluster = start(*prebound(3, "Running"), *prebound(1, "Failed", prefix="extra"))
    assert latest(cluster) == ("Running", (3, 0, 1))


def test_b7_a_podgroup_whose_pods_were_deleted_is_pending() -> None:
    cluster = start(*prebound(3, "Running"))
    for i in range(3):
        cluster.delete_pod(f"g-{i}")
    cluster.plan()
    assert latest(cluster) == ("Pending", (0, 0, 0))


@pytest.mark.parametrize(("counts", "expected"), [
    ((2, 0, 0, 0), "Pending"), ((3, 0, 0, 0), "Scheduling"), ((3, 2, 1, 0), "Running"),
    ((3, 0, 3, 0), "Finished"), ((3, 2, 0, 1), "Failed"), ((4, 3, 0, 1), "Running"),
])
def test_phase_rules(counts: tuple[int, int, int, int], expected: str) -> None:
    assert status.phase(*counts, min_member=3) == expected


def test_status_is_told_only_when_it_changes() -> None:
    cluster = start(*prebound(3, "Running"))
    assert len(cluster.statuses("default/g")) == 1
    cluster.advance(1)
    cluster.plan()
    assert len(cluster.statuses("default/g")) == 1


def test_status_carries_occupied_by_schedule_start_and_the_waiting_reason() -> None:
    pods = [make_pod(f"g-{i}").requests(cpu_milli=5000).in_group("g").owned_by("train")
            for i in range(2)]
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 2))
    cluster.advance(2).observe(*pods)
    cluster.plan()
    update = cluster.statuses("default/g")[-1]
    assert isinstance(update, StatusUpdate)
    assert update.occupied_by == "default/train"
    assert update.schedule_start_ms == 2000
    assert update.condition_reason == "Unschedulable"
    assert update.condition_message.startswith("gang default/g: 1 of 2 members fit")


def test_condition_says_waiting_once_nobody_waits() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000), make_podgroup("g", 1),
                                make_pod("g-0").requests(cpu_milli=2000).in_group("g"))
    cluster.plan()
    assert cluster.statuses("default/g")[-1].condition_reason == "Unschedulable"
    cluster.delete_pod("g-0")
    cluster.plan()
    update = cluster.statuses("default/g")[-1]
    assert (update.condition_reason, update.condition_message) == (
        "Waiting", "gang default/g: 0 of 1 members bound; no member pod exists")


def test_condition_says_binding_while_placed_then_scheduled_once_bound() -> None:
    cluster = start(*(make_pod(f"g-{i}").in_group("g") for i in range(3)))
    binding = cluster.statuses("default/g")[-1]
    assert (binding.phase, binding.condition_reason, binding.condition_message) == (
        "Scheduling", "Binding", "gang default/g: placement attempt 1 is being bound")
    cluster.bind(list(cluster.placements()))
    cluster.plan()
    update = cluster.statuses("default/g")[-1]
    assert (update.phase, update.condition_reason, update.condition_message) == (
        "Running", "Scheduled", "gang default/g: 3 members bound (minMember 3)")


def test_condition_says_scheduled_once_the_binder_reports_bound_before_the_watch_does() -> None:
    """The binder's GroupBound comes before the watch shows the pods bound: the condition goes
    from Binding to Scheduled at once (it went back to Waiting, "0 of 3 members bound", until
    the watch caught up), and the pods observed bound later change nothing."""
    cluster = start(*(make_pod(f"g-{i}").in_group("g") for i in range(3)))
    placement = cluster.placements()[-1]
    told = len(cluster.statuses("default/g"))
    cluster.apply(GroupBound(at_ms=cluster.now_ms, decision_id=placement.id, group="default/g"))
    cluster.plan()
    update = cluster.statuses("default/g")[-1]
    assert len(cluster.statuses("default/g")) == told + 1
    assert (update.phase, update.condition_reason, update.condition_message) == (
        "Scheduling", "Scheduled", "gang default/g: 3 members bound (minMember 3)")
    for member in placement.members:
        pod = cluster.state.pods[member.pod_uid]
        cluster.apply(msgspec.structs.replace(pod, node_name=member.node, at_ms=cluster.now_ms))
    cluster.plan()
    assert len(cluster.statuses("default/g")) == told + 1


def test_a_rolled_back_placement_is_not_counted_bound() -> None:
    """Members whose placement was rolled back hold no reservation: not bound, not Scheduled."""
    cluster = start(*(make_pod(f"g-{i}").in_group("g") for i in range(3)))
    cluster.roll_back(cluster.placements()[-1])
    cluster.plan()
    update = cluster.statuses("default/g")[-1]
    assert update.condition_reason == "Unschedulable"
    assert "rolled back" in update.condition_message


def test_an_expired_placement_is_not_counted_bound_nor_its_late_group_bound() -> None:
    """A placement past its deadline and grace is released: its members are not bound, and a
    GroupBound arriving after that (the binder late) changes nothing."""
    cluster = start(*(make_pod(f"g-{i}").in_group("g") for i in range(3)))
    placement = cluster.placements()[-1]
    cluster.advance(3600)
    cluster.plan()
    assert not cluster.state.placements
    assert not any(status.is_reported_bound(cluster.state, member.pod_uid)
                   for member in placement.members)
    expired = cluster.statuses("default/g")[-1]
    assert expired.condition_reason == "Unschedulable"
    assert "was neither bound nor rolled back" in expired.condition_message
    cluster.apply(GroupBound(at_ms=cluster.now_ms, decision_id=placement.id, group="default/g"))
    cluster.plan()
    assert cluster.statuses("default/g")[-1] == expired


def test_prebound_members_are_scheduled() -> None:
    cluster = start(*prebound(3, "Running"))
    update = cluster.statuses("default/g")[-1]
    assert (update.condition_reason, update.condition_message) == (
        "Scheduled", "gang default/g: 3 members bound (minMember 3)")


def test_singletons_and_missing_podgroups_get_no_status() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("solo"),
                                make_pod("orphan").in_group("nowhere"))
    cluster.run()
    assert [d for d in cluster.decisions if isinstance(d, StatusUpdate)] == []


def test_a_finished_group_whose_pods_are_deleted_stays_finished() -> None:
    """Pod garbage collection (a Job's TTL) deletes the Succeeded members: the run's end
    stands, as Coscheduling's controller never leaves Finished; nothing more is told."""
    cluster = start(*prebound(3, "Succeeded"))
    told = cluster.statuses("default/g")
    assert latest(cluster) == ("Finished", (0, 3, 0))
    for i in range(3):
        cluster.delete_pod(f"g-{i}")
        cluster.plan()
    assert cluster.statuses("default/g") == told


def test_a_failed_group_whose_other_members_are_deleted_stays_failed() -> None:
    """A Job with backoffLimit 0 deletes its running pods once one fails."""
    cluster = start(*prebound(3, "Running"))
    cluster.set_phase("g-0", "Failed")
    cluster.plan()
    assert latest(cluster) == ("Failed", (2, 0, 1))
    cluster.delete_pod("g-1")
    cluster.delete_pod("g-2")
    cluster.plan()
    assert latest(cluster) == ("Failed", (2, 0, 1))


def test_an_ended_group_with_a_live_member_again_is_derived_from_its_members() -> None:
    """Pods of a new run (or a replacement) make the phase follow the members again."""
    cluster = start(*prebound(3, "Succeeded"))
    for i in range(3):
        cluster.delete_pod(f"g-{i}")
    cluster.observe(make_pod("g-new").in_group("g"))
    cluster.plan()
    assert latest(cluster) == ("Pending", (0, 0, 0))


def test_a_podgroup_made_anew_is_told_its_own_status() -> None:
    """Deleted and created again (another uid) after its run ended: the new object's status
    is told from its members, not the old run's Finished."""
    cluster = start(*prebound(3, "Succeeded"))
    for i in range(3):
        cluster.delete_pod(f"g-{i}")
    cluster.plan()
    cluster.observe(make_podgroup("g", 3).uid("uid-pg-second"))
    cluster.plan()
    assert latest(cluster) == ("Pending", (0, 0, 0))


def test_members_beyond_min_member_that_do_not_fit_leave_the_group_scheduled() -> None:
    """minMember 3 bound and a fourth member that does not fit: the gang is Scheduled (as
    Coscheduling does not reject a group whose minMember are assigned), the extra member's
    wait in the message; while its placement is bound, Binding (the condition was
    Unschedulable throughout, which the binder wrote as status True with reason Unschedulable
    once the pods ran)."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=6000),
                                make_podgroup("g", 3))
    cluster.observe(*(make_pod(f"g-{i}").requests(cpu_milli=2000).in_group("g")
                      for i in range(4)))
    placed = cluster.plan()
    binding = cluster.statuses("default/g")[-1]
    assert (binding.condition_reason, binding.condition_message) == (
        "Binding", "gang default/g: placement attempt 1 is being bound")
    cluster.bind(placed)
    cluster.plan()
    update = cluster.statuses("default/g")[-1]
    assert (update.phase, update.condition_reason, update.condition_message) == (
        "Running", "Scheduled", "gang default/g: minMember 3 reached; 1 more member(s) do "
        "not fit; 0/1 nodes are available: 1 Insufficient cpu.")


@pytest.mark.parametrize("old", ["terminating", "another scheduler's"])
def test_members_quorum_does_not_count_do_not_make_the_group_scheduled(old: str) -> None:
    """Two bound pods carrying the label, terminating or bound by another scheduler, and two
    members of ours that do not fit: quorum counts neither old pod, so the gang is
    Unschedulable (it read Scheduled, which the binder wrote as status True). The old pods
    run, so the phase is Running as Coscheduling counts it; the condition the binder writes
    is still False (it read True beside the reason Unschedulable, and the native
    PodGroupScheduled read Scheduled)."""
    olds = [make_pod(f"old-{i}").requests(cpu_milli=1000).on_node("n0", "Running").in_group("g")
            for i in range(2)]
    olds = [p.deleting() if old == "terminating" else p.scheduler("default-scheduler")
            for p in olds]
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=2000), make_podgroup("g", 2),
                                *olds, *(make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g")
                                         for i in range(2)))
    cluster.plan()
    update = cluster.statuses("default/g")[-1]
    assert (update.phase, update.condition_reason, update.condition_message) == (
        "Running", "Unschedulable", "gang default/g: 0 of 2 members fit; 0/1 nodes are "
        "available: 1 Insufficient cpu.")
    for api, condition in [(COSCHEDULING_API, ("Scheduled", "False", "Unschedulable")),
                           (NATIVE_API, ("PodGroupScheduled", "False", "Unschedulable"))]:
        patch = statuses.podgroup_status(update, {"apiVersion": api, "status": {}}, NOW)
        assert patch is not None
        assert [(c["type"], c["status"], c["reason"]) for c in patch["conditions"]] == [
            condition]


@pytest.mark.parametrize("extra", ["Running", "terminating"])
def test_a_finished_group_stays_finished_beside_a_member_of_its_run_still_there(
        extra: str) -> None:
    """minMember 2: two members Succeeded, a third still running (or terminating) when the
    finished two are deleted: the run's end stands; only a member waiting to run (a
    replacement, a new run) makes the status follow the members again."""
    third = make_pod("g-2").on_node("n0", "Running").in_group("g")
    cluster = start(*prebound(2, "Succeeded"),
                    third.deleting() if extra == "terminating" else third, min_member=2)
    assert latest(cluster) == ("Finished", (1, 2, 0))
    cluster.delete_pod("g-0")
    cluster.delete_pod("g-1")
    cluster.plan()
    assert latest(cluster) == ("Finished", (1, 2, 0))


def test_a_podgroup_made_anew_does_not_keep_the_old_objects_schedule_start_time() -> None:
    """A gang ran, a replacement that does not fit waits, the PodGroup is deleted and made
    anew 100 s later: the new object's scheduleStartTime is its own first attempt (it was
    the old object's, earlier than the new one's creation)."""
    cluster = Cluster().observe(*(make_node(f"n{i}").capacity(cpu_milli=1000) for i in range(2)),
                                make_podgroup("g", 2),
                                *(make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g")
                                  for i in range(2)))
    cluster.run()
    assert cluster.statuses("default/g")[-1].schedule_start_ms == 0
    cluster.delete_pod("g-1")
    cluster.observe(make_pod("g-1b").requests(cpu_milli=5000).in_group("g"))
    cluster.plan()
    cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid="uid-pg-default-g",
                                  namespace="default", name="g"))
    cluster.plan()
    cluster.advance(100)
    cluster.observe(make_podgroup("g", 2).uid("uid-pg-2").created(cluster.now_ms))
    cluster.plan()
    assert cluster.statuses("default/g")[-1].schedule_start_ms == 100_000


@pytest.mark.parametrize("api", [COSCHEDULING_API, NATIVE_API])
def test_a_native_group_of_another_schedulers_pods_gets_no_status_until_a_pod_of_ours_joins(
        api: str) -> None:
    """Three bound, running members of kube-scheduler's (`schedulerName: default-scheduler`),
    as in a native PodGroup kube-scheduler gangs (GenericWorkload, GangScheduling):
    kube-scheduler writes its `PodGroupScheduled` condition, so gangsched tells nothing (it
    wrote `gang ...: 3 members bound` over kube-scheduler's condition). A pod of ours joining
    makes the group gangsched's to tell again. A Coscheduling PodGroup is told throughout,
    as scheduler-plugins' PodGroup controller counts every pod with the label."""
    olds = [make_pod(f"k-{i}").on_node("n0", "Running").in_group("g")
            .scheduler("default-scheduler") for i in range(3)]
    cluster = Cluster().observe(make_node("n0"),
                                make_podgroup("g", 3).api_version(api), *olds)
    cluster.plan()
    cluster.set_phase("k-0", "Succeeded")
    cluster.plan()
    told = [(u.phase, u.running, u.succeeded) for u in cluster.statuses("default/g")]
    assert told == ([] if api == NATIVE_API else [("Running", 3, 0), ("Running", 2, 1)])
    cluster.observe(make_pod("ours").in_group("g"))
    cluster.plan()
    update = cluster.statuses("default/g")[-1]
    assert (update.phase, update.running, update.succeeded, update.condition_reason) == (
        "Running", 2, 1, "Scheduled")
