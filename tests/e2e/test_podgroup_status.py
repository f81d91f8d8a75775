"""PodGroup status on the real control plane: phase, counts and condition.

One node, minMember 3; members are pre-bound through `spec.nodeName` (KWOK runs them at once;
a pod is made Succeeded or Failed by patching its status) or, in case 1, bound by gangsched.
The planner derives phase and counts from its log; the binder writes them to the status
subresource, where `kubectl get pg` shows them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests
from tests.support.gangsched_process import GangschedRun, serving
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

NODE = "kwok-node-0"
STATUS_TIMEOUT_SECONDS = 20


@pytest.fixture(scope="module")
def status_gangsched(control_plane: ControlPlane,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangschedRun]:
    """One `gangsched run` for the module: every case lives in its own namespace."""
    with serving(control_plane.kubeconfig, tmp_path_factory.mktemp("gangsched")) as run:
        yield run


def prebound_pod(name: str, group: str | None = "g", cpu: str = "100m") -> dict[str, Any]:
    """A pod already bound to the node (KWOK makes it Running)."""
    return manifests.pod(name, group, cpu, nodeName=NODE)


def apply(cp: ControlPlane, namespace: str, *documents: dict[str, Any]) -> None:
    manifests.apply(cp, namespace, *documents)


def podgroup(name: str) -> dict[str, Any]:
    return manifests.podgroup(name, 3)


def status(cp: ControlPlane, namespace: str, name: str = "g") -> dict[str, Any]:
    result: dict[str, Any] = kube.get_json(cp, "podgroup", name, "-n", namespace).get(
        "status") or {}
    return result


def shows(cp: ControlPlane, namespace: str, phase: str, counts: tuple[int, int, int],
          name: str = "g") -> dict[str, Any]:
    """Wait until the PodGroup's status has `phase` and running/succeeded/failed `counts`."""
    def check() -> dict[str, Any]:
        current = status(cp, namespace, name)
        seen = (current.get("phase"), (current.get("running"), current.get("succeeded"),
                                       current.get("failed")))
        assert seen == (phase, counts), seen
        return current

    result: dict[str, Any] = eventually(check, timeout=STATUS_TIMEOUT_SECONDS, interval=0.25,
                                        what=f"PodGroup {name} {phase} {counts}")
    return result


def running_pods(cp: ControlPlane, namespace: str, count: int) -> list[str]:
    def check() -> list[str]:
        names = sorted(p["metadata"]["name"] for p in kube.running(kube.pods(cp, namespace)))
        assert len(names) == count, names
        return names

    result: list[str] = eventually(check, timeout=30, interval=0.25, what=f"{count} Running")
    return result


def scheduled_condition(current: dict[str, Any]) -> dict[str, Any]:
    found = [c for c in current.get("conditions") or [] if c.get("type") == "Scheduled"]
    assert len(found) == 1, current.get("conditions")
    result: dict[str, Any] = found[0]
    return result


def condition_becomes(cp: ControlPlane, namespace: str, is_true: str, reason: str,
                      name: str = "g") -> dict[str, Any]:
    """Wait until the PodGroup's `Scheduled` condition has this status and reason."""
    def check() -> dict[str, Any]:
        condition = scheduled_condition(status(cp, namespace, name))
        assert (condition["status"], condition["reason"]) == (is_true, reason), condition
        return condition

    result: dict[str, Any] = eventually(check, timeout=STATUS_TIMEOUT_SECONDS, interval=0.25,
                                        what=f"condition Scheduled={is_true} ({reason})")
    return result


def parse_time(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def test_b1_pending_members_bound_by_gangsched_go_from_scheduling_to_running(
        control_plane: ControlPlane, namespace: str, status_gangsched: GangschedRun) -> None:
    started = time.time()
    # A pod of another scheduler takes 8 of the node's 10 CPU: 2 of the 3 members fit.
    blocker = prebound_pod("blocker", group=None, cpu="8")
    blocker["spec"]["schedulerName"] = "default-scheduler"
    apply(control_plane, namespace, blocker)
    running_pods(control_plane, namespace, 1)
    apply(control_plane, namespace, podgroup("g"),
          manifests.replicaset("train", "g", 3, cpu="1"))

    shows(control_plane, namespace, "Scheduling", (0, 0, 0))
    condition = condition_becomes(control_plane, namespace, "False", "Unschedulable")
    assert condition["message"].startswith(f"gang {namespace}/g: 2 of 3 members fit"), condition
    waiting = status(control_plane, namespace)
    start = parse_time(waiting["scheduleStartTime"])
    assert started - 1 <= start <= time.time(), (started, waiting)
    assert waiting["occupiedBy"] == f"{namespace}/train"
    assert kube.bound([p for p in kube.pods(control_plane, namespace)
                       if p["metadata"]["name"] != "blocker"]) == []

    control_plane.kubectl("delete", "pod", "blocker", "-n", namespace, "--grace-period=0",
                          "--force")
    done = shows(control_plane, namespace, "Running", (3, 0, 0))
    assert done["scheduleStartTime"] == waiting["scheduleStartTime"]
    assert done["occupiedBy"] == f"{namespace}/train"
    condition = condition_becomes(control_plane, namespace, "True", "Scheduled")
    assert condition["message"] == f"gang {namespace}/g: 3 members bound (minMember 3)"


def test_b2_all_members_succeeded_is_finished(
        control_plane: ControlPlane, namespace: str, status_gangsched: GangschedRun) -> None:
    apply(control_plane, namespace, podgroup("g"), *(prebound_pod(f"m{i}") for i in range(3)))
    shows(control_plane, namespace, "Running", (3, 0, 0))
    for i in range(3):
        manifests.set_phase(control_plane, namespace, f"m{i}", "Succeeded")
    shows(control_plane, namespace, "Finished", (0, 3, 0))


def test_b2_a_finished_group_stays_finished_once_its_pods_are_deleted(
        control_plane: ControlPlane, namespace: str, status_gangsched: GangschedRun) -> None:
    """A Job's TTL or pod garbage collection deletes the Succeeded members: the run's end
    stands, as Coscheduling's controller never leaves Finished."""
    apply(control_plane, namespace, podgroup("g"), *(prebound_pod(f"m{i}") for i in range(3)))
    shows(control_plane, namespace, "Running", (3, 0, 0))
    for i in range(3):
        manifests.set_phase(control_plane, namespace, f"m{i}", "Succeeded")
    shows(control_plane, namespace, "Finished", (0, 3, 0))
    control_plane.kubectl("delete", "pods", "--all", "-n", namespace, "--grace-period=0",
                          "--force")
    eventually(lambda: kube.pods(control_plane, namespace) == [], timeout=30,
               what="pods deleted")

    def still_finished() -> bool:
        current = status(control_plane, namespace)
        seen = (current.get("phase"), (current.get("running"), current.get("succeeded"),
                                       current.get("failed")))
        assert seen == ("Finished", (0, 3, 0)), seen
        return True

    # a status write waits out a settle time of 3 s: a wrong one would land well within 8
    consistently(still_finished, duration=8, what="Finished 0/3/0")


def test_b3_one_member_succeeded_stays_running(
        control_plane: ControlPlane, namespace: str, status_gangsched: GangschedRun) -> None:
    apply(control_plane, namespace, podgroup("g"), *(prebound_pod(f"m{i}") for i in range(3)))
    shows(control_plane, namespace, "Running", (3, 0, 0))
    manifests.set_phase(control_plane, namespace, "m0", "Succeeded")
    shows(control_plane, namespace, "Running", (2, 1, 0))


def test_b4_one_member_failed_below_min_member_is_failed_and_kubectl_shows_it(
        control_plane: ControlPlane, namespace: str, status_gangsched: GangschedRun) -> None:
    apply(control_plane, namespace, podgroup("g"), *(prebound_pod(f"m{i}") for i in range(3)))
    shows(control_plane, namespace, "Running", (3, 0, 0))
    manifests.set_phase(control_plane, namespace, "m1", "Failed")
    shows(control_plane, namespace, "Failed", (2, 0, 1))

    table = control_plane.kubectl("get", "pg", "-n", namespace).splitlines()
    assert table[0].split() == ["NAME", "PHASE", "MINMEMBER", "RUNNING", "SUCCEEDED", "FAILED",
                                "AGE"], table
    assert table[1].split()[:6] == ["g", "Failed", "3", "2", "0", "1"], table


def test_b5_pods_without_the_label_leave_the_group_pending(
        control_plane: ControlPlane, namespace: str, status_gangsched: GangschedRun) -> None:
    apply(control_plane, namespace, podgroup("g"),
          *(prebound_pod(f"m{i}", group=None) for i in range(3)))
    running_pods(control_plane, namespace, 3)
    shows(control_plane, namespace, "Pending", (0, 0, 0))
    consistently(lambda: shows(control_plane, namespace, "Pending", (0, 0, 0)), duration=2,
                 what="Pending 0/0/0")


def test_b6_a_failed_member_with_quorum_still_met_stays_running(
        control_plane: ControlPlane, namespace: str, status_gangsched: GangschedRun) -> None:
    apply(control_plane, namespace, podgroup("g"), *(prebound_pod(f"m{i}") for i in range(4)))
    shows(control_plane, namespace, "Running", (4, 0, 0))
    manifests.set_phase(control_plane, namespace, "m3", "Failed")
    shows(control_plane, namespace, "Running", (3, 0, 1))


def test_b7_a_podgroup_whose_pods_were_deleted_is_pending(
        control_plane: ControlPlane, namespace: str, status_gangsched: GangschedRun) -> None:
    apply(control_plane, namespace, podgroup("g"), *(prebound_pod(f"m{i}") for i in range(3)))
    shows(control_plane, namespace, "Running", (3, 0, 0))
    control_plane.kubectl("delete", "pods", "--all", "-n", namespace, "--grace-period=0",
                          "--force")
    eventually(lambda: kube.pods(control_plane, namespace) == [], timeout=30,
               what="pods deleted")
    shows(control_plane, namespace, "Pending", (0, 0, 0))
