"""Slimming PersistentVolumeClaims, PersistentVolumes and StorageClasses (`watcher.volumes`)."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.events import (
    ClaimRef,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from services.contracts.quantity_syntax import FORMAT_WRONG
from services.watcher import volumes
from tests.unit.watcher.test_slim import _JSONISH

GI = 2**30


def claim(spec: dict[str, Any] | None = None, annotations: dict[str, str] | None = None,
          **meta: Any) -> dict[str, Any]:
    metadata = {"name": "data", "namespace": "ml", "uid": "c1", "resourceVersion": "3",
                "annotations": annotations or {}, **meta}
    return {"metadata": metadata, "spec": spec or {}, "status": {"phase": "Pending"}}


def test_a_claim_keeps_class_size_modes_selector_and_binding_state() -> None:
    event = volumes.claim_event(claim(
        {"storageClassName": "local", "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"],
         "resources": {"requests": {"storage": "10Gi"}}, "volumeName": "pv-1",
         "selector": {"matchLabels": {"disk": "ssd"}}},
        {"pv.kubernetes.io/bind-completed": "yes",
         "volume.kubernetes.io/selected-node": "n1"},
        ownerReferences=[{"kind": "Pod", "name": "p", "uid": "pod-1", "controller": True}]), 5)
    assert (event.namespace, event.name, event.storage_class) == ("ml", "data", "local")
    assert event.access_modes == ("ReadWriteOnce", "ReadWriteOncePod")
    assert event.request_bytes == 10 * GI and event.volume_name == "pv-1"
    assert event.is_bind_completed and event.selected_node == "n1"
    assert event.selector == (NodeSelectorRequirement("disk", "In", ("ssd",)),)
    assert event.owner_uid == "pod-1" and event.invalid_reason is None
    assert event.volume_mode == "Filesystem" and not event.is_deleting


def test_the_beta_class_annotation_wins_over_the_spec_as_kubernetes_reads_it() -> None:
    event = volumes.claim_event(claim({"storageClassName": "b"},
                                      {"volume.beta.kubernetes.io/storage-class": "a"}), 0)
    assert event.storage_class == "a"
    assert volumes.claim_event(claim(), 0).storage_class == ""


def test_a_malformed_request_makes_the_claim_invalid_with_the_field_named() -> None:
    event = volumes.claim_event(claim({"resources": {"requests": {"storage": "lots"}}}), 0)
    assert event.invalid_reason is not None
    assert event.invalid_reason == (
        f"spec.resources.requests.storage: invalid quantity 'lots': {FORMAT_WRONG}")


def test_a_volume_keeps_capacity_affinity_labels_and_claim_ref() -> None:
    event = volumes.volume_event({
        "metadata": {"name": "pv-1", "uid": "v1", "resourceVersion": "9",
                     "labels": {"topology.kubernetes.io/zone": "a"}},
        "spec": {"capacity": {"storage": "1.5Gi"}, "storageClassName": "local",
                 "accessModes": ["ReadWriteOnce"], "volumeMode": "Block",
                 "claimRef": {"namespace": "ml", "name": "data", "uid": "c1"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In",
                      "values": ["n1"]}]}]}}},
        "status": {"phase": "Bound"}}, 0)
    assert event.capacity_bytes == 3 * GI // 2 and event.storage_class == "local"
    assert event.labels == {"topology.kubernetes.io/zone": "a"}
    assert event.node_affinity == (NodeSelectorTerm((NodeSelectorRequirement(
        "kubernetes.io/hostname", "In", ("n1",)),)),)
    assert event.claim == ClaimRef("ml", "data", "c1")
    assert (event.phase, event.volume_mode) == ("Bound", "Block")


def test_a_volume_without_affinity_or_claim_reads_as_none() -> None:
    event = volumes.volume_event({"metadata": {"name": "pv"}, "spec": {}}, 0)
    assert event.node_affinity is None and event.claim is None and event.capacity_bytes == 0


def test_a_storage_class_keeps_mode_provisioner_and_allowed_topologies_as_in_terms() -> None:
    event = volumes.storage_class_event({
        "metadata": {"name": "fast", "uid": "s1"}, "provisioner": "csi.example.com",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}]}, 0)
    assert (event.provisioner, event.binding_mode) == ("csi.example.com", "WaitForFirstConsumer")
    assert event.allowed_topologies == (NodeSelectorTerm((NodeSelectorRequirement(
        "topology.kubernetes.io/zone", "In", ("a", "b")),)),)
    assert volumes.storage_class_event({"metadata": {"name": "x"}}, 0).binding_mode == "Immediate"


_OBJECTS = st.dictionaries(
    st.sampled_from(["metadata", "spec", "status", "allowedTopologies", "provisioner",
                     "volumeBindingMode"]), _JSONISH | st.dictionaries(st.sampled_from([
                         "capacity", "resources", "requests", "storage", "selector",
                         "nodeAffinity", "required", "nodeSelectorTerms", "claimRef",
                         "accessModes", "annotations", "matchLabelExpressions"]), _JSONISH))


@settings(max_examples=300, deadline=None)
@given(_OBJECTS)
def test_slimming_random_volume_objects_never_raises_and_always_encodes(
        obj: dict[str, Any]) -> None:
    for slim_one in (volumes.claim_event, volumes.claim_deleted, volumes.volume_event,
                     volumes.volume_deleted, volumes.storage_class_event,
                     volumes.storage_class_deleted):
        msgspec.json.encode(slim_one(obj, 0))
