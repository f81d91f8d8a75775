"""gangsched's verdict as the differential test asks for it: on API objects, through slim and
the simulation engine; `feasible_on` makes one node the only Ready one, and pods on the other
nodes must still count (inter-pod anti-affinity, topology spread domains), or the check would
pass wrongly; claims, volumes and classes are slimmed with the watcher's functions."""

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


def test_a_pod_is_placed_where_it_fits_and_refused_with_kube_scheduler_counts() -> None:
    snapshot = verdict.Snapshot(NODES, [pod("big", "3", "n0"), pod("other", "3", "n2")])
    slimmer = verdict.Slimmer()
    assert verdict.judge(slimmer, snapshot, pod("p", "2")) == verdict.Verdict("n1", None)
    assert verdict.judge(slimmer, snapshot, pod("q", "5")) == verdict.Verdict(
        None, "0/3 nodes are available: 3 Insufficient cpu.")


def test_feasible_on_judges_one_node_alone() -> None:
    snapshot = verdict.Snapshot(NODES, [pod("big", "3", "n0")])
    slimmer = verdict.Slimmer()
    assert verdict.feasible_on(slimmer, snapshot, pod("p", "2"), "n2").node == "n2"
    alone = verdict.feasible_on(slimmer, snapshot, pod("p", "2"), "n0")
    assert alone.node is None
    assert alone.reason == ("0/3 nodes are available: 1 Insufficient cpu, "
                            "2 node(s) were not ready.")


def test_pods_on_the_nodes_made_not_ready_still_count_for_anti_affinity() -> None:
    bound = [pod("web", "1", "n0")]
    shy = pod("shy", "1", affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}]}})
    slimmer = verdict.Slimmer()
    assert verdict.feasible_on(slimmer, verdict.Snapshot(NODES, bound), shy, "n1").node is None
    assert verdict.feasible_on(slimmer, verdict.Snapshot(NODES, bound), shy, "n2").node == "n2"


def test_spread_domains_of_the_nodes_made_not_ready_still_count() -> None:
    """zone a holds one `web` pod, zone b none: maxSkew 1 keeps a second one out of zone a,
    also when n1 is judged alone (zone b is still a domain, with 0)."""
    bound = [pod("web", "1", "n0")]
    spread = pod("web2", "1", topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}}])
    spread["metadata"]["labels"] = {"app": "web"}
    slimmer = verdict.Slimmer()
    alone = verdict.feasible_on(slimmer, verdict.Snapshot(NODES, bound), spread, "n1")
    assert alone.node is None
    assert alone.reason == ("0/3 nodes are available: 1 node(s) didn't match pod topology "
                            "spread constraints, 2 node(s) were not ready.")
    assert verdict.judge(slimmer, verdict.Snapshot(NODES, bound), spread).node == "n2"


def volume(name: str, host: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": "local", "claimRef": {"namespace": "ns",
                                                               "name": "data"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In",
                          "values": [host]}]}]}}},
            "status": {"phase": "Bound"}}


def claim(name: str, volume_name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "resourceVersion": "1",
                         "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                     "volumeName": volume_name, "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound"}}


def test_a_bound_claim_keeps_the_pod_on_its_volume_node_and_a_missing_one_everywhere() -> None:
    storage = {"pvc": [claim("data", "pv-0")], "pv": [volume("pv-0", "n2")]}
    mounts = pod("p", "1", volumes=[{"name": "d", "persistentVolumeClaim": {
        "claimName": "data"}}])
    slimmer = verdict.Slimmer()
    snapshot = verdict.Snapshot(NODES, [], storage)
    assert verdict.judge(slimmer, snapshot, mounts).node == "n2"
    assert verdict.feasible_on(slimmer, snapshot, mounts, "n0").reason == (
        "0/3 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity, "
        "2 node(s) were not ready.")
    missing = verdict.judge(slimmer, verdict.Snapshot(NODES, []), mounts)
    assert missing.reason == '0/3 nodes are available: persistentvolumeclaim "data" not found.'
