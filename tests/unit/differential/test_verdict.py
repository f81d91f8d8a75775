"""gangsched's verdict as the differential test asks for it: on API objects, through slim and
the simulation engine; `feasible_on` makes one node the only Ready one, and pods on the other
nodes must still count (inter-pod anti-affinity), or the check would pass wrongly."""

from __future__ import annotations

from typing import Any

from tests.e2e.differential import verdict


def node(name: str, zone: str, cpu: str = "4") -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1",
                         "labels": {"kubernetes.io/hostname": name, "zone": zone}},
            "spec": {}, "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}}}


def pod(name: str, cpu: str, node_name: str | None = None, **spec: Any) -> dict[str, Any]:
    body = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "resourceVersion": "1", "labels": {"app": name}},
            "spec": body, "status": {"phase": "Running" if node_name else "Pending"}}


NODES = [node("n0", "a"), node("n1", "a"), node("n2", "b")]


def test_a_pod_is_placed_where_it_fits_and_refused_with_kube_scheduler_counts():
    bound = [pod("big", "3", "n0"), pod("other", "3", "n2")]
    slimmer = verdict.Slimmer()
    assert verdict.judge(slimmer, NODES, bound, pod("p", "2")) == verdict.Verdict("n1", None)
    assert verdict.judge(slimmer, NODES, bound, pod("q", "5")) == verdict.Verdict(
        None, "0/3 nodes are available: 3 Insufficient cpu.")


def test_feasible_on_judges_one_node_alone():
    bound = [pod("big", "3", "n0")]
    slimmer = verdict.Slimmer()
    assert verdict.feasible_on(slimmer, NODES, bound, pod("p", "2"), "n2").node == "n2"
    alone = verdict.feasible_on(slimmer, NODES, bound, pod("p", "2"), "n0")
    assert alone.node is None
    assert alone.reason == ("0/3 nodes are available: 1 Insufficient cpu, "
                            "2 node(s) were not ready.")


def test_pods_on_the_nodes_made_not_ready_still_count_for_anti_affinity():
    bound = [pod("web", "1", "n0")]
    shy = pod("shy", "1", affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}]}})
    slimmer = verdict.Slimmer()
    assert verdict.feasible_on(slimmer, NODES, bound, shy, "n1").node is None
    assert verdict.feasible_on(slimmer, NODES, bound, shy, "n2").node == "n2"
