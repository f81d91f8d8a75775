"""`gangsched simulate` on malformed manifests: each is one line naming the file, the document
and the field, and exit status 2, never a traceback. A field of the wrong JSON type is refused
as the API server refuses to decode it (`services/planner/simulate/shapes.py`); the YAML is read
as kubectl reads it (`services/cli/manifest_yaml.py`); what reading a document raises that no
check foresaw is the last resort's one line (`manifests.reading`)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from services.cli.simulate import COMMAND, render_table, simulate_command
from services.planner.simulate import manifests

NODE = ("apiVersion: v1\nkind: Node\nmetadata: {name: n0}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n")
"""Document 1 of every case: a node, so that the object under test is document 2."""
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: p{meta}}}\n"
       "spec: {{{spec}containers: [{{name: c}}]}}\n")
REPLICA_SET = ("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: r}}\nspec: "
               "{{replicas: 1, template: {{{template}spec: {{containers: [{{name: c}}]}}}}}}\n")


def pod(meta: str = "", spec: str = "") -> str:
    return POD.format(meta=meta, spec=spec)


def simulate(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str],
             output: str = "json") -> tuple[int, str, str]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    code = simulate_command([path], output)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def refused(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `text` is refused with, less the command and file prefix (exit 2)."""
    code, _, err = simulate(tmp_path, text, capsys)
    assert code == 2, err
    prefix = f"{COMMAND}: {tmp_path / 'in.yaml'}"
    assert err.endswith("\n") and err.count("\n") == 1 and err.startswith(prefix), err
    return err.removeprefix(prefix).removesuffix("\n")


AT = 'simulate.gangsched.io/at'
RUNTIME = 'simulate.gangsched.io/runtime'


@pytest.mark.parametrize(("annotation", "given"), [
    (AT, "inf"), (AT, "Infinity"), (AT, "1e309"), (AT, "nan"), (AT, "1e300"),
    (AT, "1000000000.5"), (RUNTIME, "inf"), (RUNTIME, "1e309"), (RUNTIME, "-1"),
])
def test_an_arrival_or_runtime_beyond_the_bound_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], annotation: str, given: str) -> None:
    text = NODE + pod(meta=f', annotations: {{{annotation}: "{given}"}}')
    assert refused(tmp_path, text, capsys) == (
        f' document 2 (Pod p): metadata.annotations["{annotation}"]: must be a number of '
        f"seconds from 0 to 1000000000, got '{given}'")


def test_an_unquoted_number_on_a_later_workload_is_no_annotation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + pod() + "---\napiVersion: batch/v1\nkind: Job\n" + (
        f"metadata: {{name: j, annotations: {{{AT}: 1.0e+308}}}}\n"
        "spec: {template: {spec: {containers: [{name: c}]}}}\n")
    assert refused(tmp_path, text, capsys) == (
        f' document 3 (Job j): metadata.annotations["{AT}"]: must be a string, got 1e+308 '
        '(quote it: "1e+308")')


@pytest.mark.parametrize(("template", "message"), [
    ("metadata: {labels: [app]}, ", "spec.template.metadata.labels: must be a mapping, got "
                                    "['app']"),
    ("metadata: {labels: 5}, ", "spec.template.metadata.labels: must be a mapping, got 5"),
    ("metadata: [1], ", "spec.template.metadata: must be a mapping, got [1]"),
    ("metadata: x, ", "spec.template.metadata: must be a mapping, got 'x'"),
    ("metadata: {labels: {app: [web]}}, ",
     """spec.template.metadata.labels["app"]: must be a string, got ['web']"""),
    ("metadata: {annotations: {a: 1}}, ",
     'spec.template.metadata.annotations["a"]: must be a string, got 1 (quote it: "1")'),
])
def test_a_workload_template_of_the_wrong_type_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str, message: str) -> None:
    text = NODE + REPLICA_SET.format(template=template)
    assert refused(tmp_path, text, capsys) == f" document 2 (ReplicaSet r): {message}"


def test_a_null_template_metadata_is_none(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + REPLICA_SET.format(template="metadata: null, ").replace(
        "spec: {replicas", "spec: {selector: {matchExpressions: [{key: app, operator: "
        "DoesNotExist}]}, replicas")  # what a template without labels matches
    code, out, err = simulate(tmp_path, text, capsys)
    assert code == 0, err
    assert json.loads(out)["otherSchedulers"][0].startswith("default/r-")


def test_a_workload_templates_containers_are_named_in_the_template(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n"
                   "spec: {template: {spec: {containers: {name: c}}}}\n")
    assert refused(tmp_path, text, capsys) == (
        " document 2 (Job j): spec.template.spec.containers: must be a list of containers "
        "(mappings), at least one")


@pytest.mark.parametrize(("text", "message"), [
    (pod(spec="priorityClassName: [gold], "),
     "document 2 (Pod default/p): spec.priorityClassName: must be a string, got ['gold']"),
    (pod(spec="schedulerName: 5, "),
     'document 2 (Pod default/p): spec.schedulerName: must be a string, got 5 (quote it: "5")'),
    (pod(meta=", labels: {version: 1}"),
     'document 2 (Pod default/p): metadata.labels["version"]: must be a string, got 1 '
     '(quote it: "1")'),
    (pod(meta=", labels: {enabled: true}"),
     'document 2 (Pod default/p): metadata.labels["enabled"]: must be a string, got True '
     '(quote it: "true")'),
    (pod(meta=", namespace: [a]"),
     "document 2 (Pod p): metadata.namespace: must be a string, got ['a']"),
    (pod(spec="tolerations: x, "),
     "document 2 (Pod default/p): spec.tolerations: must be a list, got 'x'"),
    (pod(spec="nodeSelector: [zone], "),
     "document 2 (Pod default/p): spec.nodeSelector: must be a mapping, got ['zone']"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
     "spec: {containers: [{name: c, resources: {requests: [cpu]}}]}\n",
     "document 2 (Pod default/p): spec.containers[0].resources.requests: must be a mapping, "
     "got ['cpu']"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
     "spec: {containers: [{name: c, ports: [{hostPort: '80'}]}]}\n",
     "document 2 (Pod default/p): spec.containers[0].ports[0].hostPort: must be a 32-bit "
     "integer, got '80'"),
    (pod(spec="topologySpreadConstraints: [{maxSkew: 1, topologyKey: z, whenUnsatisfiable: "
              "DoNotSchedule, labelSelector: {matchLabels: x}}], "),
     "document 2 (Pod default/p): spec.topologySpreadConstraints[0].labelSelector.matchLabels: "
     "must be a mapping, got 'x'"),
    (pod(spec="affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
              "{nodeSelectorTerms: [{matchExpressions: [{key: z, operator: In, "
              "values: zone-a}]}]}}}, "),
     "document 2 (Pod default/p): spec.affinity.nodeAffinity."
     "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
     ".values: must be a list, got 'zone-a'"),
    (pod(spec="affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "
              "[{weight: '5', preference: {matchExpressions: [{key: z, operator: Exists}]}}]}}, "),
     "document 2 (Pod default/p): spec.affinity.nodeAffinity."
     "preferredDuringSchedulingIgnoredDuringExecution[0].weight: must be a 32-bit integer, "
     "got '5'"),
    (pod(spec="affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "
              "[{weight: 5, preference: {matchFields: {key: metadata.name}}}]}}, "),
     "document 2 (Pod default/p): spec.affinity.nodeAffinity."
     "preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields: must be a "
     "list, got {'key': 'metadata.name'}"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: 5}\nspec: {containers: [{name: c}]}\n",
     "document 2 (Pod ?): metadata.name: must be a string, got 5"),
    ("apiVersion: v1\nkind: Pod\nmetadata: g\nspec: {containers: [{name: c}]}\n",
     "document 2 (Pod ?): metadata: must be a mapping, got 'g'"),
    ("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: [r]\nspec: {}\n",
     "document 2 (ReplicaSet ?): metadata: must be a mapping, got ['r']"),
    ("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Node, metadata: 5}]\n",
     "document 2 (Node ?): metadata: must be a mapping, got 5"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: 5}]}\n",
     'document 2 (Pod default/p): spec.containers[0].name: must be a string, got 5 (quote it: '
     '"5")'),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
     "spec: {containers: [{name: c, ports: [{name: [http], containerPort: 80}]}]}\n",
     "document 2 (Pod default/p): spec.containers[0].ports[0].name: must be a string, got "
     "['http']"),
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
     "spec: {selector: {matchLabels: [app]}, template: {spec: {containers: [{name: c}]}}}\n",
     "document 2 (Deployment d): spec.selector.matchLabels: must be a mapping, got ['app']"),
    ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n"
     "spec: {selector: app, template: {spec: {containers: [{name: c}]}}}\n",
     "document 2 (Job j): spec.selector: must be a mapping, got 'app'"),
    ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\n"
     "spec: {resources: '10Gi'}\n",
     "document 2 (PersistentVolumeClaim default/c): spec.resources: must be a mapping, "
     "got '10Gi'"),
    ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\n"
     "spec: {resources: {requests: {storage: 1Gi}}, storageClassName: [fast]}\n",
     "document 2 (PersistentVolumeClaim default/c): spec.storageClassName: must be a string, "
     "got ['fast']"),
    ("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
     "spec: {taints: {key: a}}\nstatus: {allocatable: {cpu: '1'}}\n",
     "document 2 (Node n1): spec.taints: must be a list, got {'key': 'a'}"),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: gold, "
     "labels: [x]}\nvalue: 10\n",
     "document 2 (PriorityClass gold): metadata.labels: must be a mapping, got ['x']"),
    ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\n"
     "spec: {minAvailable: '²%'}\n",
     "document 2 (PodDisruptionBudget default/b): spec.minAvailable: must be an integer >= 0 "
     "or a percentage such as '50%' (at most 100%), got '²%'"),
    ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\n"
     "spec: {minAvailable: 4294967296}\n",
     "document 2 (PodDisruptionBudget default/b): spec.minAvailable: must be an integer >= 0 "
     "or a percentage such as '50%' (at most 100%), got 4294967296"),
    ("apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\n"
     "spec: {schedulingPolicy: {gang: {minCount: '2'}}}\n",
     "document 2 (PodGroup default/g): spec.schedulingPolicy.gang.minCount: must be a 32-bit "
     "integer, got '2'"),
])
def test_a_field_of_the_wrong_type_is_refused_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    assert refused(tmp_path, NODE + text, capsys) == f" {message}"


def test_a_null_metadata_is_an_object_without_a_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + "apiVersion: v1\nkind: Pod\nmetadata: null\nspec: {containers: [{name: c}]}\n"
    assert refused(tmp_path, text, capsys) == " document 2 (Pod ?): metadata.name: missing"


def test_a_name_with_a_line_break_keeps_the_message_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + 'apiVersion: v1\nkind: Pod\nmetadata: {name: "a\\nb"}\n' + (
        "spec: {priorityClassName: gold, containers: [{name: c}]}\n")
    assert refused(tmp_path, text, capsys) == (
        " document 2 (Pod 'a\\nb'): metadata.name: Invalid value: \"a\\nb\": a "
        "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
        "[a-z0-9])?)*')")


@pytest.mark.parametrize(("text", "message"), [
    (pod(spec="x: " + "[" * 500 + "]" * 500 + ", "),
     ": line 9 column 209: nested more than 200 lists and mappings deep; no Kubernetes "
     "object is"),
    (pod(spec="tolerations: &t [*t], "),
     ": line 9 column 25: anchor 't' value contains itself"),
    (pod(spec=f"x: {'9' * 5000}, "),
     ": line 9 column 11: an integer of 5000 characters: too long to read"),
])
def test_yaml_no_manifest_needs_is_refused_with_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    assert refused(tmp_path, NODE + text, capsys) == message


def test_an_unquoted_timestamp_is_read_as_kubectl_reads_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, creationTimestamp: "
        f"{stamp}, labels: {{day: 2024-01-01}}}}\nspec: {{schedulerName: gangsched, "
        "containers: [{name: c, resources: {requests: {cpu: '4'}}}]}\n"
        for name, stamp in (("a-later", "2024-01-01T00:00:05Z"),
                            ("b-earlier", "2024-01-01T00:00:01Z")))
    code, out, err = simulate(tmp_path, NODE.removesuffix("---\n") + pods, capsys)
    assert code == 0, err
    report = json.loads(out)["pods"]
    assert [name for name, pod in report.items() if pod["node"]] == ["default/b-earlier"]
    assert report["default/a-later"]["reason"] == (
        "0/1 nodes are available: 1 Insufficient cpu.")


def test_a_name_that_looks_like_console_markup_is_printed_as_it_is() -> None:
    """No name the API server takes holds brackets, but a report's text is printed as it is
    whatever it holds."""
    pod = {"group": "[bold]g", "node": None, "boundAt": None, "reason": "[red]why"}
    data = {"pods": {"default/[/x]": pod}, "podGroups": {}, "preemptions": [],
            "otherSchedulers": [], "ignored": [], "endedAt": 0}
    console = Console(file=io.StringIO(), width=200)
    render_table(data, console)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "│ default/[/x] │ [bold]g │" in out and "[red]why" in out


def test_the_last_resort_turns_an_unexpected_error_into_the_documents_line() -> None:
    with pytest.raises(manifests.InvalidManifest) as raised, manifests.reading(
            "in.yaml document 2 (Pod default/p)"):
        raise TypeError("unhashable type: 'list'\n(more)")
    assert str(raised.value) == (
        "in.yaml document 2 (Pod default/p): cannot be read: a field has a type or value "
        "simulate does not expect (TypeError: unhashable type: 'list' (more))")


def test_a_preferred_node_term_the_api_server_refuses_is_refused_naming_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + pod(spec="affinity: {nodeAffinity: {preferredDuringSchedulingIgnored"
                           "DuringExecution: [{weight: 0, preference: {}}]}}, ")
    assert refused(tmp_path, text, capsys) == (
        " document 2 (Pod default/p): spec.affinity.nodeAffinity.preferredDuringScheduling"
        "IgnoredDuringExecution[0].weight must be in the range 1-100, got 0")


REQUIRED_TERMS = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution" \
    ".nodeSelectorTerms"


@pytest.mark.parametrize(("terms", "told"), [
    ("[]", " must have at least one node selector term"),
    ("null", " must have at least one node selector term"),
    ("[{matchExpressions: [{key: a, operator: Bogus, values: [x]}]}]",
     "[0].matchExpressions[0].operator is not a valid selector operator: 'Bogus'"),
    ("[{}, {matchExpressions: [{key: a, operator: In}]}]",
     "[1].matchExpressions[0].values must be specified when `operator` is In"),
    ("[{matchExpressions: [{key: a, operator: Gt, values: ['1', '2']}]}]",
     "[0].matchExpressions[0].values must be exactly one value when `operator` is Gt"),
    ("[{matchExpressions: [{key: '', operator: Exists}]}]",
     "[0].matchExpressions[0].key is not a valid label name: ''"),
    ("[{matchFields: [{key: metadata.name, operator: Exists}]}]",
     "[0].matchFields[0].operator is not a valid field selector operator: 'Exists'"),
])
def test_a_required_node_term_the_api_server_refuses_is_refused_naming_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], terms: str, told: str) -> None:
    """Checked as a preferred term's `preference` is; a bad operator used to be read as
    matching no node, the pod left waiting ("didn't match Pod's node affinity/selector")."""
    text = NODE + pod(spec="affinity: {nodeAffinity: {requiredDuringSchedulingIgnored"
                           f"DuringExecution: {{nodeSelectorTerms: {terms}}}}}}}, ")
    assert refused(tmp_path, text, capsys) == f" document 2 (Pod default/p): {REQUIRED_TERMS}{told}"
