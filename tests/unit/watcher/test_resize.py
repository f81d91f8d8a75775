"""A bound pod being resized in place is charged what it holds, as kube-scheduler charges it
(services/watcher/resize.py): per container the largest of the spec's request, the status's
actuated `resources.requests` and its `allocatedResources`; without the spec when the resize
is Infeasible; the same at the pod level; and through the planner, a node whose pod is still
shrinking does not take a member its spec alone would leave room for."""

from __future__ import annotations

from typing import Any

from services.contracts.decisions import Rejection
from services.watcher import resize, slim
from tests.unit.planner.builders import make_node, make_pod
from tests.unit.planner.harness import Cluster

MI = 2**20


def running(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """A pod bound to n1 with this spec (its containers) and status (besides the phase)."""
    return {"metadata": {"name": "old", "namespace": "ml", "uid": "u-old", "resourceVersion": "3"},
            "spec": {"schedulerName": "default-scheduler", "nodeName": "n1", **spec},
            "status": {"phase": "Running", **status}}


def worker(cpu: str, name: str = "w") -> dict[str, Any]:
    return {"name": name, "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}


def held(name: str, actuated: dict[str, str] | None,
         allocated: dict[str, str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"name": name}
    if actuated is not None:
        status["resources"] = {"requests": actuated}
    if allocated is not None:
        status["allocatedResources"] = allocated
    return status


def cpu_of(obj: dict[str, Any]) -> int:
    return slim.pod_event(obj, 1).requests["cpu"]


def test_a_pod_shrinking_is_charged_what_it_still_holds() -> None:
    # spec says 1 CPU, the kubelet still runs it with 4 and admitted 4
    obj = running({"containers": [worker("1")]},
                  {"containerStatuses": [held("w", {"cpu": "4"}, {"cpu": "4"})]})
    assert cpu_of(obj) == 4000
    assert slim.pod_event(obj, 1).requests["memory"] == 1024 * MI


def test_a_pod_growing_is_charged_its_new_spec_at_once() -> None:
    obj = running({"containers": [worker("4")]},
                  {"containerStatuses": [held("w", {"cpu": "1"}, {"cpu": "1"})]})
    assert cpu_of(obj) == 4000


def test_allocated_counts_when_larger_than_actuated() -> None:
    obj = running({"containers": [worker("1")]},
                  {"containerStatuses": [held("w", {"cpu": "2"}, {"cpu": "3"})]})
    assert cpu_of(obj) == 3000


def test_an_infeasible_resize_leaves_the_spec_out() -> None:
    condition = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
    obj = running({"containers": [worker("64")]},
                  {"containerStatuses": [held("w", {"cpu": "2"}, {"cpu": "2"})],
                   "conditions": [condition]})
    assert cpu_of(obj) == 2000
    deferred = {**condition, "reason": "Deferred"}  # the kubelet may yet grant it: counted
    obj["status"]["conditions"] = [deferred]
    assert cpu_of(obj) == 64000


def test_a_status_without_resources_reads_the_spec_alone() -> None:
    obj = running({"containers": [worker("1")]},
                  {"containerStatuses": [held("w", None, {"cpu": "8"})]})
    assert cpu_of(obj) == 1000  # kube-scheduler reads allocatedResources only beside resources
    assert resize.read(obj["status"]) is None


def test_sidecars_are_charged_what_they_hold_and_plain_init_containers_their_spec() -> None:
    sidecar = {**worker("1", "proxy"), "restartPolicy": "Always"}
    setup = worker("1", "setup")
    obj = running({"containers": [worker("1")], "initContainers": [setup, sidecar]},
                  {"containerStatuses": [held("w", {"cpu": "1"}, {"cpu": "1"})],
                   "initContainerStatuses": [held("setup", {"cpu": "6"}, {"cpu": "6"}),
                                             held("proxy", {"cpu": "3"}, {"cpu": "3"})]})
    # app 1 + sidecar 3 = 4; the plain init container counts its spec (1), not its status
    assert cpu_of(obj) == 4000


def test_pod_level_resources_are_charged_what_the_pod_holds() -> None:
    spec = {"containers": [worker("1")], "resources": {"requests": {"cpu": "2"}}}
    obj = running(spec, {"resources": {"requests": {"cpu": "5"}},
                         "allocatedResources": {"cpu": "5"}})
    assert cpu_of(obj) == 5000


def test_a_malformed_status_quantity_reads_as_no_status() -> None:
    obj = running({"containers": [worker("1")]},
                  {"containerStatuses": [held("w", {"cpu": "lots"}, {"cpu": "4"})]})
    event = slim.pod_event(obj, 1)
    assert event.requests["cpu"] == 1000 and event.invalid_reason is None


def test_a_member_does_not_fit_beside_a_pod_still_shrinking() -> None:
    """8 CPU node; a pod shrinking from 4 to 1 still holds 4; a 6-CPU singleton must wait, with
    kube-scheduler's reason, and fits once the kubelet has actuated the shrink."""
    shrinking = running({"containers": [worker("1")]},
                        {"containerStatuses": [held("w", {"cpu": "4"}, {"cpu": "4"})]})
    cluster = Cluster().observe(make_node("n1").capacity(cpu_milli=8000),
                                slim.pod_event(shrinking, 0),
                                make_pod("m").requests(cpu_milli=6000))
    decisions = cluster.plan()
    assert not cluster.placements()
    assert [d.reason for d in decisions if isinstance(d, Rejection)] == [
        "0/1 nodes are available: 1 Insufficient cpu."]
    shrunk = running({"containers": [worker("1")]},
                     {"containerStatuses": [held("w", {"cpu": "1"}, {"cpu": "1"})]})
    shrunk["metadata"]["resourceVersion"] = "4"
    cluster.observe(slim.pod_event(shrunk, 0))
    cluster.advance(1)  # the pod's first backoff
    cluster.plan()
    assert [m.node for p in cluster.placements() for m in p.members] == ["n1"]


def test_a_status_whatever_its_types_never_raises() -> None:
    """slim's contract: a container status named by a number too long for `str`, a resource
    named so, a status that is no mapping: read as no status, never raised."""
    for status in ({"containerStatuses": [{"name": 10 ** 5000, "resources": {"requests": {}}}]},
                   {"containerStatuses": [held("w", {"cpu": "4"}) | {
                       "resources": {"requests": {10 ** 5000: "4"}}}]},
                   {"containerStatuses": ["w", None, 7]},
                   {"containerStatuses": [{"name": ["w"], "resources": {"requests": {}}}]},
                   {"containerStatuses": {"w": 1}, "resources": "lots"}):
        obj = running({"containers": [worker("1"), {"name": {"not": "text"}}]}, status)
        assert cpu_of(obj) == 1000, status


def test_a_status_stating_the_spec_is_not_read_and_changes_nothing() -> None:
    """The common running pod: the kubelet reports what the spec requests. Not read (a third
    of a pod event's cost), and the requests are the spec's either way."""
    spec = {"containers": [worker("1")], "initContainers": [
        {**worker("250m", "proxy"), "restartPolicy": "Always"}]}
    same = {"containerStatuses": [held("w", {"cpu": "1", "memory": "1Gi"},
                                       {"cpu": "1", "memory": "1Gi"})],
            "initContainerStatuses": [held("proxy", {"cpu": "250m", "memory": "1Gi"})]}
    assert resize.states_spec(same, spec)
    assert resize.read(same) is not None  # what would have been read
    assert cpu_of(running(spec, same)) == 1250
    written_otherwise = {"containerStatuses": [held("w", {"cpu": "1000m", "memory": "1Gi"})]}
    shrinking = {"containerStatuses": [held("w", {"cpu": "4", "memory": "1Gi"})]}
    allocated_more = {"containerStatuses": [held("w", {"cpu": "1", "memory": "1Gi"},
                                                 {"cpu": "2", "memory": "1Gi"})]}
    for status in (written_otherwise, shrinking, allocated_more):
        assert not resize.states_spec(status, spec), status
    assert [cpu_of(running(spec, s)) for s in (written_otherwise, shrinking, allocated_more)] \
        == [1250, 4250, 2250]
