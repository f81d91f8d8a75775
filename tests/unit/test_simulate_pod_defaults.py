"""`gangsched simulate` sets in each pod it reads or makes what the API server sets on creation
(services/planner/simulate/pod_defaults.py): a hostNetwork pod's container ports become host
ports (`SetDefaults_Pod`), so NodePorts keeps two such pods off one node; and the
DefaultTolerationSeconds admission plugin's tolerations of the not-ready and unreachable
NoExecute taints, so a pod binds to a node tainted so, as kube-scheduler binds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.simulate import simulate
from services.planner.core.config import PlannerConfig
from services.planner.simulate import manifests, pod_defaults
from services.planner.simulate.manifests import Document
from tests.unit.test_simulate_malformed import NODE, refused

HOST_NETWORK_JOB = """apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train}
spec: {minMember: 2}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata: {labels: {scheduling.x-k8s.io/pod-group: train}}
    spec:
      schedulerName: gangsched
      hostNetwork: true
      restartPolicy: Never
      containers:
      - name: c
        image: pause
        ports: [{containerPort: 29500}]
        resources: {requests: {cpu: "1"}}
"""
"""A Job of two hostNetwork pods, each with containerPort 29500 and no hostPort, on one node."""
PORTS_TAKEN = ("0/1 nodes are available: 1 node(s) didn't have free ports for the requested "
               "pod ports.")
UNREACHABLE_NODE = """{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
 "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
 "spec": {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]}}
---
"""
POD = """apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  schedulerName: gangsched{extra}
  containers: [{{name: c, image: pause, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def run(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    return simulate([path], PlannerConfig())


def pod_specs(text: str) -> list[dict[str, Any]]:
    """The spec of each pod `manifests.expand` reads or makes of `text`."""
    documents = [Document("in.yaml", i + 1, body) for i, body in enumerate(
        yaml.safe_load_all(text))]
    return [item.obj["spec"] for item in manifests.expand(documents)[0] if item.kind == "Pod"]


def test_two_host_network_pods_of_one_port_do_not_share_a_node(tmp_path: Path) -> None:
    pods = run(tmp_path, HOST_NETWORK_JOB)["pods"]
    assert len(pods) == 2
    assert all(pod["node"] is None for pod in pods.values())
    assert {pod["reason"] for pod in pods.values()} == {
        f"gang default/train: 1 of 2 members fit; {PORTS_TAKEN}"}


def test_without_host_network_the_same_pods_share_the_node(tmp_path: Path) -> None:
    pods = run(tmp_path, HOST_NETWORK_JOB.replace("hostNetwork: true", "hostNetwork: false"))
    assert [pod["node"] for pod in pods["pods"].values()] == ["n1", "n1"]


def test_a_host_network_pods_ports_are_defaulted_as_set_defaults_pod_does() -> None:
    spec: dict[str, Any] = {
        "hostNetwork": True,
        "containers": [{"name": "c", "ports": [{"containerPort": 80}, {"containerPort": 81,
                                                                        "hostPort": 81},
                                               {"name": "none"}]}],
        "initContainers": [{"name": "i", "ports": [{"containerPort": 90, "hostPort": 0}]}]}
    pod_defaults.default_host_network_ports(spec)
    assert spec["containers"][0]["ports"] == [
        {"containerPort": 80, "hostPort": 80}, {"containerPort": 81, "hostPort": 81},
        {"name": "none"}]
    assert spec["initContainers"][0]["ports"] == [{"containerPort": 90, "hostPort": 90}]


def test_a_pod_without_host_network_keeps_its_ports() -> None:
    spec: dict[str, Any] = {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}
    pod_defaults.default_host_network_ports(spec)
    assert spec["containers"][0]["ports"] == [{"containerPort": 80}]


def test_the_pods_of_a_host_network_template_get_host_ports() -> None:
    """The template is not defaulted (`SetDefaults_PodSpec`), each pod made of it is."""
    specs = pod_specs(HOST_NETWORK_JOB)
    assert [spec["containers"][0]["ports"] for spec in specs] == [
        [{"containerPort": 29500, "hostPort": 29500}]] * 2


@pytest.mark.parametrize(("text", "message"), [
    (NODE + POD.format(extra="\n  hostNetwork: true").replace(
        "image: pause,", "image: pause, ports: [{containerPort: 80, hostPort: 8080}],"),
     " document 2 (Pod default/p): spec.containers[0].ports[0].hostPort: Invalid value: 8080: "
     "must match `containerPort` when `hostNetwork` is true"),
    (HOST_NETWORK_JOB.replace("containerPort: 29500", "containerPort: 29500, hostPort: 1"),
     " document 3 (Job train): spec.template.spec.containers[0].ports[0].hostPort: Invalid "
     "value: 1: must match `containerPort` when `hostNetwork` is true"),
])
def test_a_host_port_other_than_the_container_port_on_host_network_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    assert refused(tmp_path, text, capsys) == message


@pytest.mark.parametrize(("text", "message"), [
    (POD.format(extra="\n  hostNetwork: 'true'"),
     "spec.hostNetwork: must be true or false, got 'true'"),
    (POD.format(extra="").replace(
        "image: pause,", "image: pause, ports: [{containerPort: '80'}],"),
     "spec.containers[0].ports[0].containerPort: must be a 32-bit integer, got '80'"),
])
def test_a_host_network_field_of_the_wrong_type_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    assert refused(tmp_path, NODE + text, capsys) == f" document 2 (Pod default/p): {message}"


def test_a_pod_binds_to_an_unreachable_node_as_default_toleration_seconds_lets_it(
        tmp_path: Path) -> None:
    pods = run(tmp_path, UNREACHABLE_NODE + POD.format(extra=""))["pods"]
    assert pods["default/p"]["node"] == "n1"


def test_a_no_schedule_taint_is_still_untolerated(tmp_path: Path) -> None:
    node = UNREACHABLE_NODE.replace('"NoExecute"', '"NoSchedule"')
    pods = run(tmp_path, node + POD.format(extra=""))["pods"]
    assert pods["default/p"]["reason"] == (
        "0/1 nodes are available: 1 node(s) had untolerated taint(s).")


def test_every_pod_read_or_made_gets_the_two_default_tolerations() -> None:
    added = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
              "effect": "NoExecute", "tolerationSeconds": 300},
             {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
              "effect": "NoExecute", "tolerationSeconds": 300}]
    specs = pod_specs(HOST_NETWORK_JOB + "---\n" + POD.format(extra=""))
    assert [spec["tolerations"] for spec in specs] == [added] * 3


@pytest.mark.parametrize(("given", "added"), [
    ([], ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]),
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 60}], ["node.kubernetes.io/unreachable"]),
    ([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}],  # any effect
     ["node.kubernetes.io/not-ready"]),
    ([{"operator": "Exists"}], []),  # every taint
    ([{"operator": "Exists", "effect": "NoExecute"}], []),
    ([{"operator": "Exists", "effect": "NoSchedule"}],
     ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]),
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
     ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]),
])
def test_a_toleration_already_given_is_not_added_again(
        given: list[dict[str, Any]], added: list[str]) -> None:
    spec: dict[str, Any] = {"tolerations": [dict(t) for t in given]}
    pod_defaults.add_default_tolerations(spec)
    assert spec["tolerations"][:len(given)] == given
    assert [t["key"] for t in spec["tolerations"][len(given):]] == added
