"""`gangsched simulate`: manifests through the production planner, checked against golden files.

Golden files: `tests/golden/simulate/<case>.yaml` is the input, `<case>.json` the expected
`pods` and `podGroups` of the report. After a deliberate change, regenerate them with
`GANGSCHED_REGEN_GOLDEN=1 pytest tests/unit/test_simulate.py` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.simulate import COMMAND, simulate, simulate_command
from services.contracts.quantity_syntax import FORMAT_WRONG
from services.fit.reasons import DISK_CONFLICT, MAX_VOLUME_COUNT
from services.planner.core.config import PlannerConfig

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "simulate"
CASES = sorted(path.stem for path in GOLDEN.glob("*.yaml"))
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO_NODE = Path(__file__).resolve().parents[1] / "cluster" / "demo-node.yaml"
_MISSING_EXAMPLE = "{} is missing from the repository's examples/; a broken set-up must fail"


def run(*paths: Path) -> dict[str, Any]:
    return simulate([Path(p) for p in paths], PlannerConfig())


def bound(report: dict[str, Any]) -> list[str]:
    return sorted(name for name, pod in report["pods"].items() if pod["node"] is not None)


def by_group(report: dict[str, Any]) -> dict[str, int]:
    groups: dict[str, int] = {}
    for pod in report["pods"].values():
        if pod["node"] is not None:
            key = pod["group"] or "(none)"
            groups[key] = groups.get(key, 0) + 1
    return groups


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str) -> None:
    report = run(GOLDEN / f"{case}.yaml")
    produced = json.dumps({"pods": report["pods"], "podGroups": report["podGroups"]}, indent=2)
    expected_path = GOLDEN / f"{case}.json"
    if os.environ.get("GANGSCHED_REGEN_GOLDEN"):
        expected_path.write_text(produced + "\n")
    assert produced + "\n" == expected_path.read_text()


@pytest.mark.parametrize(("case", "expected"), [
    ("a1", {"default/g1": 3}), ("a2", {"default/g1": 3}), ("a3", {"(none)": 2}),
    ("a4", {"default/g2": 3}), ("a5", {"default/g2": 3}), ("a6", {"(none)": 3}),
    ("a7", {"default/g1": 3}), ("a8", {"default/g1": 3}), ("a9", {"default/g1": 3}),
    ("backoff", {"default/g2": 1}), ("completed-member", {"default/g1": 1}),
    ("nginx-gang", {"default/nginx": 3}), ("nginx-gang-min4", {}),
    ("topology-spread", {"default/train": 4}),
    ("volume-binding-bound", {"default/train": 3}), ("volume-binding-prefilter", {}),
    ("volume-zone", {"(none)": 1}), ("volume-restrictions-rwop", {}),
    ("volume-binding-wffc", {"default/pair": 2}), ("volume-binding-provisioning", {"(none)": 1}),
    ("inter-pod-anti-affinity", {"default/workers": 3}), ("node-ports", {"(none)": 1}),
    ("heterogeneous-gang", {"default/train": 2}), ("preferred-anti-affinity", {"(none)": 1}),
    ("preemption", {"default/high": 2}),
    ("inline-disk-conflict", {"(none)": 1}), ("csi-attach-limit", {"(none)": 2}),
])
def test_scenario_a_and_seed_outcomes(case: str, expected: dict[str, int]) -> None:
    assert by_group(run(GOLDEN / f"{case}.yaml")) == expected


@pytest.mark.parametrize(("case", "pending", "reason"), [
    ("inline-disk-conflict", "default/second", DISK_CONFLICT),
    ("csi-attach-limit", "default/pod-2", MAX_VOLUME_COUNT),
])
def test_the_volume_examples_leave_one_pod_pending_with_kube_schedulers_reason(
        case: str, pending: str, reason: str) -> None:
    pods = run(GOLDEN / f"{case}.yaml")["pods"]
    assert [name for name, pod in pods.items() if pod["node"] is None] == [pending]
    assert pods[pending]["reason"] == f"0/1 nodes are available: 1 {reason}."


def test_the_spread_gang_goes_two_and_two_over_the_zones() -> None:
    report = run(GOLDEN / "topology-spread.yaml")
    zones = [pod["node"][0] for name, pod in report["pods"].items()
             if name.startswith("default/train-")]
    assert sorted(zones) == ["a", "a", "b", "b"]


def test_completed_member_case_binds_nothing_new() -> None:
    report = run(GOLDEN / "completed-member.yaml")
    assert [name for name, pod in report["pods"].items() if pod["boundAt"] is not None] == [
        "default/g1-done"]
    assert report["pods"]["default/g1-done"]["phase"] == "Succeeded"


def test_the_seed_example_itself() -> None:
    seed = EXAMPLES / "nginx-gang.yaml"
    assert seed.exists(), _MISSING_EXAMPLE.format(seed)
    report = run(DEMO_NODE, seed)
    assert len(bound(report)) == 3 and len(report["pods"]) == 6
    pending = [pod for pod in report["pods"].values() if pod["node"] is None]
    assert all("Insufficient cpu" in pod["reason"] for pod in pending)


def test_only_pods_of_ours_are_reported(tmp_path: Path) -> None:
    report = run(GOLDEN / "timeline.yaml")
    assert "kube-system/system-agent" not in report["pods"]


def test_arrivals_and_runtimes_follow_the_simulated_clock() -> None:
    report = run(GOLDEN / "timeline.yaml")
    web = [pod for name, pod in report["pods"].items() if name.startswith("default/web-")]
    train = [pod for name, pod in report["pods"].items() if name.startswith("default/train-")]
    assert [(p["boundAt"], p["finishedAt"], p["phase"]) for p in web] == [(0, 30, "Succeeded")] * 2
    assert [p["boundAt"] for p in train] == [30, 30]
    assert report["podGroups"]["default/train"]["scheduleStartTime"] == 10


def test_workloads_are_named_as_their_controllers_name_pods() -> None:
    names = list(run(GOLDEN / "timeline.yaml")["pods"]) + list(run(GOLDEN / "backoff.yaml")["pods"])
    assert any(re.fullmatch(r"default/web-[bcdfghjklmnpqrstvwxz2456789]{10}-"
                            r"[bcdfghjklmnpqrstvwxz2456789]{5}", name) for name in names)
    assert any(re.fullmatch(r"default/train-[bcdfghjklmnpqrstvwxz2456789]{5}", name)
               for name in names)
    assert {f"default/g1-{i}" for i in range(6)} <= set(names)
    assert names == list(run(GOLDEN / "timeline.yaml")["pods"]) + list(
        run(GOLDEN / "backoff.yaml")["pods"])


def write(tmp_path: Path, text: str, name: str = "in.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


NODE = """apiVersion: v1
kind: Node
metadata: {name: n0}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
"""


def test_creation_timestamp_decides_the_queue_order(tmp_path: Path) -> None:
    pods = "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, creationTimestamp: "{stamp}"}}
spec:
  schedulerName: gangsched
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]
""" for name, stamp in (("later", "2024-01-01T00:00:05Z"), ("earlier", "2024-01-01T00:00:01Z")))
    report = run(write(tmp_path, NODE + pods))
    assert bound(report) == ["default/earlier"]


@pytest.mark.parametrize("backoff_max", [0.0, 0.5, 60.0])
def test_a_gang_short_of_quorum_is_told_whatever_the_backoff(
        tmp_path: Path, backoff_max: float) -> None:
    # the planner tells a short gang a quiet second after its newest member (and retells it
    # no sooner than 1-10 s later), whatever backoff_max_seconds: the simulation waits for it
    text = NODE + """---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: g, namespace: default}
spec: {minMember: 3}
---
apiVersion: v1
kind: Pod
metadata: {name: p0, labels: {scheduling.x-k8s.io/pod-group: g}}
spec: {schedulerName: gangsched, containers: [{name: c}]}
"""
    config = PlannerConfig(backoff_initial_seconds=min(1.0, backoff_max),
                           backoff_max_seconds=backoff_max)
    report = simulate([write(tmp_path, text)], config)
    assert report["pods"]["default/p0"]["reason"] == (
        "gang default/g: 1 of 3 members exist; waiting for quorum (minMember 3)")


def test_the_multi_scheduler_example_reports_only_our_pod() -> None:
    example = EXAMPLES / "multi-scheduler.yaml"
    assert example.exists(), _MISSING_EXAMPLE.format(example)
    assert list(run(example)["pods"]) == ["default/annotation-second-scheduler"]


def test_json_output_is_one_object_with_the_contract_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate_command([GOLDEN / "nginx-gang.yaml"], "json") == 0
    data = json.loads(capsys.readouterr().out)
    assert {"pods", "podGroups", "decisions"} <= set(data)
    pod = next(iter(data["pods"].values()))
    assert {"node", "group", "boundAt", "reason"} <= set(pod)


def test_table_output_is_readable(capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate_command([GOLDEN / "nginx-gang.yaml"], "table") == 0
    out = capsys.readouterr().out
    assert "Pods" in out and "3 of 6 pods bound" in out


@pytest.mark.parametrize(("text", "message"), [
    ("apiVersion: v1\nkind: Node\nmetadata: {name: n0}\nstatus: {allocatable: {cpu: lots}}\n",
     f"document 1 (Node n0): status.allocatable.cpu: invalid quantity 'lots': {FORMAT_WRONG}\n"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
     "  - {name: c, resources: {requests: {memory: 5Xi}}}\n",
     "document 1 (Pod default/p): spec.containers[0].resources.requests.memory: "
     f"invalid quantity '5Xi': {FORMAT_WRONG}\n"),
    # an exponent and a suffix, which Go's ParseQuantity never takes together
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
     "  - {name: c, resources: {requests: {cpu: '1', memory: 1e3Ki}}}\n",
     "document 1 (Pod default/p): spec.containers[0].resources.requests.memory: "
     f"invalid quantity '1e3Ki': {FORMAT_WRONG}\n"),
    ("apiVersion: scheduling.x-k8s.io/v1alpha1\n"
     "kind: PodGroup\nmetadata: {name: g}\nspec: {minMember: -1}\n",
     "document 1 (PodGroup default/g): spec.minMember"),
    (NODE + "---\napiVersion: v1\n"
            "kind: Pod\nmetadata: {name: p, annotations: {simulate.gangsched.io/at: soon}}\n"
     "spec: {containers: [{name: c}]}\n",
     'document 2 (Pod p): metadata.annotations["simulate.gangsched.io/at"]'),
    ("apiVersion: v1\n"
     "kind: Pod\nmetadata: {name: p}\nspec: {priorityClassName: gold, containers: [{name: c}]}\n",
     "document 1 (Pod default/p): spec.priorityClassName"),
    ("apiVersion: apps/v1\n"
     "kind: ReplicaSet\nmetadata: {name: r}\nspec: {replicas: -1, template: {spec: {}}}\n",
     "document 1 (ReplicaSet r): spec.replicas"),
    ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n"
     "spec: {parallelism: 100000000, template: {spec: {containers: [{name: c}]}}}\n",
     "document 1 (Job j): spec.parallelism: must be less than or equal to 100000 to simulate "
     "(every replica becomes a pod), got 100000000"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  topologySpreadConstraints:\n"
     "  - {maxSkew: 1, topologyKey: zone}\n  containers: [{name: c}]\n",
     "document 1 (Pod default/p): spec.topologySpreadConstraints[0].whenUnsatisfiable must be"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: {name: c}}\n",
     "document 1 (Pod default/p): spec.containers: must be a list of containers (mappings), "
     "at least one"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n",
     "document 1 (Pod default/p): spec.containers: must be a list"),
    ("- just\n- a list\n", "document 1: (document)"),
    ("metadata: {name: x}\n", "document 1 (? x): kind"),
    (NODE + "---\n" + NODE, "document 2 (Node n0): metadata.name: duplicate Node"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n", "in.yaml"),
    ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\n"
     "spec: {resources: {requests: {storage: lots}}}\n",
     "document 1 (PersistentVolumeClaim default/c): spec.resources.requests.storage: "
     f"invalid quantity 'lots': {FORMAT_WRONG}\n"),
    ("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\n"
     "spec: {capacity: {storage: 1e30}, accessModes: [ReadWriteOnce]}\n",
     "document 1 (PersistentVolume v): spec.capacity.storage: 1e30 is beyond the largest amount "
     "gangsched can place (256Ti)\n"),
    ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {}\n",
     "document 1 (PersistentVolumeClaim default/c): spec.resources.requests.storage: missing"),
    ("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\n"
     "spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteAlways]}\n",
     "document 1 (PersistentVolume v): spec.accessModes: each must be one of"),
    ("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\n",
     "document 1 (PersistentVolume v): spec: missing"),
    ("apiVersion: storage.k8s.io/v1\n"
     "kind: StorageClass\nmetadata: {name: s}\nvolumeBindingMode: Later\n",
     "document 1 (StorageClass s): volumeBindingMode: must be one of Immediate, "
     "WaitForFirstConsumer, got 'Later'"),
])
def test_invalid_input_exits_non_zero_naming_document_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    assert simulate_command([write(tmp_path, text)], "json") == 2
    err = capsys.readouterr().err
    assert message in err, err


def test_files_without_objects_are_an_error_not_an_empty_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty, comments = tmp_path / "empty.yaml", tmp_path / "comments.yaml"
    empty.write_text("")
    comments.write_text("# nothing yet\n---\n")
    assert simulate_command([empty, comments], "json") == 2
    assert capsys.readouterr().err.strip() == (
        f"{COMMAND}: {empty}, {comments}: no objects in them (empty, or only comments), as "
        "kubectl apply -f refuses them")
    assert simulate_command([empty, GOLDEN / "nginx-gang.yaml"], "json") == 0  # one has some


def test_a_directory_without_manifests_is_an_error_not_an_empty_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pod.yaml").write_text("apiVersion: v1\nkind: Pod\n")
    assert simulate_command([tmp_path], "json") == 2
    assert capsys.readouterr().err.strip() == (
        f"{COMMAND}: {tmp_path}: no manifest files (*.yaml, *.yml, *.json) in this directory; "
        "its subdirectories are not read, as kubectl apply -f DIR")


def test_storage_documents_decide_where_pods_with_claims_go() -> None:
    wffc = run(GOLDEN / "volume-binding-wffc.yaml")
    assert {name: pod["node"] for name, pod in wffc["pods"].items()} == {
        "default/lonely": None, "default/pair-0": "node-0", "default/pair-1": "node-2"}
    placed = [d for d in wffc["decisions"] if d["type"] == "Placement"]
    chosen = sorted((m["name"], v["volume"]) for d in placed for m in d["members"]
                    for v in m["volumes"])
    assert chosen == [("pair-0", "local-0"), ("pair-1", "local-2")]
    prefilter = run(GOLDEN / "volume-binding-prefilter.yaml")["pods"]
    assert prefilter["default/needs-missing"]["reason"] == (
        '0/3 nodes are available: persistentvolumeclaim "missing" not found.')
    assert bound(run(GOLDEN / "volume-zone.yaml")) == ["default/zonal"]


def test_unknown_output_format_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate_command([GOLDEN / "a1.yaml"], "yaml") == 2


def test_kinds_that_do_not_matter_are_ignored_and_listed(tmp_path: Path) -> None:
    report = run(write(tmp_path, NODE + "---\nkind: Service\nmetadata: {name: s}\n"))
    assert report["ignored"] == [f"{tmp_path / 'in.yaml'} document 2 (Service s)"]


def test_a_directory_is_read_as_its_manifest_files_in_name_order(tmp_path: Path) -> None:
    write(tmp_path, NODE, name="1-node.yaml")
    write(tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
          "spec: {schedulerName: gangsched, containers: [{name: c}]}\n", name="2-pod.yml")
    write(tmp_path, "not a manifest", name="notes.txt")
    report = run(tmp_path)
    assert report["pods"]["default/p"]["node"] == "n0"


def test_pods_of_other_schedulers_are_listed_not_dropped(tmp_path: Path) -> None:
    other = ("---\napiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
             "spec: {schedulerName: default-scheduler, containers: [{name: c}]}\n")
    report = run(write(tmp_path, NODE + other))
    assert report["pods"] == {}
    assert report["otherSchedulers"] == [
        "default/web (schedulerName default-scheduler: not gangsched's, left unscheduled)"]


def test_a_finished_pod_of_another_scheduler_is_listed_as_not_counted(tmp_path: Path) -> None:
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\n"
        "spec: {schedulerName: default-scheduler, nodeName: n0, containers: [{name: c}]}\n"
        f"status: {{phase: {phase}}}\n" for name, phase in (("done", "Succeeded"),
                                                         ("web", "Running")))
    report = run(write(tmp_path, NODE + pods))
    assert report["otherSchedulers"] == [
        "default/done (schedulerName default-scheduler: bound to n0, Succeeded: its requests "
        "not counted)",
        "default/web (schedulerName default-scheduler: bound to n0, its requests counted)"]


def test_the_examples_a_user_applies_hold_no_node() -> None:
    kinds = {document["kind"] for path in sorted(EXAMPLES.glob("*.yaml"))
             for document in yaml.safe_load_all(path.read_text()) if document}
    assert kinds == {"Pod", "PodGroup", "ReplicaSet"}


def test_the_readmes_simulate_command_on_the_repositorys_examples(
        capsys: pytest.CaptureFixture[str]) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    assert simulate_command([DEMO_NODE, examples], "json") == 0
    pods = json.loads(capsys.readouterr().out)["pods"]
    nginx = [pod for name, pod in pods.items() if name.startswith("default/nginx-")]
    assert len(nginx) == 6 and sum(1 for pod in nginx if pod["node"]) == 3
    assert pods["default/annotation-second-scheduler"]["node"] == "kwok-node-0"


def test_a_pod_beyond_what_gangsched_counts_is_reported_waiting_on_a_node_beyond_it(
        tmp_path: Path) -> None:
    # were amounts clamped, the 1e30 request fitted the node of 1e15 (both were 2**48)
    node = ("apiVersion: v1\n"
            "kind: Node\nmetadata: {name: big}\nstatus: {allocatable: {cpu: 1e15, pods: 110}}\n")
    pods = ("---\napiVersion: v1\nkind: Pod\nmetadata: {name: huge}\nspec: {schedulerName: "
            "gangsched, containers: [{name: c, resources: {requests: {cpu: 1e30}}}]}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata: {name: fits}\nspec: {schedulerName: "
            "gangsched, containers: [{name: c, resources: {requests: {cpu: 1e11}}}]}\n")
    report = run(write(tmp_path, node + pods))
    assert report["pods"]["default/huge"]["node"] is None
    assert "cpu 1e30 is beyond the largest amount gangsched can place" in (
        report["pods"]["default/huge"]["reason"])
    assert report["pods"]["default/fits"]["node"] == "big"


def test_each_filter_and_rule_case_lands_where_its_header_says() -> None:
    def nodes(case: str) -> dict[str, Any]:
        return {name: pod["node"] for name, pod in run(GOLDEN / f"{case}.yaml")["pods"].items()
                if pod["group"] != ""}

    assert {k: v for k, v in nodes("heterogeneous-gang").items() if "train" in k} == {
        "default/train-0": "n1", "default/train-1": "n0"}
    assert nodes("preferred-anti-affinity")["default/quiet"] == "n1"
    assert sorted(node for name, node in nodes("inter-pod-anti-affinity").items()
                  if "workers" in name) == ["big", "h1", "h2"]
    assert nodes("node-ports") == {"default/web-a": "n1", "default/web-b": None}
