"""`gangsched simulate` creates a workload's pods when its controller would
(services/planner/simulate/workload_controllers.py): none for a suspended Job or a paused
Deployment; an OrderedReady StatefulSet's one at a time, each once the one before is bound
(Running and Ready, as simulated), so a gang that needs several of them at once deadlocks as on
a cluster, and one of minMember 1 binds them ordinal by ordinal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.simulate import simulate
from services.planner.core.config import PlannerConfig
from services.planner.simulate import engine, manifests
from services.planner.simulate.manifests import Document
from tests.unit.planner.builders import make_node, make_pod, pod_uid
from tests.unit.test_simulate_malformed import refused

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
"""
JOB = NODE + """apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: js}
spec: {minMember: 2}
---
apiVersion: batch/v1
kind: Job
metadata: {name: js}
spec:
  suspend: true
  parallelism: 2
  completions: 2
  template:
    metadata: {labels: {scheduling.x-k8s.io/pod-group: js}}
    spec:
      schedulerName: gangsched
      restartPolicy: Never
      containers: [{name: c, image: pause, resources: {requests: {cpu: "1"}}}]
"""
DEPLOYMENT = NODE + """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  paused: true
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: gangsched
      containers: [{name: c, image: pause, resources: {requests: {cpu: "1"}}}]
"""
STATEFUL_SET = """apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {{name: ss}}
spec: {{minMember: {min_member}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: ss}}
spec:
  replicas: 3{extra}
  serviceName: ss
  selector: {{matchLabels: {{app: ss}}}}
  template:
    metadata: {{labels: {{app: ss, scheduling.x-k8s.io/pod-group: ss}}}}
    spec:
      schedulerName: {scheduler}
      containers: [{{name: c, image: pause, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def run(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    return simulate([path], PlannerConfig())


def stateful_set(min_member: int, extra: str = "", scheduler: str = "gangsched") -> str:
    return NODE + STATEFUL_SET.format(min_member=min_member, extra=extra, scheduler=scheduler)


def bound_at(report: dict[str, Any]) -> dict[str, tuple[str | None, Any]]:
    return {name: (pod["node"], pod["boundAt"]) for name, pod in report["pods"].items()}


def test_a_suspended_job_creates_no_pod(tmp_path: Path) -> None:
    report = run(tmp_path, JOB)
    assert report["pods"] == {}
    assert report["podGroups"]["default/js"]["phase"] == "Pending"


def test_a_job_not_suspended_creates_its_pods(tmp_path: Path) -> None:
    report = run(tmp_path, JOB.replace("suspend: true", "suspend: false"))
    assert [pod["node"] for pod in report["pods"].values()] == ["n1", "n1"]


def test_a_paused_deployment_creates_no_pod(tmp_path: Path) -> None:
    assert run(tmp_path, DEPLOYMENT)["pods"] == {}
    assert len(run(tmp_path, DEPLOYMENT.replace("paused: true", "paused: false"))["pods"]) == 2


def test_a_suspended_jobs_counts_are_checked_all_the_same(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = JOB.replace("parallelism: 2", "parallelism: -1")
    assert refused(tmp_path, text, capsys) == (
        " document 3 (Job js): spec.parallelism: must be an integer >= 0, got -1")


def test_an_ordered_ready_gang_of_three_deadlocks_at_its_first_pod(tmp_path: Path) -> None:
    """The classic Coscheduling + OrderedReady deadlock: ss-1 waits for ss-0 to run, ss-0
    for a quorum of 3."""
    report = run(tmp_path, stateful_set(3))
    assert report["pods"] == {"default/ss-0": {
        "node": None, "group": "default/ss", "boundAt": None,
        "reason": "gang default/ss: 1 of 3 members exist; waiting for quorum (minMember 3)",
        "phase": "Pending", "finishedAt": None}}
    assert report["podGroups"]["default/ss"]["phase"] == "Pending"


def test_an_ordered_ready_gang_of_one_binds_ordinal_by_ordinal(tmp_path: Path) -> None:
    report = run(tmp_path, stateful_set(1))
    assert bound_at(report) == {f"default/ss-{i}": ("n1", 0) for i in range(3)}
    placements = [[member["pod_uid"] for member in decision["members"]]
                  for decision in report["decisions"] if decision["type"] == "Placement"]
    assert placements == [[f"sim-pod-default-ss-{i}"] for i in range(3)]  # one pod each


def test_min_ready_seconds_delays_each_next_ordinal(tmp_path: Path) -> None:
    report = run(tmp_path, stateful_set(1, extra="\n  minReadySeconds: 5"))
    assert bound_at(report) == {"default/ss-0": ("n1", 0), "default/ss-1": ("n1", 5),
                                "default/ss-2": ("n1", 10)}


def test_a_parallel_gang_of_three_binds_at_once(tmp_path: Path) -> None:
    report = run(tmp_path, stateful_set(3, extra="\n  podManagementPolicy: Parallel"))
    assert bound_at(report) == {f"default/ss-{i}": ("n1", 0) for i in range(3)}


def test_an_ordered_ready_set_of_another_scheduler_stays_at_its_first_pod(
        tmp_path: Path) -> None:
    """The simulation binds no pod of another scheduler, so ss-0 never runs: ss-1 never exists."""
    report = run(tmp_path, stateful_set(1, scheduler="default-scheduler"))
    assert report["otherSchedulers"] == [
        "default/ss-0 (schedulerName default-scheduler: not gangsched's, left unscheduled)"]


@pytest.mark.parametrize(("extra", "message"), [
    ("\n  podManagementPolicy: Serial",
     "spec.podManagementPolicy: Invalid value: \"Serial\": must be 'OrderedReady' or "
     "'Parallel'"),
    ("\n  podManagementPolicy: [Parallel]",
     "spec.podManagementPolicy: must be a string, got ['Parallel']"),
    ("\n  minReadySeconds: -1",
     "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"),
    ("\n  minReadySeconds: '5'", "spec.minReadySeconds: must be a 32-bit integer, got '5'"),
])
def test_a_stateful_set_policy_the_api_server_refuses_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, message: str) -> None:
    assert refused(tmp_path, stateful_set(1, extra=extra), capsys) == (
        f" document 3 (StatefulSet ss): {message}")


@pytest.mark.parametrize(("text", "message"), [
    (JOB.replace("suspend: true", "suspend: 'true'"),
     " document 3 (Job js): spec.suspend: must be true or false, got 'true'"),
    (DEPLOYMENT.replace("paused: true", "paused: 1"),
     " document 2 (Deployment web): spec.paused: must be true or false, got 1"),
])
def test_a_hold_field_of_the_wrong_type_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    assert refused(tmp_path, text, capsys) == message


def test_a_held_pod_whose_pod_before_went_is_not_created() -> None:
    """Under minReadySeconds the next ordinal is due later; if the pod before is gone by then
    (not Running: here it Succeeded), the controller does not create it."""
    node = make_node("n").capacity(cpu_milli=4000).build(0)
    first = make_pod("ss-0").requests(cpu_milli=1000).build(0)
    second = make_pod("ss-1").requests(cpu_milli=1000).build(0)
    result = engine.run([engine.Arrival(0, node), engine.Arrival(0, first, runtime_ms=1000),
                         engine.Arrival(0, second, after=pod_uid("ss-0"), ready_ms=5000)],
                        PlannerConfig())
    assert result.pods[pod_uid("ss-0")].finished_at_ms == 1000
    assert pod_uid("ss-1") not in result.state.pods


def test_a_held_pod_is_created_when_the_pod_before_is_bound() -> None:
    node = make_node("n").capacity(cpu_milli=4000).build(0)
    pods = [make_pod(f"ss-{i}").requests(cpu_milli=1000).build(0) for i in range(2)]
    result = engine.run([engine.Arrival(0, node), engine.Arrival(0, pods[0]),
                         engine.Arrival(0, pods[1], after=pod_uid("ss-0"), ready_ms=5000)],
                        PlannerConfig())
    assert [(result.pods[pod.uid].node, result.pods[pod.uid].bound_at_ms) for pod in pods] == [
        ("n", 0), ("n", 5000)]


def test_a_large_replica_set_gets_a_distinct_generated_name_per_pod() -> None:
    """Two of 5,000 five-character suffixes drawn from 27**5 are alike now and then (at 4,652
    replicas in a user's run): the API server refuses the second name, and the controller
    creates the pod again with another. simulate refused the workload as a duplicate."""
    replica_set = yaml.safe_load(REPLICA_SET_OF_5000)
    named_pod = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "big-placeholder"},
                 "spec": {"containers": [{"name": "c", "image": "pause"}]}}
    items, _ = manifests.expand([Document("in.yaml", 1, replica_set),
                                 Document("in.yaml", 2, named_pod)])
    names = [item.obj["metadata"]["name"] for item in items if item.kind == "Pod"]
    assert len(names) == 5001 and len(set(names)) == 5001
    assert all(name.startswith("big-") and len(name) == len("big-") + 5 for name in names[:-1])


REPLICA_SET_OF_5000 = """apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: big}
spec:
  replicas: 5000
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      schedulerName: gangsched
      containers: [{name: c, image: pause, resources: {requests: {cpu: 1m}}}]
"""
