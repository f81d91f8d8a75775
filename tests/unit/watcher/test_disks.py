"""A pod's inline disks as the watcher reads them (`services.watcher.disks`) for
VolumeRestrictions: each kind's identity, read-only, RBD's pool default and monitors; never
raising on malformed volumes."""

from __future__ import annotations

from typing import Any

import pytest

from services.contracts.events import Disk
from services.watcher import disks, slim


def pod(volumes: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "d", "uid": "u"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": volumes}}


def test_each_kind_is_read_by_its_identity_in_spec_order_and_no_longer_unsupported() -> None:
    volumes = [
        {"name": "scratch", "emptyDir": {}},
        {"name": "pd", "gcePersistentDisk": {"pdName": "data", "fsType": "ext4",
                                             "readOnly": True}},
        {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1", "partition": 1}},
        {"name": "rbd", "rbd": {"monitors": ["10.0.0.1:6789", "10.0.0.2:6789"],
                                "image": "img", "pool": "kube", "readOnly": False}},
        {"name": "iscsi", "iscsi": {"targetPortal": "10.0.0.1:3260",
                                    "iqn": "iqn.2001-04.com.example:data", "lun": 0}},
        {"name": "claim", "persistentVolumeClaim": {"claimName": "c"}},
    ]
    event = slim.pod_event(pod(volumes), 0)
    assert event.disks == (
        Disk(kind="gcePersistentDisk", name="data", read_only=True),
        Disk(kind="awsElasticBlockStore", name="vol-1"),
        Disk(kind="rbd", name="img", pool="kube", monitors=("10.0.0.1:6789", "10.0.0.2:6789")),
        Disk(kind="iscsi", name="iqn.2001-04.com.example:data"),
    )
    assert event.unsupported == ()


def test_an_rbd_pool_left_out_is_the_api_servers_default() -> None:
    for source in ({"monitors": ["m"], "image": "img"}, {"monitors": ["m"], "image": "img",
                                                         "pool": ""}):
        assert disks.read({"volumes": [{"name": "r", "rbd": source}]}) == (
            Disk(kind="rbd", name="img", pool="rbd", monitors=("m",)),)


@pytest.mark.parametrize("volumes", [
    None, "volumes", [None, 3, "x"], [{"name": "pd", "gcePersistentDisk": "data"}],
    [{"name": "pd", "gcePersistentDisk": {"pdName": 7, "readOnly": "yes"}}],
    [{"name": "r", "rbd": {"monitors": "m", "image": ["img"], "pool": 5}}],
])
def test_malformed_volumes_read_as_absent_fields_never_raising(volumes: Any) -> None:
    found = disks.read({"volumes": volumes})
    assert all(isinstance(disk, Disk) for disk in found)
    assert slim.pod_event(pod(volumes), 0).disks == found
    if found:  # a wrong-type field reads as absent: no identity, not read-only
        assert all(disk.name == "" and not disk.read_only for disk in found)
