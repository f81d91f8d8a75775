"""The published JSON Schemas in docs/schema/ match the message types, and evolve compatibly."""

from __future__ import annotations

from pathlib import Path

import msgspec

from services.contracts import codec, decisions, schema
from services.contracts.events import (
    NodeImage,
    NodeObserved,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodObserved,
    PreferredSchedulingTerm,
)

DOCS = Path(__file__).resolve().parents[3] / "docs" / "schema"


def test_published_schemas_are_current() -> None:
    for name, kind in schema.SCHEMAS.items():
        published = (DOCS / name).read_text()
        assert published == schema.render(kind), (
            f"docs/schema/{name} is stale: run `gangsched schema --out docs/schema`")


def test_an_old_subscriber_decodes_a_decision_with_a_field_it_does_not_know() -> None:
    class OldPlacement(msgspec.Struct, tag="Placement"):
        id: str
        group: str

    newer = decisions.Placement(id="7-0", plan_seq=7, at_ms=1000, group="ml/train", attempt=1,
                                deadline_ms=61000, members=())
    wire = msgspec.json.encode(msgspec.structs.asdict(newer) | {"type": "Placement",
                                                                 "added_later": {"x": 1}})
    old = msgspec.json.decode(wire, type=OldPlacement)
    assert (old.id, old.group) == ("7-0", "ml/train")
    assert codec.decode_decision(wire) == newer


def test_a_pod_event_recorded_before_preferred_node_affinity_decodes_without_terms() -> None:
    term = PreferredSchedulingTerm(7, NodeSelectorTerm(
        match_expressions=(NodeSelectorRequirement("disk", "In", ("ssd",)),)))
    event = PodObserved(at_ms=3, uid="u1", namespace="ml", name="p", resource_version="1",
                        scheduler_name="gangsched", phase="Pending", created_at_ms=0,
                        requests={"pods": 1}, preferred_affinity=(term,))
    wire = msgspec.json.decode(codec.encode(event))
    assert wire["preferred_affinity"] == [{"weight": 7, "preference": {"match_expressions": [
        {"key": "disk", "operator": "In", "values": ["ssd"]}], "match_fields": []}}]
    del wire["preferred_affinity"]
    old = codec.decode_event(msgspec.json.encode(wire))
    assert old == msgspec.structs.replace(event, preferred_affinity=())


def test_node_and_pod_events_recorded_before_declared_features_decode_without_them() -> None:
    node = NodeObserved(at_ms=3, name="n0", uid="u0", resource_version="1",
                        allocatable={"pods": 110}, declared_features=("A", "B/c"))
    pod = PodObserved(at_ms=3, uid="u1", namespace="ml", name="p", resource_version="1",
                      scheduler_name="gangsched", phase="Pending", created_at_ms=0,
                      requests={"pods": 1}, required_features=("A",))
    for event, field, listed in ((node, "declared_features", ["A", "B/c"]),
                                 (pod, "required_features", ["A"])):
        wire = msgspec.json.decode(codec.encode(event))
        assert wire[field] == listed
        del wire[field]
        old = codec.decode_event(msgspec.json.encode(wire))
        assert old == msgspec.structs.replace(event, **{field: ()})


def test_a_pod_event_recorded_before_nonzero_requests_decodes_without_them() -> None:
    pod = PodObserved(at_ms=3, uid="u1", namespace="ml", name="p", resource_version="1",
                      scheduler_name="gangsched", phase="Pending", created_at_ms=0,
                      requests={"pods": 1}, nonzero_extra={"cpu": 100, "memory": 209715200})
    wire = msgspec.json.decode(codec.encode(pod))
    assert wire["nonzero_extra"] == {"cpu": 100, "memory": 209715200}
    del wire["nonzero_extra"]
    assert codec.decode_event(msgspec.json.encode(wire)) == msgspec.structs.replace(
        pod, nonzero_extra={})


def test_events_recorded_before_images_decode_without_them() -> None:
    node = NodeObserved(at_ms=2, name="n1", uid="n", resource_version="1",
                        allocatable={"pods": 110},
                        images=(NodeImage(names=("a:v1", "a@sha256:1"), size_bytes=10),))
    pod = PodObserved(at_ms=3, uid="u1", namespace="ml", name="p", resource_version="1",
                      scheduler_name="gangsched", phase="Pending", created_at_ms=0,
                      requests={"pods": 1}, images=("a:v1",), image_volumes=("m:latest",))
    for event, fields in ((node, ("images",)), (pod, ("images", "image_volumes"))):
        wire = msgspec.json.decode(codec.encode(event))
        for field in fields:
            del wire[field]
        old = codec.decode_event(msgspec.json.encode(wire))
        assert old == msgspec.structs.replace(event, **{field: () for field in fields})


def test_claim_and_volume_events_recorded_before_attributes_classes_decode_without_one() -> None:
    from services.contracts.events import ClaimObserved, VolumeObserved

    claim = ClaimObserved(at_ms=4, uid="c", namespace="ml", name="data", resource_version="1",
                          storage_class="local", volume_attributes_class="gold")
    volume = VolumeObserved(at_ms=4, uid="v", name="pv0", resource_version="1",
                            storage_class="local", volume_attributes_class="gold")
    for event in (claim, volume):
        wire = msgspec.json.decode(codec.encode(event))
        assert wire["volume_attributes_class"] == "gold"
        del wire["volume_attributes_class"]
        old = codec.decode_event(msgspec.json.encode(wire))
        assert old == msgspec.structs.replace(event, volume_attributes_class="")


def test_a_podgroup_event_recorded_before_unsupported_decodes_without_one() -> None:
    from services.contracts.events import PodGroupObserved

    podgroup = PodGroupObserved(at_ms=5, uid="g", namespace="ml", name="train",
                                resource_version="1", created_at_ms=0, min_member=2,
                                api_version="scheduling.k8s.io/v1alpha2",
                                unsupported=("spec.schedulingConstraints.topology",))
    wire = msgspec.json.decode(codec.encode(podgroup))
    assert wire["unsupported"] == ["spec.schedulingConstraints.topology"]
    del wire["unsupported"]
    old = codec.decode_event(msgspec.json.encode(wire))
    assert old == msgspec.structs.replace(podgroup, unsupported=())


def test_a_podgroup_event_recorded_before_topology_key_decodes_without_one() -> None:
    from services.contracts.events import PodGroupObserved

    podgroup = PodGroupObserved(at_ms=5, uid="g", namespace="ml", name="train",
                                resource_version="1", created_at_ms=0, min_member=2,
                                api_version="scheduling.k8s.io/v1alpha2",
                                topology_key="example.com/rack")
    wire = msgspec.json.decode(codec.encode(podgroup))
    assert wire["topology_key"] == "example.com/rack"
    del wire["topology_key"]
    old = codec.decode_event(msgspec.json.encode(wire))
    assert old == msgspec.structs.replace(podgroup, topology_key=None)
