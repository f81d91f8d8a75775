"""VolumeBinding matches a claim only to volumes of its own VolumeAttributesClass.

Public report: kubernetes/kubernetes PR #121902 "[kep-3751] pvc bind pv with vac" (KEP-3751,
VolumeAttributesClass, GA and on by default since 1.34): `FindMatchingVolume`
(component-helpers `storage/volume/pv_helpers.go`, which kube-scheduler 1.36's VolumeBinding
calls with `enableVolumeAttributesClass`) skips every volume whose
`spec.volumeAttributesClassName` differs from the claim's (`claimVAC != volumeVAC`), before
it looks at phase, class, selector or access modes. A WaitForFirstConsumer claim asking for
the `gold` attributes class must not be given a static volume of another class (or of none),
nor a claim asking for none a `gold` volume: the volume would be provisioned with, or lack,
the performance attributes its user asked for.

The class of defect: a claim/volume matching field read by VolumeBinding that the watcher does
not carry (`watcher.volumes` keeps class, size, modes, selector, mode, but not the attributes
class), so the planner picks a volume kube-scheduler never would and the pod is bound next to it.
"""

from __future__ import annotations

from typing import Any

from services.contracts.decisions import Placement
from services.watcher import volumes
from tests.unit.planner.builders import make_node, make_pod, make_storage_class
from tests.unit.planner.harness import Cluster

HOST = "kubernetes.io/hostname"


def claim(attributes_class: str | None, gib: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": f"{gib}Gi"}}}
    if attributes_class is not None:
        spec["volumeAttributesClassName"] = attributes_class
    return {"metadata": {"name": "data", "namespace": "default", "uid": "uid-claim",
                         "resourceVersion": "1"},
            "spec": spec, "status": {"phase": "Pending"}}


def volume(name: str, host: str, gib: int, attributes_class: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "storageClassName": "local", "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": f"{gib}Gi"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": HOST, "operator": "In", "values": [host]}]}]}}}
    if attributes_class is not None:
        spec["volumeAttributesClassName"] = attributes_class
    return {"metadata": {"name": name, "uid": f"uid-pv-{name}", "resourceVersion": "1"},
            "spec": spec, "status": {"phase": "Available"}}


def cluster(the_claim: dict[str, Any], *the_volumes: dict[str, Any]) -> Cluster:
    """Two nodes, a WaitForFirstConsumer class without a provisioner (only static volumes),
    the claim and volumes slimmed by the watcher, and a pod using the claim."""
    return Cluster().observe(
        make_node("n0").label(HOST, "n0"), make_node("n1").label(HOST, "n1"),
        make_storage_class("local"), volumes.claim_event(the_claim, 0),
        *(volumes.volume_event(v, 0) for v in the_volumes),
        make_pod("p").claims("data"))


def placed(c: Cluster) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {m.name: (m.node, tuple(choice.volume for choice in m.volumes))
            for d in c.plan() if isinstance(d, Placement) for m in d.members}


def test_a_claim_of_an_attributes_class_is_not_given_a_volume_of_none() -> None:
    # kube-scheduler: FindMatchingVolume skips "plain" (VAC "" != "gold"), no provisioner:
    # 0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.
    c = cluster(claim("gold"), volume("plain", "n0", 1, None))
    assert placed(c) == {}


def test_a_claim_of_an_attributes_class_takes_the_volume_of_that_class() -> None:
    # "plain" is the smaller volume, so a match that ignores the attributes class takes it
    c = cluster(claim("gold"), volume("plain", "n0", 1, None), volume("fast", "n1", 5, "gold"))
    assert placed(c) == {"p": ("n1", ("fast",))}


def test_a_claim_of_no_attributes_class_is_not_given_a_volume_of_one() -> None:
    c = cluster(claim(None), volume("fast", "n0", 1, "gold"), volume("plain", "n1", 5, None))
    assert placed(c) == {"p": ("n1", ("plain",))}


def test_an_empty_attributes_class_is_none() -> None:
    # kube reads both as ptr.Deref(name, ""): a claim naming "" takes a volume naming none
    assert volumes.claim_event(claim(""), 0).volume_attributes_class == ""
    assert volumes.volume_event(volume("x", "n0", 1, "gold"), 0).volume_attributes_class == "gold"
    c = cluster(claim(""), volume("plain", "n0", 1, None))
    assert placed(c) == {"p": ("n0", ("plain",))}


def test_a_volume_pre_bound_to_the_claim_is_skipped_when_its_attributes_class_differs() -> None:
    # FindMatchingVolume checks the attributes class before IsVolumeBoundToClaim: the
    # pre-bound volume is skipped like any other, and the smallest matching one is taken
    prebound = volume("mine", "n0", 1, None)
    prebound["spec"]["claimRef"] = {"namespace": "default", "name": "data", "uid": "uid-claim"}
    c = cluster(claim("gold"), prebound, volume("fast", "n1", 5, "gold"))
    assert placed(c) == {"p": ("n1", ("fast",))}
