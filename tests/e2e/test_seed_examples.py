"""The seed's acceptance examples on the real control plane (the examples/ directory)."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import pytest

from services import __version__
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube
from tests.support.gangsched_process import GangschedRun
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e


def test_testbed_node_is_the_seed_node(control_plane: ControlPlane) -> None:
    seed = kube.demo_node()
    node = kube.get_json(control_plane, "node", seed["metadata"]["name"])
    allocatable = node["status"]["allocatable"]
    assert allocatable["cpu"] == seed["status"]["allocatable"]["cpu"]
    assert allocatable["memory"] == seed["status"]["allocatable"]["memory"]
    assert allocatable["pods"] == seed["status"]["allocatable"]["pods"]


def test_gang_of_min_member_3_runs_exactly_three_of_six(
        control_plane: ControlPlane, namespace: str, gangsched: GangschedRun) -> None:
    control_plane.kubectl("apply", "-f", "-",
                          input=kube.example_documents("nginx-gang.yaml", namespace))

    def three_running_three_pending() -> list[dict[str, Any]]:
        pods = kube.pods(control_plane, namespace)
        assert len(pods) == 6, f"{len(pods)} pods"
        running = kube.running(pods)
        assert len(running) == 3 and len(kube.bound(pods)) == 3, kube.bound(pods)
        return pods

    eventually(three_running_three_pending, timeout=30, what="3 Running and 3 Pending")
    failed = eventually(
        lambda: [e for e in kube.events(control_plane, namespace, "FailedScheduling")
                 if f"gang {namespace}/nginx" in e["message"]],
        timeout=15, what="a FailedScheduling event naming the gang")
    assert failed[0]["reportingComponent"] == "gangsched" or \
        failed[0]["source"].get("component") == "gangsched"
    consistently(three_running_three_pending, duration=10, what="3 Running and 3 Pending")
    _the_work_shows_in_the_metrics(gangsched)


def _the_work_shows_in_the_metrics(gangsched: GangschedRun) -> None:
    """Every metric the seed example exercises has moved (none declared and never observed)."""
    samples = gangsched.metric_samples()

    def value(name: str, **labels: str) -> float:
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    assert value("gangsched_podgroup_scheduling_duration_seconds_count") >= 1
    assert value("gangsched_bind_duration_seconds_count") >= 1
    assert value("gangsched_scheduling_attempt_duration_seconds_count") >= 1
    assert value("gangsched_schedule_attempts_total", result="scheduled") >= 1
    assert value("gangsched_schedule_attempts_total", result="unschedulable") >= 1
    assert value("gangsched_decisions_published_total", type="Placement") >= 1
    assert value("gangsched_events_processed_total", consumer="planner") >= 1
    assert value("gangsched_pending_pods") == 3
    assert value("gangsched_podgroups", phase="Running") >= 1
    assert value("gangsched_kube_requests_total", verb="POST", code="201") >= 3  # bindings
    assert value("gangsched_kube_requests_total", verb="GET", code="200") >= 1  # lists
    assert value("gangsched_build_info", version=__version__,
                 python=platform.python_version()) == 1


def test_gang_of_min_member_4_binds_nothing(
        control_plane: ControlPlane, namespace: str, gangsched: GangschedRun) -> None:
    control_plane.kubectl("apply", "-f", "-", input=kube.example_documents(
        "nginx-gang.yaml", namespace, min_member=4))

    def six_pending_none_bound() -> bool:
        pods = kube.pods(control_plane, namespace)
        assert len(pods) == 6, f"{len(pods)} pods"
        assert kube.bound(pods) == [], [p["metadata"]["name"] for p in kube.bound(pods)]
        return True

    eventually(six_pending_none_bound, timeout=15, what="six pods created")
    eventually(
        lambda: [e for e in kube.events(control_plane, namespace, "FailedScheduling")
                 if f"gang {namespace}/nginx" in e["message"]],
        timeout=15, what="a FailedScheduling event naming the gang")
    consistently(six_pending_none_bound, duration=20, what="all six Pending")


def test_only_the_pod_naming_gangsched_is_bound_by_gangsched(
        control_plane: ControlPlane, namespace: str, gangsched: GangschedRun,
        kube_scheduler: None) -> None:
    control_plane.kubectl("apply", "-n", namespace, "-f",
                          str(kube.EXAMPLES / "multi-scheduler.yaml"))

    eventually(lambda: len(kube.bound(kube.pods(control_plane, namespace))) == 3,
               timeout=30, what="all three pods bound")

    def scheduled_by() -> dict[str, str]:
        found = {}
        for event in kube.events(control_plane, namespace, "Scheduled"):
            component = event.get("reportingComponent") or event["source"].get("component", "")
            found[event["involvedObject"]["name"]] = component
        assert len(found) == 3, found
        return found

    by = eventually(scheduled_by, timeout=15, what="Scheduled events for all three")
    assert by["annotation-second-scheduler"] == "gangsched"
    assert by["no-annotation"] == "default-scheduler"
    assert by["annotation-default-scheduler"] == "default-scheduler"


def test_pod_created_while_gangsched_is_stopped_is_bound_after_it_starts(
        control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    # No kube-scheduler here: the two default-scheduler pods must stay Pending throughout,
    # which also proves gangsched never touches pods that are not its own.
    control_plane.kubectl("apply", "-f", "-", input=kube.example_documents(
        "multi-scheduler.yaml", namespace))

    def names_bound() -> list[str]:
        pods = kube.bound(kube.pods(control_plane, namespace))
        return sorted(pod["metadata"]["name"] for pod in pods)

    consistently(lambda: names_bound() == [], duration=3, what="nothing bound while stopped")
    run = GangschedRun(control_plane.kubeconfig, tmp_path / "gangsched")
    run.start()
    try:
        eventually(lambda: names_bound() == ["annotation-second-scheduler"], timeout=30,
                   what="gangsched's pod bound once gangsched runs")
        consistently(lambda: names_bound() == ["annotation-second-scheduler"], duration=5,
                     what="only gangsched's pod bound")
    finally:
        assert run.stop() == 0, run.log_tail()
