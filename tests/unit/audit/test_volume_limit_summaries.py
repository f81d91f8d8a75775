"""Timeline lines for what NodeVolumeLimits reads: CSINodes and VolumeAttachments."""

from __future__ import annotations

from services.audit import summaries
from services.contracts.events import (
    AttachmentDeleted,
    AttachmentObserved,
    CSINodeDeleted,
    CSINodeObserved,
)


def test_a_csinode_is_named_by_its_node_with_its_limits_sorted_by_driver() -> None:
    event = CSINodeObserved(at_ms=1, uid="c1", name="n1", resource_version="2",
                            limits={"pd.csi.storage.gke.io": 15, "ebs.csi.aws.com": 25})
    assert summaries.name_of(event) == "n1"
    assert summaries.event_summary(event, {}) == (
        "CSINode n1: volume limits ebs.csi.aws.com 25, pd.csi.storage.gke.io 15")
    assert summaries.event_summary(CSINodeObserved(
        at_ms=1, uid="c1", name="n1", resource_version="2"), {}) == (
        "CSINode n1: volume limits none")
    assert summaries.event_summary(CSINodeDeleted(at_ms=1, uid="c1", name="n1"), {}) == (
        "CSINode n1 deleted")


def test_a_volume_attachment_says_what_is_attached_where() -> None:
    event = AttachmentObserved(at_ms=1, uid="a1", name="csi-1", resource_version="2", node="n1",
                               attacher="ebs.csi.aws.com", volume="pv-1")
    assert summaries.name_of(event) == "csi-1"
    assert summaries.event_summary(event, {}) == (
        "VolumeAttachment csi-1: ebs.csi.aws.com attaches volume pv-1 to node n1")
    inline = AttachmentObserved(at_ms=1, uid="a1", name="csi-2", resource_version="2",
                                node="n1", attacher="d")
    assert summaries.event_summary(inline, {}) == (
        "VolumeAttachment csi-2: d attaches an inline volume to node n1")
    assert summaries.event_summary(AttachmentDeleted(at_ms=1, uid="a1", name="csi-1"), {}) == (
        "VolumeAttachment csi-1 deleted")
