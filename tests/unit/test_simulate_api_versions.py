"""`gangsched simulate` reads each kind only in an apiVersion the API server serves it in
(services/planner/simulate/api_versions.py): anything else is one line naming the file and
the object, and exit status 2, as `kubectl apply` refuses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.cli.simulate import COMMAND, simulate_command
from services.planner.simulate.api_versions import SERVED

NODE = ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        "status: {allocatable: {cpu: '4', pods: '10'}}\n")
SELECTED = ("selector: {matchLabels: {app: x}}, "
            "template: {metadata: {labels: {app: x}}, spec: {containers: [{name: c}]}}")
"""An apps workload's spec: its selector selects its template's labels (else refused)."""
OBJECTS = {
    "List": "items: []\n",
    "Namespace": "spec: {finalizers: [kubernetes]}\n",
    "Node": "status: {allocatable: {cpu: '1'}}\n",
    "Pod": "spec: {containers: [{name: c}]}\n",
    "PersistentVolumeClaim": "spec: {resources: {requests: {storage: 1Gi}}}\n",
    "PersistentVolume": "spec: {capacity: {storage: 1Gi}}\n",
    "StorageClass": "provisioner: x\n",
    "CSINode": "spec: {drivers: [{name: d.example.com, nodeID: i-1, allocatable: {count: 1}}]}\n",
    "VolumeAttachment": ("spec: {attacher: d.example.com, nodeName: n0, "
                         "source: {persistentVolumeName: pv}}\n"),
    "PodDisruptionBudget": "spec: {minAvailable: 1, selector: {}}\n",
    "PriorityClass": "value: 10\n",
    "RuntimeClass": "handler: runc\n",
    "PodGroup": "spec: {minMember: 1}\n",
    "ReplicaSet": f"spec: {{{SELECTED}}}\n",
    "Deployment": f"spec: {{{SELECTED}}}\n",
    "StatefulSet": f"spec: {{{SELECTED}}}\n",
    "Job": "spec: {template: {spec: {containers: [{name: c}]}}}\n",
}
"""A valid body of each kind simulate reads (besides apiVersion, kind and metadata)."""


def manifest(kind: str, api_version: str | None) -> str:
    version = f"apiVersion: {api_version}\n" if api_version is not None else ""
    return f"{version}kind: {kind}\nmetadata: {{name: x}}\n{OBJECTS[kind]}"


def simulate(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    code = simulate_command([path], "json")
    captured = capsys.readouterr()
    return code, (captured.err if code else captured.out)


def test_every_kind_simulate_reads_has_a_body_here() -> None:
    assert set(OBJECTS) == set(SERVED)


@pytest.mark.parametrize("kind", sorted(SERVED))
def test_each_served_version_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     kind: str) -> None:
    for version in SERVED[kind]:
        code, out = simulate(tmp_path, NODE + "---\n" + manifest(kind, version), capsys)
        assert code == 0, out


@pytest.mark.parametrize(("kind", "version"), [
    ("PriorityClass", "scheduling.k8s.io/v9"), ("PriorityClass", "scheduling.k8s.io/v1beta1"),
    ("PodDisruptionBudget", "policy/v1beta1"), ("PodGroup", "scheduling.x-k8s.io/v1"),
    ("PodGroup", "scheduling.k8s.io/v1"), ("Pod", "v2"), ("Node", "apps/v1"),
    ("PersistentVolumeClaim", "v1beta1"), ("PersistentVolume", "storage.k8s.io/v1"),
    ("StorageClass", "storage.k8s.io/v1beta1"), ("CSINode", "storage.k8s.io/v1beta1"),
    ("VolumeAttachment", "storage.k8s.io/v1beta1"), ("ReplicaSet", "extensions/v1beta1"),
    ("Deployment", "apps/v1beta2"), ("StatefulSet", "v1"), ("Job", "batch/v1beta1"),
    ("List", "meta/v1"),
])
def test_a_version_the_api_server_does_not_serve_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, version: str) -> None:
    code, err = simulate(tmp_path, NODE + "---\n" + manifest(kind, version), capsys)
    served = " or ".join(SERVED[kind])
    assert (code, err) == (2, f"{COMMAND}: {tmp_path / 'in.yaml'} document 2 ({kind} x): "
                              f'apiVersion: no matches for kind "{kind}" in version "{version}" '
                              f"({kind} is {served})\n")


def test_a_missing_api_version_is_refused_and_so_is_one_inside_a_list(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = simulate(tmp_path, manifest("PriorityClass", None), capsys)
    assert (code, err) == (2, f"{COMMAND}: {tmp_path / 'in.yaml'} document 1 (PriorityClass x): "
                              "apiVersion: not set (PriorityClass is scheduling.k8s.io/v1)\n")
    listed = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n"
              "  metadata: {name: n}\n  status: {allocatable: {cpu: '1'}}\n"
              "- {apiVersion: policy/v1beta1, kind: PodDisruptionBudget, metadata: {name: b}}\n")
    code, err = simulate(tmp_path, listed, capsys)
    assert (code, err) == (2, f"{COMMAND}: {tmp_path / 'in.yaml'} document 1 (PodDisruptionBudget "
                              'b): apiVersion: no matches for kind "PodDisruptionBudget" in '
                              'version "policy/v1beta1" (PodDisruptionBudget is policy/v1)\n')


def test_a_kind_simulate_ignores_is_not_checked(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = simulate(tmp_path, NODE + "---\napiVersion: v9\nkind: Service\n"
                       "metadata: {name: s}\n", capsys)
    assert code == 0


def native_gang(min_count: int) -> str:
    members = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: m-{i}}}\nspec:\n"
        f"  schedulerName: gangsched\n  schedulingGroup: {{podGroupName: g}}\n"
        f"  containers: [{{name: c, resources: {{requests: {{cpu: '1'}}}}}}]\n"
        for i in range(2))
    return (NODE + "---\napiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\n"
            "metadata: {name: g}\n"
            f"spec: {{schedulingPolicy: {{gang: {{minCount: {min_count}}}}}}}\n"
            + members)


def test_a_native_podgroup_is_read_by_its_gang_min_count(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    code, out = simulate(tmp_path, native_gang(2), capsys)
    report = json.loads(out)
    assert code == 0
    assert {name: pod["node"] for name, pod in report["pods"].items()} == {
        "default/m-0": "n", "default/m-1": "n"}
    assert report["podGroups"]["default/g"]["minMember"] == 2
    code, out = simulate(tmp_path, native_gang(3), capsys)
    report = json.loads(out)
    assert report["podGroups"]["default/g"]["minMember"] == 3
    assert all(pod["node"] is None for pod in report["pods"].values())


@pytest.mark.parametrize(("version", "kind", "hint"), [
    ("scheduling.x-k8s.io/v1alpha1", "PodGrup", " (did you mean PodGroup?)"),
    ("v1", "Servce", " (did you mean Service?)"), ("apps/v1", "ConfigMap", ""),
    ("batch/v1", "CronJobs", " (did you mean CronJob?)"),
    ("storage.k8s.io/v1", "Volume", ""), ("policy/v1", "PodSecurityPolicy", ""),
    ("scheduling.k8s.io/v1", "PriorityKlass", " (did you mean PriorityClass?)"),
])
def test_a_kind_its_group_does_not_serve_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str, kind: str,
        hint: str) -> None:
    """In a group simulate reads, an unknown kind is refused as kubectl refuses it, not
    ignored: `PodGrup` would otherwise leave the gang out of the simulation unnamed."""
    code, err = simulate(tmp_path, NODE + f"---\napiVersion: {version}\nkind: {kind}\n"
                         "metadata: {name: x}\n", capsys)
    assert (code, err) == (2, f"{COMMAND}: {tmp_path / 'in.yaml'} document 2 ({kind} x): kind: "
                              f'no matches for kind "{kind}" in version "{version}"{hint}\n')


def test_the_table_names_each_document_ignored(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Kinds of groups simulate does not read, and kinds it has no use for, are ignored: the
    table names each, so a manifest that mattered cannot vanish from a simulation unseen."""
    path = tmp_path / "in.yaml"
    path.write_text(NODE + "---\napiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\n"
                    "metadata: {name: m}\n---\napiVersion: v1\nkind: ConfigMap\n"
                    "metadata: {name: c, namespace: ns}\n")
    assert simulate_command([path], "table") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("ignored")] == [
        f"ignored (not a kind simulate reads): {path} document 2 (ServiceMonitor m)",
        f"ignored (not a kind simulate reads): {path} document 3 (ConfigMap ns/c)"]
    assert "2 document(s) ignored" in lines[-1]
