"""In-tree volumes translated to CSI as NodeVolumeLimits counts them
(`services.watcher.csi_translation`): a PersistentVolume's `migrated` and `csi`, a pod's
`migrated_volumes`; never raising on malformed volumes.

Each expected handle is what csi-translation-lib v0.36.3 gives for the same object (None, or
left out: it returns an error)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.events import AttachableVolume
from services.watcher import csi_translation, slim, volumes
from tests.unit.watcher.test_slim import _JSONISH

EBS, PD, AZURE, CINDER, PX = ("ebs.csi.aws.com", "pd.csi.storage.gke.io", "disk.csi.azure.com",
                              "cinder.csi.openstack.org", "pxd.portworx.com")
BETA_ZONE, ZONE = "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"
URI = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d"


def persistent_volume(spec: dict[str, Any], **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "pv-1", "uid": "v1", "resourceVersion": "2", "labels": labels},
            "spec": {"capacity": {"storage": "1Gi"}, **spec}}


def pod(*volumes: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "d", "uid": "u"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": list(volumes)}}


@pytest.mark.parametrize(("source", "expected"), [
    ({"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-1", "fsType": "ext4"}},
     AttachableVolume(EBS, "vol-1")),
    ({"awsElasticBlockStore": {"volumeID": "vol-2"}}, AttachableVolume(EBS, "vol-2")),
    ({"gcePersistentDisk": {"pdName": "data"}},
     AttachableVolume(PD, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/data")),
    ({"azureDisk": {"diskName": "d", "diskURI": URI, "kind": "Managed"}},
     AttachableVolume(AZURE, URI)),
    ({"azureDisk": {"diskName": "d", "diskURI": URI, "kind": "mAnAgEd"}},
     AttachableVolume(AZURE, URI)),
    ({"cinder": {"volumeID": "c-1"}}, AttachableVolume(CINDER, "c-1")),
    ({"portworxVolume": {"volumeID": "px-1"}}, AttachableVolume(PX, "px-1")),
])
def test_each_migrated_kind_gives_its_driver_and_handle(
        source: dict[str, Any], expected: AttachableVolume) -> None:
    event = volumes.volume_event(persistent_volume(source), 0)
    assert (event.migrated, event.csi) == (expected, None)
    assert slim.pod_event(pod({"name": "v", **source}), 0).migrated_volumes == (expected,)


@pytest.mark.parametrize("source", [
    {"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/not-a-volume"}},
    {"azureDisk": {"diskName": "d", "diskURI": URI}},  # kind defaults to Shared
    {"azureDisk": {"diskName": "d", "diskURI": URI, "kind": "Dedicated"}},
    {"azureDisk": {"diskName": "d", "diskURI": URI, "kind": ""}},
])
def test_what_the_translation_refuses_is_neither_a_volume_nor_counted(
        source: dict[str, Any]) -> None:
    assert volumes.volume_event(persistent_volume(source), 0).migrated is None
    assert slim.pod_event(pod({"name": "v", **source}), 0).migrated_volumes == ()


@pytest.mark.parametrize(("labels", "handle"), [
    ({ZONE: "us-central1-a"}, "projects/UNSPECIFIED/zones/us-central1-a/disks/data"),
    ({BETA_ZONE: "us-central1-b", ZONE: "us-central1-a"},
     "projects/UNSPECIFIED/zones/us-central1-b/disks/data"),  # the beta label first
    ({BETA_ZONE: "", ZONE: "us-central1-a"},
     "projects/UNSPECIFIED/zones/us-central1-a/disks/data"),  # an empty one is none
    ({ZONE: "us-central1-a__us-central1-b"},
     "projects/UNSPECIFIED/regions/us-central1/disks/data"),
    ({}, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/data"),
    ({ZONE: "us-central1-a__europe-west1-b"}, None),  # two regions
    ({ZONE: "us-central1-a__"}, None),  # an empty zone is no GCE zone
    ({ZONE: "zone-a__zone-b"}, None),  # nor is one of two parts
])
def test_a_gce_pd_volume_is_zonal_or_regional_by_its_zone_labels(
        labels: dict[str, str], handle: str | None) -> None:
    event = volumes.volume_event(persistent_volume({"gcePersistentDisk": {"pdName": "data"}},
                                                   **labels), 0)
    assert event.migrated == (None if handle is None else AttachableVolume(PD, handle))


def test_a_csi_volume_is_counted_by_its_driver_and_handle_and_never_translated() -> None:
    event = volumes.volume_event(persistent_volume({"csi": {
        "driver": "ebs.csi.aws.com", "volumeHandle": "vol-9", "fsType": "ext4"}}), 0)
    assert (event.csi, event.migrated) == (AttachableVolume(EBS, "vol-9"), None)
    both = persistent_volume({"csi": {"driver": "d"}, "cinder": {"volumeID": "c-1"}})
    assert csi_translation.persistent_volume({}, both["spec"]) is None  # kube reads spec.csi


@pytest.mark.parametrize("csi", [
    None, "csi", {}, {"driver": "d"}, {"volumeHandle": "h"}, {"driver": "", "volumeHandle": "h"},
    {"driver": "d", "volumeHandle": 7}, {"driver": ["d"], "volumeHandle": "h"},
])
def test_a_csi_source_without_a_driver_and_a_handle_counts_no_volume(csi: Any) -> None:
    assert volumes.volume_event(persistent_volume({"csi": csi}), 0).csi is None


def test_a_volume_of_no_migrated_kind_or_with_an_empty_handle_is_none() -> None:
    specs: list[dict[str, Any]] = [{"hostPath": {"path": "/x"}}, {"azureFile": {"shareName": "s"}},
                                   {"cinder": {"volumeID": ""}}, {"awsElasticBlockStore": {}}]
    for spec in specs:
        assert volumes.volume_event(persistent_volume(spec), 0).migrated is None


def test_inline_volumes_keep_spec_order_and_leave_out_claims_and_other_kinds() -> None:
    event = slim.pod_event(pod(
        {"name": "scratch", "emptyDir": {}},
        {"name": "c", "cinder": {"volumeID": "c-1"}},
        {"name": "claim", "persistentVolumeClaim": {"claimName": "x"},
         "gcePersistentDisk": {"pdName": "counted-as-the-claim"}},
        {"name": "eph", "ephemeral": {}, "cinder": {"volumeID": "counted-as-the-claim"}},
        {"name": "bad", "awsElasticBlockStore": {"volumeID": "aws://z/x/vol-1"}},
        {"name": "pd", "gcePersistentDisk": {"pdName": "data"}},
        {"name": "same", "cinder": {"volumeID": "c-1"}}), 0)
    assert event.migrated_volumes == (
        AttachableVolume(CINDER, "c-1"),
        AttachableVolume(PD, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/data"),
        AttachableVolume(CINDER, "c-1"))


def test_an_inline_volume_translating_to_an_empty_handle_is_counted_as_kube_counts_it() -> None:
    assert csi_translation.inline_volumes({"volumes": [{"name": "v", "cinder": {}}]}) == (
        AttachableVolume(CINDER, ""),)


@pytest.mark.parametrize("volumes_field", [
    None, "volumes", [None, 3, "x"], [{"name": "c", "cinder": "c-1"}],
    [{"name": "c", "cinder": {"volumeID": 7}}],
    [{"name": "a", "azureDisk": {"diskURI": ["u"], "kind": 3}}],
    [{"name": "pd", "gcePersistentDisk": {"pdName": None}}],
])
def test_malformed_inline_volumes_read_as_absent_fields_never_raising(volumes_field: Any) -> None:
    found = csi_translation.inline_volumes({"volumes": volumes_field})
    assert slim.pod_event(pod(*volumes_field) if isinstance(volumes_field, list)
                          else {"spec": {"volumes": volumes_field}}, 0).migrated_volumes == found
    assert all(volume.handle in ("", "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/")
               for volume in found)


_SOURCES = st.dictionaries(st.sampled_from([*csi_translation.MIGRATED_KINDS, "csi", "name"]),
                           _JSONISH | st.dictionaries(st.sampled_from(
                               ["volumeID", "pdName", "diskURI", "kind", "driver",
                                "volumeHandle"]), _JSONISH))


@settings(max_examples=300, deadline=None)
@given(_SOURCES, _JSONISH)
def test_random_volumes_never_raise_and_always_encode(source: dict[str, Any],
                                                      labels: Any) -> None:
    msgspec.json.encode(csi_translation.inline_volumes({"volumes": [source]}))
    msgspec.json.encode(csi_translation.persistent_volume(
        labels if isinstance(labels, dict) else {}, source))
    msgspec.json.encode(volumes.volume_event({"metadata": {"labels": labels}, "spec": source}, 0))
