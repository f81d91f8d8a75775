"""`gangsched simulate` on the sources of pods' volumes: the fields the watcher reads of inline
disks (services/watcher/disks.py) are of their types as the API server decodes them
(services/planner/simulate/shapes.py); anything else is one line naming the field, exit status
2, never a disk invented from a value the API server refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from services.fit.reasons import DISK_CONFLICT
from tests.unit.test_simulate_malformed import NODE, refused, simulate

IQN = "iqn.2001-04.com.example:disk-a"
GCE = "{gcePersistentDisk: {pdName: pd-a}}"
AWS = "{awsElasticBlockStore: {volumeID: vol-a}}"
ISCSI = f"{{iscsi: {{targetPortal: '10.0.0.9:3260', iqn: '{IQN}', lun: 0}}}}"
RBD = "{rbd: {monitors: ['10.0.0.1:6789'], image: img-a}}"
MANAGED = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d"


def pod(source: str, name: str = "p", read_only: bool = False, at: int = 0) -> str:
    """A pod mounting the volume `source` (a flow mapping of one source or more), `readOnly`
    added to each when `read_only`, arriving `at` seconds in."""
    volume = {"name": "v", **yaml.safe_load(source)}
    for given in volume.values():
        if read_only and isinstance(given, dict):
            given["readOnly"] = True
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": {"simulate.gangsched.io/at": str(at)}},
        "spec": {"schedulerName": "gangsched", "containers": [{"name": "c"}],
                 "volumes": [volume]}})



@pytest.mark.parametrize(("source", "field", "why"), [
    ("{gcePersistentDisk: {pdName: 1001}}", "gcePersistentDisk.pdName",
     'must be a string, got 1001 (quote it: "1001")'),
    ("{gcePersistentDisk: {pdName: pd-a, readOnly: 'true'}}", "gcePersistentDisk.readOnly",
     "must be true or false, got 'true'"),
    ("{awsElasticBlockStore: {volumeID: [vol-a]}}", "awsElasticBlockStore.volumeID",
     "must be a string, got ['vol-a']"),
    ("{awsElasticBlockStore: {volumeID: vol-a, readOnly: 1}}", "awsElasticBlockStore.readOnly",
     "must be true or false, got 1"),
    ("{iscsi: {targetPortal: p, iqn: 5}}", "iscsi.iqn", 'must be a string, got 5 (quote it: "5")'),
    ("{iscsi: {targetPortal: 3260, iqn: x}}", "iscsi.targetPortal",
     'must be a string, got 3260 (quote it: "3260")'),
    ("{iscsi: {targetPortal: p, iqn: x, lun: '0'}}", "iscsi.lun",
     "must be a 32-bit integer, got '0'"),
    ("{iscsi: {targetPortal: p, iqn: x, readOnly: 'yes'}}", "iscsi.readOnly",
     "must be true or false, got 'yes'"),
    ("{rbd: {monitors: '10.0.0.1:6789', image: i}}", "rbd.monitors",
     "must be a list, got '10.0.0.1:6789'"),
    ("{rbd: {monitors: [6789], image: i}}", "rbd.monitors[0]",
     'must be a string, got 6789 (quote it: "6789")'),
    ("{rbd: {monitors: [m], image: true}}", "rbd.image",
     'must be a string, got True (quote it: "true")'),
    ("{rbd: {monitors: [m], image: i, pool: 5}}", "rbd.pool",
     'must be a string, got 5 (quote it: "5")'),
    ("{rbd: {monitors: [m], image: i, readOnly: 'false'}}", "rbd.readOnly",
     "must be true or false, got 'false'"),
    ("{azureDisk: {diskURI: 5}}", "azureDisk.diskURI", 'must be a string, got 5 (quote it: "5")'),
    ("{portworxVolume: {volumeID: 5}}", "portworxVolume.volumeID",
     'must be a string, got 5 (quote it: "5")'),
    ("{gcePersistentDisk: pd-a}", "gcePersistentDisk", "must be a mapping, got 'pd-a'"),
])
def test_a_disk_field_of_the_wrong_type_is_refused_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, field: str,
        why: str) -> None:
    assert refused(tmp_path, NODE + pod(source), capsys) == (
        f" document 2 (Pod default/p): spec.volumes[0].{field}: {why}")


@pytest.mark.parametrize("source", [
    GCE, AWS, ISCSI, RBD, "{iscsi: {targetPortal: p, iqn: eui.0123456789abcdef}}",
    f"{{iscsi: {{targetPortal: p, iqn: naa.{'A1' * 16}, lun: 255}}}}",
    "{iscsi: {targetPortal: p, iqn: 'iqnx:iqn.2001-04.com.example:a'}}",  # searched, as Go
    "{rbd: {monitors: [m], image: i, pool: null}}", "{cinder: {volumeID: c}}",
    "{portworxVolume: {volumeID: x}}", "{azureDisk: {diskName: d, diskURI: 'https://x/d.vhd'}}",
    f"{{azureDisk: {{diskName: d, diskURI: '{MANAGED}', kind: Managed}}}}",
    "{gcePersistentDisk: {pdName: pd-a}, awsElasticBlockStore: null}", "{}", "{emptyDir: {}}",
])
def test_a_pod_with_a_source_the_api_server_takes_is_placed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str) -> None:
    code, out, err = simulate(tmp_path, NODE + pod(source), capsys)
    assert code == 0, err
    assert yaml.safe_load(out)["pods"]["default/p"]["node"] == "n0"


@pytest.mark.parametrize(("source", "read_only", "conflicts"), [
    (GCE, False, True), (GCE, True, False), (AWS, True, True), (ISCSI, False, True),
    (ISCSI, True, False), (RBD, False, True), (RBD, True, False),
])
def test_two_pods_mounting_one_disk_on_one_node_conflict_as_kube_scheduler_judges(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, read_only: bool,
        conflicts: bool) -> None:
    text = (NODE + pod(source, "p1", read_only) + "---\n"
            + pod(source, "p2", read_only, at=5))
    code, out, err = simulate(tmp_path, text, capsys)
    assert code == 0, err
    pods = yaml.safe_load(out)["pods"]
    assert pods["default/p1"]["node"] == "n0"
    assert pods["default/p2"]["node"] == (None if conflicts else "n0")
    assert pods["default/p2"]["reason"] == (
        f"0/1 nodes are available: 1 {DISK_CONFLICT}." if conflicts else None)
