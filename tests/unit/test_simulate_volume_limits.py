"""`gangsched simulate` reads CSINodes and VolumeAttachments, what NodeVolumeLimits reads, as the
watcher reads them on a cluster (services/watcher/attachments.py), refusing what the API server
refuses of them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from services.cli.simulate import to_event
from services.contracts.events import AttachableVolume, AttachmentObserved, CSINodeObserved
from services.planner.simulate import manifests
from tests.unit.test_simulate_api_versions import simulate

NODE = """apiVersion: v1
kind: Node
metadata: {name: n0, labels: {kubernetes.io/hostname: n0}}
status: {allocatable: {cpu: "4", pods: "10"}}
"""
CSINODE = """apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: n0}
spec:
  drivers: [{name: ebs.csi.aws.com, nodeID: i-0, allocatable: {count: 2}}]
"""
ATTACHED = """apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-a}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-a}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: csi-a}
spec: {attacher: ebs.csi.aws.com, nodeName: n0, source: {persistentVolumeName: pv-a}}
"""
PODS = """apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  schedulerName: gangsched
  containers: [{name: c}]
  volumes: [{name: v, awsElasticBlockStore: {volumeID: "aws://us-east-1a/vol-1"}}]
---
apiVersion: v1
kind: Pod
metadata: {name: p2, annotations: {simulate.gangsched.io/at: "5"}}
spec:
  schedulerName: gangsched
  containers: [{name: c}]
  volumes: [{name: v, awsElasticBlockStore: {volumeID: vol-2}}]
"""


def items(text: str) -> list[manifests.Item]:
    documents = [manifests.Document("in.yaml", number, body)
                 for number, body in enumerate(yaml.safe_load_all(text), start=1)]
    return manifests.expand(documents)[0]


def test_csinodes_and_attachments_arrive_as_the_watcher_reads_them() -> None:
    found = {item.kind: to_event(item, 7) for item in items(CSINODE + "---\n" + ATTACHED)}
    assert found["CSINode"] == CSINodeObserved(at_ms=7, uid="sim-csinode-default-n0", name="n0",
                                               resource_version="",
                                               limits={"ebs.csi.aws.com": 2})
    assert found["VolumeAttachment"] == AttachmentObserved(
        at_ms=7, uid="sim-volumeattachment-default-csi-a", name="csi-a", resource_version="",
        node="n0", attacher="ebs.csi.aws.com", volume="pv-a")
    assert getattr(found["PersistentVolume"], "csi", None) == AttachableVolume(
        "ebs.csi.aws.com", "vol-a")


@pytest.mark.parametrize(("documents", "p2_node"), [
    ([NODE, CSINODE, PODS], "n0"),  # two volumes, two allowed
    ([NODE, CSINODE, ATTACHED, PODS], None),  # the attached volume takes one of them
    ([NODE, ATTACHED, PODS], "n0"),  # no CSINode: no limit
])
def test_a_node_takes_no_more_attachable_volumes_than_its_csinode_allows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], documents: list[str],
        p2_node: str | None) -> None:
    code, out = simulate(tmp_path, "---\n".join(documents), capsys)
    assert code == 0, out
    pods = yaml.safe_load(out)["pods"]
    assert pods["default/p1"]["node"] == "n0"
    assert pods["default/p2"]["node"] == p2_node


@pytest.mark.parametrize(("body", "field", "why"), [
    ("kind: CSINode\nmetadata: {name: n0}\nspec: {drivers: [{nodeID: i}]}",
     "spec.drivers[0].name", "Required value"),
    ("kind: CSINode\nmetadata: {name: n0}\nspec: {drivers: [null]}",
     "spec.drivers[0].name", "Required value"),
    ("kind: CSINode\nmetadata: {name: n0}\nspec: {drivers: [{name: D_1, nodeID: i}]}",
     "spec.drivers[0].name", 'Invalid value: "D_1": a lowercase RFC 1123 subdomain'),
    (f"kind: CSINode\nmetadata: {{name: n0}}\nspec: {{drivers: [{{name: {'d' * 64}, "
     "nodeID: i}]}", "spec.drivers[0].name", "Too long: may not be more than 63 bytes"),
    ("kind: CSINode\nmetadata: {name: n0}\nspec: {drivers: [{name: d}]}",
     "spec.drivers[0].nodeID", "Required value"),
    (f"kind: CSINode\nmetadata: {{name: n0}}\nspec: {{drivers: [{{name: d, nodeID: "
     f"{'é' * 129}}}]}}", "spec.drivers[0].nodeID", "must be 256 characters or less"),
    ("kind: CSINode\nmetadata: {name: n0}\n"
     "spec: {drivers: [{name: d, nodeID: i, allocatable: {count: -1}}]}",
     "spec.drivers[0].allocatable.count", "must be greater than or equal to 0"),
    ("kind: CSINode\nmetadata: {name: n0}\n"
     "spec: {drivers: [{name: d, nodeID: i, allocatable: {count: '2'}}]}",
     "spec.drivers[0].allocatable.count", "must be a 32-bit integer"),
    ("kind: CSINode\nmetadata: {name: n0}\nspec: {drivers: [{name: d, nodeID: i}, "
     "{name: d, nodeID: j}]}", "spec.drivers[1].name", 'Duplicate value: "d"'),
    ("kind: VolumeAttachment\nmetadata: {name: a}\n"
     "spec: {nodeName: n0, source: {persistentVolumeName: pv}}", "spec.attacher",
     "Required value"),
    ("kind: VolumeAttachment\nmetadata: {name: a}\nspec: {attacher: d, nodeName: n0}",
     "spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName"),
    ("kind: VolumeAttachment\nmetadata: {name: a}\nspec: {attacher: d, nodeName: n0, "
     "source: {persistentVolumeName: pv, inlineVolumeSpec: {}}}", "spec.source",
     "must specify exactly one of inlineVolumeSpec and persistentVolumeName"),
    ("kind: VolumeAttachment\nmetadata: {name: a}\nspec: {attacher: d, nodeName: n0, "
     "source: {persistentVolumeName: ''}}", "spec.source.persistentVolumeName",
     "Required value"),
    ("kind: VolumeAttachment\nmetadata: {name: a}\nspec: {attacher: d, "
     "source: {persistentVolumeName: pv}}", "spec.nodeName", 'Invalid value: ""'),
    ("kind: PersistentVolume\nmetadata: {name: pv}\n"
     "spec: {capacity: {storage: 1Gi}, csi: {driver: d, volumeHandle: 7}}",
     "spec.csi.volumeHandle", "must be a string"),
    ("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}], "
     "volumes: [{name: v, cinder: {volumeID: [x]}}]}", "spec.volumes[0].cinder.volumeID",
     "must be a string"),
])
def test_what_the_api_server_refuses_is_one_line_naming_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, field: str,
        why: str) -> None:
    kind = body.split("\n")[0].removeprefix("kind: ")
    api_version = "storage.k8s.io/v1" if kind in manifests.VOLUME_LIMIT_KINDS else "v1"
    code, err = simulate(tmp_path, f"apiVersion: {api_version}\n{body}\n", capsys)
    assert code == 2, err
    assert f": {field}: {why}" in err
