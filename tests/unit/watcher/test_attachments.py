"""CSINodes and VolumeAttachments slimmed for NodeVolumeLimits (`services.watcher.attachments`):
limits per driver, what is attached where; never raising on malformed objects."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.events import (
    AttachmentDeleted,
    AttachmentObserved,
    CSINodeDeleted,
    CSINodeObserved,
)
from services.watcher import attachments
from tests.unit.watcher.test_slim import _JSONISH

META = {"name": "n1", "uid": "c1", "resourceVersion": "5"}


def csinode(drivers: Any) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": META,
            "spec": {"drivers": drivers}}


def attachment(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": "csi-0123", "uid": "a1", "resourceVersion": "8"}, "spec": spec,
            "status": {"attached": True}}


def test_a_csinode_limits_each_driver_with_an_allocatable_count_and_no_other() -> None:
    event = attachments.csinode_event(csinode([
        {"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25},
         "topologyKeys": ["topology.ebs.csi.aws.com/zone"]},
        {"name": "pd.csi.storage.gke.io", "nodeID": "n1", "allocatable": {"count": 0}},
        {"name": "no-limit.example.com", "nodeID": "n1"},
        {"name": "no-count.example.com", "nodeID": "n1", "allocatable": {}},
    ]), 4)
    assert event == CSINodeObserved(at_ms=4, uid="c1", name="n1", resource_version="5",
                                    limits={"ebs.csi.aws.com": 25, "pd.csi.storage.gke.io": 0})


@pytest.mark.parametrize("drivers", [
    None, "drivers", [None, 3, "x"], [{"name": "d", "allocatable": "25"}],
    [{"name": "d", "allocatable": {"count": "25"}}],
    [{"name": "d", "allocatable": {"count": True}}],  # a boolean is no count
    [{"name": "d", "allocatable": {"count": 2.5}}],
    [{"name": "d", "allocatable": {"count": 2**31}}],  # beyond the API's int32
])
def test_a_malformed_driver_or_count_reads_as_no_limit(drivers: Any) -> None:
    assert attachments.csinode_event(csinode(drivers), 0).limits == {}


def test_a_later_driver_of_the_same_name_wins_as_in_kubes_map() -> None:
    event = attachments.csinode_event(csinode([
        {"name": "d", "allocatable": {"count": 1}}, {"name": "d", "allocatable": {"count": 2}}]),
        0)
    assert event.limits == {"d": 2}


def test_a_volume_attachment_carries_node_attacher_and_persistent_volume() -> None:
    event = attachments.attachment_event(attachment({
        "attacher": "ebs.csi.aws.com", "nodeName": "n1",
        "source": {"persistentVolumeName": "pv-1"}}), 6)
    assert event == AttachmentObserved(at_ms=6, uid="a1", name="csi-0123", resource_version="8",
                                       node="n1", attacher="ebs.csi.aws.com", volume="pv-1")


@pytest.mark.parametrize("spec", [
    {"attacher": "d", "nodeName": "n1", "source": {"inlineVolumeSpec": {"csi": {}}}},
    {"attacher": "d", "nodeName": "n1", "source": "pv-1"},
    {"attacher": "d", "nodeName": "n1"},
])
def test_an_attachment_of_no_persistent_volume_names_none(spec: dict[str, Any]) -> None:
    event = attachments.attachment_event(attachment(spec), 0)
    assert (event.node, event.attacher, event.volume) == ("n1", "d", "")


def test_deletes_carry_identity() -> None:
    assert attachments.csinode_deleted(csinode([]), 3) == CSINodeDeleted(
        at_ms=3, uid="c1", name="n1", resource_version="5")
    assert attachments.attachment_deleted(attachment({}), 3) == AttachmentDeleted(
        at_ms=3, uid="a1", name="csi-0123", resource_version="8")


_OBJECTS = st.dictionaries(
    st.sampled_from(["metadata", "spec", "status"]), _JSONISH | st.dictionaries(
        st.sampled_from(["drivers", "attacher", "nodeName", "source", "persistentVolumeName",
                         "allocatable", "count", "name"]),
        _JSONISH | st.lists(st.dictionaries(st.sampled_from(["name", "allocatable"]),
                                            _JSONISH | st.fixed_dictionaries(
                                                {"count": _JSONISH})), max_size=3)))


@settings(max_examples=300, deadline=None)
@given(_OBJECTS)
def test_slimming_random_objects_never_raises_and_always_encodes(obj: dict[str, Any]) -> None:
    for slim_one in (attachments.csinode_event, attachments.csinode_deleted,
                     attachments.attachment_event, attachments.attachment_deleted):
        msgspec.json.encode(slim_one(obj, 0))
