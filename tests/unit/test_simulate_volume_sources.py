"""`gangsched simulate` on the sources of pods' volumes and PersistentVolumes: the fields the
watcher reads of inline disks (services/watcher/disks.py), of the sources kube migrates to CSI
(services/watcher/csi_translation.py) and of a PersistentVolume's `csi` (its driver and
volumeHandle, services/watcher/volumes.py) are of their types (services/planner/simulate/
shapes.py) and values (services/planner/simulate/volume_sources.py) as the API server takes
them, one source a volume; anything else is one line naming the field, exit status 2, never a
disk or volume invented from a value the API server refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from services.fit.reasons import DISK_CONFLICT
from services.planner.simulate import volume_sources
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


def volume(spec: str) -> str:
    return ("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n"
            f"spec: {{capacity: {{storage: 1Gi}}, {spec}}}\n")


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
    ("{gcePersistentDisk: {pdName: pd-a}, secret: secret-a}", "secret",
     "must be a mapping, got 'secret-a'"),
    ("{gcePersistentDisk: pd-a}", "gcePersistentDisk", "must be a mapping, got 'pd-a'"),
])
def test_a_disk_field_of_the_wrong_type_is_refused_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, field: str,
        why: str) -> None:
    assert refused(tmp_path, NODE + pod(source), capsys) == (
        f" document 2 (Pod default/p): spec.volumes[0].{field}: {why}")


@pytest.mark.parametrize(("source", "field", "why"), [
    ("{gcePersistentDisk: {readOnly: true}}", "gcePersistentDisk.pdName", "Required value"),
    ("{gcePersistentDisk: {pdName: ''}}", "gcePersistentDisk.pdName", "Required value"),
    ("{awsElasticBlockStore: {}}", "awsElasticBlockStore.volumeID", "Required value"),
    (f"{{iscsi: {{iqn: '{IQN}'}}}}", "iscsi.targetPortal", "Required value"),
    ("{iscsi: {targetPortal: p}}", "iscsi.iqn", "Required value"),
    ("{iscsi: {targetPortal: p, iqn: disk-a}}", "iscsi.iqn",
     'Invalid value: "disk-a": must be valid format starting with iqn, eui, or naa'),
    ("{iscsi: {targetPortal: p, iqn: 'iqn.2001-04.com.example'}}", "iscsi.iqn",
     'Invalid value: "iqn.2001-04.com.example": must be valid format'),
    ("{iscsi: {targetPortal: p, iqn: 'iqn.01-04.com.example:a'}}", "iscsi.iqn",
     'Invalid value: "iqn.01-04.com.example:a": must be valid format'),
    ("{iscsi: {targetPortal: p, iqn: 'iqn.2001-04.com.example:a b'}}", "iscsi.iqn",
     'Invalid value: "iqn.2001-04.com.example:a b": must be valid format'),
    ("{iscsi: {targetPortal: p, iqn: eui.0123456789ABCDE}}", "iscsi.iqn",
     'Invalid value: "eui.0123456789ABCDE": must be valid format'),
    (f"{{iscsi: {{targetPortal: p, iqn: naa.{'0' * 31}}}}}", "iscsi.iqn",
     f'Invalid value: "naa.{"0" * 31}": must be valid format'),
    (f"{{iscsi: {{targetPortal: p, iqn: '{IQN}', lun: 256}}}}", "iscsi.lun",
     "Invalid value: 256: must be between 0 and 255, inclusive"),
    (f"{{iscsi: {{targetPortal: p, iqn: '{IQN}', lun: -1}}}}", "iscsi.lun",
     "Invalid value: -1: must be between 0 and 255, inclusive"),
    ("{rbd: {image: img-a}}", "rbd.monitors", "Required value"),
    ("{rbd: {monitors: [], image: img-a}}", "rbd.monitors", "Required value"),
    ("{rbd: {monitors: [m]}}", "rbd.image", "Required value"),
    ("{cinder: {}}", "cinder.volumeID", "Required value"),
    ("{portworxVolume: {volumeID: ''}}", "portworxVolume.volumeID", "Required value"),
    ("{azureDisk: {diskName: d, kind: Managed}}", "azureDisk.diskURI", "Required value"),
    (f"{{azureDisk: {{diskName: d, diskURI: '{MANAGED}', kind: managed}}}}", "azureDisk.kind",
     'Unsupported value: "managed": supported values: "Dedicated", "Managed", "Shared"'),
    ("{azureDisk: {diskName: d, diskURI: 'https://a.blob.core.windows.net/c/d.vhd', "
     "kind: Managed}}", "azureDisk.diskURI",
     'Unsupported value: "https://a.blob.core.windows.net/c/d.vhd": supported values: '
     '"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/'
     '{disk-id}"'),
    (f"{{azureDisk: {{diskName: d, diskURI: '{MANAGED}'}}}}", "azureDisk.diskURI",
     f'Unsupported value: "{MANAGED}": supported values: '
     '"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"'),
    ("{gcePersistentDisk: {pdName: pd-a}, awsElasticBlockStore: {volumeID: vol-a}}",
     "awsElasticBlockStore", "Forbidden: may not specify more than 1 volume type"),
    ("{rbd: {monitors: [m], image: i}, persistentVolumeClaim: {claimName: c}}", "rbd",
     "Forbidden: may not specify more than 1 volume type"),
    ("{emptyDir: {}, iscsi: {}}", "iscsi", "Forbidden: may not specify more than 1 volume type"),
])
def test_a_disk_value_the_api_server_refuses_is_refused_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, field: str,
        why: str) -> None:
    assert refused(tmp_path, NODE + pod(source), capsys) == (
        f" document 2 (Pod default/p): spec.volumes[0].{field}: {why}")


def test_a_workloads_volume_is_named_in_its_template(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: "
                   "{spec: {containers: [{name: c}], volumes: [{name: v, emptyDir: {}}, "
                   "{name: d, iscsi: {targetPortal: p, iqn: disk-a}}]}}}\n")
    assert refused(tmp_path, text, capsys) == (
        " document 2 (Job j): spec.template.spec.volumes[1].iscsi.iqn: Invalid value: "
        '"disk-a": must be valid format starting with iqn, eui, or naa')


@pytest.mark.parametrize(("spec", "field", "why"), [
    ("awsElasticBlockStore: {volumeID: vol-a}, csi: {driver: ebs.csi.aws.com, "
     "volumeHandle: vol-a}", "csi", "Forbidden: may not specify more than 1 volume type"),
    ("gcePersistentDisk: {}", "gcePersistentDisk.pdName", "Required value"),
    ("cinder: {volumeID: ''}", "cinder.volumeID", "Required value"),
    ("azureDisk: {diskName: d, diskURI: x, kind: Managed}", "azureDisk.diskURI",
     'Unsupported value: "x": supported values: "/subscriptions/{sub-id}/resourcegroups/'
     '{group-name}/providers/microsoft.compute/disks/{disk-id}"'),
    ("nfs: [server]", "nfs", "must be a mapping, got ['server']"),
    ("csi: {volumeHandle: vol-a}", "csi.driver", "Required value"),
    ("csi: {driver: '', volumeHandle: vol-a}", "csi.driver", "Required value"),
    ("csi: {}", "csi.driver", "Required value"),
    ("csi: {driver: 'Bad Driver!', volumeHandle: vol-a}", "csi.driver",
     'Invalid value: "Bad Driver!": a lowercase RFC 1123 subdomain must consist of lower case '
     "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
     "character (e.g. 'example.com', regex used for validation is "
     r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    (f"csi: {{driver: {'d' * 64}, volumeHandle: vol-a}}", "csi.driver",
     "Too long: may not be more than 63 bytes"),
    (f"csi: {{driver: {'é' * 32}, volumeHandle: vol-a}}", "csi.driver",  # 64 bytes
     "Too long: may not be more than 63 bytes"),
    ("csi: {driver: ebs.csi.aws.com}", "csi.volumeHandle", "Required value"),
    ("csi: {driver: ebs.csi.aws.com, volumeHandle: ''}", "csi.volumeHandle", "Required value"),
    ("csi: {driver: '', volumeHandle: ''}", "csi.driver", "Required value"),  # driver first
])
def test_a_persistent_volume_source_the_api_server_refuses_is_refused_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, field: str,
        why: str) -> None:
    assert refused(tmp_path, NODE + volume(spec), capsys) == (
        f" document 2 (PersistentVolume pv): spec.{field}: {why}")


@pytest.mark.parametrize("spec", [
    "awsElasticBlockStore: {volumeID: vol-a}",
    "awsElasticBlockStore: {volumeID: vol-a}, flexVolume: {driver: x}",  # flex is never refused
    "gcePersistentDisk: {pdName: pd-a}, csi: null",
    f"azureDisk: {{diskName: d, diskURI: '{MANAGED}', kind: Managed}}",
    "hostPath: {path: /data}",
    "csi: {driver: ebs.csi.aws.com, volumeHandle: vol-a}",
    "csi: {driver: EBS.CSI.AWS.com, volumeHandle: vol-a}",  # a subdomain once lowercased
    f"csi: {{driver: {'d' * 63}, volumeHandle: vol-a}}",
])
def test_a_persistent_volume_with_a_source_the_api_server_takes_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    code, _, err = simulate(tmp_path, NODE + volume(spec), capsys)
    assert code == 0, err


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


@pytest.mark.parametrize(("iqn", "is_valid"), [
    (IQN, True), ("xiqn.2001-04.com.example:a", False),  # a prefix other than iqn, eui, naa
    ("iqn-iqn.2001-04.com.example:a", True),  # Go's MatchString searches the iqn format
    (f"{IQN}\n", False),  # Go's $: the end of the text
    ("iqn.\uff12\uff10\uff10\uff11-04.com.example:a", False),  # Go's \d: ASCII digits only
    ("iqn.2001-04.com.example:a\vb", True),  # Go's \s is no \v
    ("eui.0123456789abcdef", True), ("eui.0123456789abcdef\n", False),
    (f"naa.{'f' * 32}", True), (f"naa.{'é' * 32}", False),
])
def test_the_iqn_format_is_read_as_the_api_servers_regular_expressions_read_it(
        iqn: str, is_valid: bool) -> None:
    found = volume_sources.pod_problem(
        {"volumes": [{"name": "v", "iscsi": {"targetPortal": "p", "iqn": iqn}}]})
    assert (found is None) == is_valid, found
