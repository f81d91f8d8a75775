"""`gangsched simulate` gives a workload's pods the labels Kubernetes gives them
(services/planner/simulate/controller_labels.py), so affinity and spread that select a Job's
pods by `job-name` judge them as on a cluster; and refuses labels the API server refuses
(services/planner/simulate/object_labels.py), a Job named beyond 63 characters among them,
in the API server's words, as one line and exit status 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from services.planner.simulate import manifests, object_labels
from services.planner.simulate.manifests import Document
from tests.unit.test_simulate_api_versions import simulate

NODE = ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        "status: {allocatable: {cpu: '4', pods: '10'}}\n")
"""A node as written by hand: no `kubernetes.io/hostname` label (the kubelet would add it)."""

JOB = """apiVersion: batch/v1
kind: Job
metadata: {{name: {name}}}
spec:
  parallelism: 2
  completions: 2{extra}
  template:
    metadata: {{labels: {{app: train}}}}
    spec:
      schedulerName: gangsched
      containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]{affinity}
"""
MANUAL = "\n  manualSelector: true\n  selector: {matchLabels: {app: train}}"
"""A Job's own selector (without it, `manualSelector: true` is refused: a selector is required)."""
APART = """
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {job-name: train}}"""


def pods(text: str) -> list[dict[str, Any]]:
    documents = [Document("in.yaml", i + 1, body)
                 for i, body in enumerate(yaml.safe_load_all(text))]
    items, _ = manifests.expand(documents)
    return [item.obj for item in items if item.kind == "Pod"]


def test_a_jobs_pods_carry_the_labels_the_api_server_adds() -> None:
    made = pods(JOB.format(name="train", extra="", affinity=""))
    assert len(made) == 2
    for pod in made:
        labels = pod["metadata"]["labels"]
        assert labels["app"] == "train"
        assert labels["job-name"] == labels["batch.kubernetes.io/job-name"] == "train"
        assert labels["controller-uid"] == labels["batch.kubernetes.io/controller-uid"] \
            == pod["metadata"]["ownerReferences"][0]["uid"]
    manual = pods(JOB.format(name="train", extra=MANUAL, affinity=""))
    assert set(manual[0]["metadata"]["labels"]) == {"app"}


def test_an_indexed_jobs_pods_are_named_and_labelled_by_index() -> None:
    made = pods(JOB.format(name="train", extra="\n  completionMode: Indexed", affinity=""))
    key = "batch.kubernetes.io/job-completion-index"
    assert [pod["metadata"]["labels"][key] for pod in made] == ["0", "1"]
    assert [pod["metadata"]["annotations"][key] for pod in made] == ["0", "1"]
    assert [pod["metadata"]["name"][:len("train-0-")] for pod in made] == ["train-0-", "train-1-"]
    assert all(len(pod["metadata"]["name"]) == len("train-0-") + 5 for pod in made)


def test_a_statefulsets_pods_carry_their_name_index_and_revision() -> None:
    text = ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  replicas: 2\n"
            "  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n"
            "    spec: {containers: [{name: c}]}\n")
    made = pods(text)
    assert [pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] for pod in made] \
        == ["db-0", "db-1"]
    assert [pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] for pod in made] \
        == ["0", "1"]
    revisions = {pod["metadata"]["labels"]["controller-revision-hash"] for pod in made}
    assert len(revisions) == 1 and revisions.pop().startswith("db-")


def test_anti_affinity_by_job_name_keeps_a_jobs_pods_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = simulate(tmp_path, NODE + "---\n" + JOB.format(name="train", extra="",
                                                                affinity=APART), capsys)
    assert code == 0
    placed = [name for name, pod in yaml.safe_load(out)["pods"].items() if pod["node"]]
    assert len(placed) == 1  # one node: the second pod of the Job may not join the first


def test_a_job_named_beyond_63_characters_is_refused_in_the_api_servers_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "t" * 64
    code, err = simulate(tmp_path, JOB.format(name=name, extra="", affinity=""), capsys)
    assert code == 2
    assert err.strip().endswith(
        f'spec.template.labels: Invalid value: "{name}": must be no more than 63 bytes')
    assert len(err.strip().splitlines()) == 1
    code, _ = simulate(tmp_path, JOB.format(name=name, extra=MANUAL, affinity=""), capsys)
    assert code == 0  # no generated selector, no job-name label


def test_an_indexed_job_whose_last_host_name_is_too_long_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "t" * 62  # a valid label value; "-1" makes the host name 64 characters
    code, err = simulate(tmp_path, JOB.format(name=name, extra="\n  completionMode: Indexed",
                                              affinity=""), capsys)
    assert code == 2
    assert f'metadata.name: Invalid value: "{name}": will not able to create pod with invalid ' \
           f"DNS label: {name}-1" in err


@pytest.mark.parametrize(("labels", "why"), [
    ("{app: 'a b'}", 'Invalid value: "a b": ' + object_labels.VALUE_RULE),
    ("{'a/b/c': x}", 'Invalid value: "a/b/c": a valid label key must consist of alphanumeric '
                     "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                     "character (e.g. 'MyName' or 'my.name' or '123-abc', regex used for "
                     "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
                     "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    ("{'/x': y}", 'Invalid value: "/x": prefix part must be non-empty'),
    ("{'Example.com/x': y}", 'Invalid value: "Example.com/x": prefix part a lowercase RFC 1123'),
    ("{'x/': y}", 'Invalid value: "x/": name part must be non-empty'),
    (f"{{{'k' * 64}: y}}", f'Invalid value: "{"k" * 64}": name part must be no more than 63 '
                           "bytes"),
    (f"{{k: {'v' * 64}}}", f'Invalid value: "{"v" * 64}": must be no more than 63 bytes'),
    ("{k: -v}", 'Invalid value: "-v": a valid label must be an empty string'),
])
def test_a_label_the_api_server_refuses_is_one_line_naming_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], labels: str, why: str) -> None:
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: " + labels + "}\n"
           "spec: {containers: [{name: c}]}\n")
    code, err = simulate(tmp_path, NODE + "---\n" + pod, capsys)
    assert code == 2
    assert f"metadata.labels: {why}" in err
    assert len(err.strip().splitlines()) == 1


def test_valid_labels_pass() -> None:
    assert object_labels.problem({"app": "", "example.com/My_Name.v1": "A-1_b.2",
                                  "k" * 63: "v" * 63}) is None


def test_a_node_without_a_host_name_label_gets_its_name_and_keeps_its_own() -> None:
    documents = [Document("in.yaml", 1, yaml.safe_load(NODE)),
                 Document("in.yaml", 2, yaml.safe_load(NODE.replace(
                     "{name: n}", "{name: m, labels: {kubernetes.io/hostname: host-m}}")))]
    items, _ = manifests.expand(documents)
    assert [item.obj["metadata"]["labels"] for item in items] == [
        {"kubernetes.io/hostname": "n"}, {"kubernetes.io/hostname": "host-m"}]


def test_a_nodes_labels_of_the_wrong_type_are_still_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = simulate(tmp_path, NODE.replace("{name: n}", "{name: n, labels: [a]}"), capsys)
    assert code == 2 and "metadata.labels: must be a mapping" in err


def test_a_node_named_beyond_63_characters_keeps_its_name_and_gets_no_host_name_label(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A node name may be a 253-character subdomain, a label value only 63 bytes: the label
    simulate adds must not get a valid Node refused."""
    name = "worker-" + "a" * 60 + ".compute.internal"
    code, out = simulate(tmp_path, NODE.replace("{name: n}", f"{{name: {name}}}"), capsys)
    assert code == 0, out
    documents = [Document("in.yaml", 1, yaml.safe_load(NODE.replace("{name: n}",
                                                                    f"{{name: {name}}}")))]
    assert manifests.expand(documents)[0][0].obj["metadata"]["labels"] == {}


def test_a_statefulset_whose_pods_its_controller_cannot_create_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Past 52 characters `controller-revision-hash` (`<name>-<10 chars>`) is no label value:
    the API server takes the StatefulSet and refuses each of its pods (kubernetes#64023)."""
    name = "s" * 60
    text = (f"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: {name}}}\nspec:\n"
            "  replicas: 2\n  selector: {matchLabels: {app: s}}\n"
            "  template: {metadata: {labels: {app: s}}, spec: {containers: [{name: c}]}}\n")
    code, err = simulate(tmp_path, NODE + "---\n" + text, capsys)
    assert code == 2
    assert (f"metadata.name: its controller cannot create pod {name}-1: metadata.labels: "
            f'Invalid value: "{name}-') in err
    assert "must be no more than 63 bytes" in err and len(err.strip().splitlines()) == 1
    short = text.replace(name, "s" * 52)
    assert simulate(tmp_path, NODE + "---\n" + short, capsys)[0] == 0


@pytest.mark.parametrize("label", ["job-name", "batch.kubernetes.io/job-name"])
def test_a_job_template_contradicting_its_generated_selector_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str) -> None:
    text = JOB.format(name="train", extra="", affinity="").replace(
        "{labels: {app: train}}", f"{{labels: {{app: train, {label}: other}}}}")
    code, err = simulate(tmp_path, NODE + "---\n" + text, capsys)
    assert code == 2
    assert f"spec.template.metadata.labels[{label}]: Invalid value: \"other\": must be " \
           "'train'" in err
    manual = text.replace("  completions: 2", f"  completions: 2{MANUAL}")
    assert simulate(tmp_path, NODE + "---\n" + manual, capsys)[0] == 0


def test_a_lone_surrogate_in_a_label_is_measured_not_raised() -> None:
    assert object_labels.value_problem("\udc80" * 22) == "must be no more than 63 bytes"
    assert object_labels.value_problem("a\udc80") is not None  # and no label value anyway
