"""Issue 19 on the real control plane: an amount beyond what gangsched counts is refused with
its reason (never clamped into a fit), and `gangsched run`'s files hold no secret while the
audit tools still reach its locked-down embedded NATS."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests
from tests.support.gangsched_process import GangschedRun
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

HUGE_TAINT = {"key": "gangsched-test/huge", "value": "true", "effect": "NoSchedule"}
BEYOND = "cpu 1e+30 is beyond the largest amount gangsched can place"  # as the API server keeps it


@pytest.fixture
def huge_node(control_plane: ControlPlane, namespace: str) -> Iterator[str]:
    """A KWOK node of 1e15 CPUs, tainted so that only this test's pods may go there. Clamped
    to 2**48, it used to fit a pod requesting 1e30 CPUs."""
    name = f"huge-{namespace}"
    node = manifests.kwok_node(name, cpu="1e15", labels={"gangsched-test": namespace})
    node["spec"] = {"taints": [HUGE_TAINT]}
    manifests.apply(control_plane, None, node)
    try:
        yield name
    finally:
        control_plane.kubectl("delete", "node", name, "--ignore-not-found")


def huge_pod(name: str, cpu: str, namespace: str) -> dict[str, Any]:
    """A pod that may go to the huge node only."""
    toleration = {"key": HUGE_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}
    return manifests.pod(name, None, cpu, nodeSelector={"gangsched-test": namespace},
                         tolerations=[toleration])


def pod_scheduled(cp: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    pod = kube.get_json(cp, "pod", name, "-n", namespace)
    found = [c for c in pod.get("status", {}).get("conditions") or []
             if c["type"] == "PodScheduled"]
    assert found, pod.get("status")
    condition: dict[str, Any] = found[0]
    return condition


def failed_scheduling(cp: ControlPlane, namespace: str, name: str) -> list[str]:
    return [event["message"] for event in kube.events(cp, namespace, "FailedScheduling")
            if event["involvedObject"]["name"] == name]


def test_a_pod_requesting_1e30_cpus_is_not_bound_to_a_node_of_1e15_and_says_why(
        control_plane: ControlPlane, namespace: str, gangsched: GangschedRun,
        huge_node: str) -> None:
    manifests.apply(control_plane, namespace, huge_pod("huge", "1e30", namespace),
                    huge_pod("fits", "1e11", namespace))
    eventually(lambda: kube.bound(kube.pods(control_plane, namespace)), timeout=30,
               what="the pod that fits bound")
    assert [p["metadata"]["name"] for p in kube.bound(kube.pods(control_plane, namespace))] == [
        "fits"]

    def told() -> dict[str, Any]:
        condition = pod_scheduled(control_plane, namespace, "huge")
        assert condition["status"] == "False" and BEYOND in condition["message"], condition
        return condition

    eventually(told, timeout=30, interval=0.5, what="PodScheduled names the amount")
    eventually(lambda: any(BEYOND in m for m in failed_scheduling(control_plane, namespace,
                                                                  "huge")),
               timeout=30, what="a FailedScheduling event naming the amount")
    consistently(lambda: not kube.get_json(control_plane, "pod", "huge", "-n", namespace)[
        "spec"].get("nodeName"), duration=3, what="the 1e30 pod stays unbound")


def gangsched_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli.main", *args],
                          capture_output=True, text=True, timeout=120)


def test_run_json_is_private_without_secrets_and_decisions_still_reads_the_embedded_nats(
        control_plane: ControlPlane, namespace: str, gangsched: GangschedRun) -> None:
    run_json = gangsched.data_dir / "run.json"
    credentials = gangsched.data_dir / "nats-credentials.json"
    assert stat.S_IMODE(run_json.stat().st_mode) == 0o600
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    password = json.loads(credentials.read_text())["password"]
    assert password not in run_json.read_text()
    assert "@" not in json.loads(run_json.read_text())["nats"]

    manifests.apply(control_plane, namespace, manifests.pod("solo", None))

    def listed() -> str:
        result = gangsched_cli("decisions", "--data-dir", str(gangsched.data_dir))
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"{namespace}/pod:solo" in result.stdout, result.stdout
        return result.stdout

    eventually(listed, timeout=30, interval=1, what="decisions lists the pod's placement")
