"""`gangsched simulate` reads RuntimeClasses (node.k8s.io/v1) and admits each pod as the API
server's RuntimeClass admission plugin does (services/planner/simulate/runtime_classes.py,
Kubernetes 1.36): the class named by `runtimeClassName` sets the pod's overhead, which the
planner charges, and merges its node selector and tolerations into the pod's; what the plugin
refuses, and a RuntimeClass its validation refuses, is one line and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.contracts import quantity_syntax
from services.planner.simulate import object_labels, object_names, runtime_classes
from tests.unit.test_simulate_malformed import refused, simulate
from tests.unit.test_simulate_priority import pods_of

NODE = ("apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{{labels}}}}}\n"
        "spec: {{taints: [{taints}]}}\n"
        "status: {{allocatable: {{cpu: '4', memory: 8Gi, pods: '110'}}}}\n---\n")
GANG = ("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
        "metadata: {{name: g, namespace: default}}\nspec: {{minMember: {size}}}\n---\n")
KATA = ("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\n"
        "handler: kata\n")
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: "
       "{{scheduling.x-k8s.io/pod-group: g}}}}\nspec:\n  schedulerName: gangsched\n{spec}"
       "  containers: [{{name: c, resources: {{requests: {{cpu: '{cpu}'}}}}}}]\n---\n")
KATA_POD = "  runtimeClassName: kata\n"
NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}
"""The tolerations DefaultTolerationSeconds adds before the RuntimeClass plugin merges."""


def node(name: str = "n1", labels: str = "", taints: str = "") -> str:
    return NODE.format(name=name, labels=labels, taints=taints)


def kata(body: str = "") -> str:
    """The RuntimeClass `kata`, `body` (its fields besides `handler`) added."""
    return f"{KATA}{body}---\n"


def pod(name: str = "p", spec: str = KATA_POD, cpu: str = "1") -> str:
    return POD.format(name=name, spec=spec, cpu=cpu)


def outcome(tmp_path: Path, text: str,
            capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[str | None, str | None]]:
    """Each pod's node and reason once simulated (exit status 0)."""
    code, out, err = simulate(tmp_path, text, capsys)
    assert code == 0, err
    return {name: (pod["node"], pod["reason"]) for name, pod in json.loads(out)["pods"].items()}


def spec_of(text: str) -> dict[str, Any]:
    """The spec of the only pod of `text`, as admitted."""
    (item,) = pods_of(text)
    spec: dict[str, Any] = item.obj["spec"]
    return spec


def test_the_overhead_is_charged_so_a_gang_that_fits_without_it_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overhead = kata("overhead: {podFixed: {cpu: 250m}}\n")
    plain = node() + GANG.format(size=2) + overhead + pod("a", "", "1900m") + pod("b", "", "1900m")
    assert outcome(tmp_path, plain, capsys) == {"default/a": ("n1", None),
                                                "default/b": ("n1", None)}
    charged = (node() + GANG.format(size=2) + overhead + pod("a", cpu="1900m")
               + pod("b", cpu="1900m"))
    reason = ("gang default/g: 1 of 2 members fit; 0/1 nodes are available: 1 Insufficient "
              "cpu.")
    assert outcome(tmp_path, charged, capsys) == {"default/a": (None, reason),
                                                  "default/b": (None, reason)}
    assert spec_of(overhead + pod())["overhead"] == {"cpu": "250m"}


def test_the_node_selector_is_merged_so_only_labelled_nodes_take_the_pod(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    selecting = kata("scheduling: {nodeSelector: {runtime: kata}}\n")
    text = GANG.format(size=1) + selecting + pod()
    assert outcome(tmp_path, node() + text, capsys) == {"default/p": (
        None, "gang default/g: 0 of 1 members fit; 0/1 nodes are available: 1 node(s) didn't "
              "match Pod's node affinity/selector.")}
    labelled = node() + node("n2", "runtime: kata")
    assert outcome(tmp_path, labelled + text, capsys) == {"default/p": ("n2", None)}
    # the pod's own selector keeps its keys, the class's added; a key of both may agree
    merged = spec_of(selecting + pod(spec=KATA_POD + "  nodeSelector: {zone: a, runtime: kata}\n"))
    assert merged["nodeSelector"] == {"zone": "a", "runtime": "kata"}
    assert spec_of(selecting + pod())["nodeSelector"] == {"runtime": "kata"}


def test_the_tolerations_are_merged_so_the_pod_goes_to_nodes_the_class_tolerates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tainted = node(taints="{key: sandbox, value: kata, effect: NoSchedule}")
    tolerating = kata("scheduling: {tolerations: [{key: sandbox, operator: Equal, value: kata, "
                      "effect: NoSchedule}]}\n")
    assert outcome(tmp_path, tainted + GANG.format(size=1) + tolerating + pod(), capsys) == {
        "default/p": ("n1", None)}
    assert outcome(tmp_path, tainted + GANG.format(size=1) + tolerating + pod(spec=""),
                   capsys) == {"default/p": (None, (
                       "gang default/g: 0 of 1 members fit; 0/1 nodes are available: 1 "
                       "node(s) had untolerated taint(s)."))}
    # the pod's (with DefaultTolerationSeconds') first, then the class's
    own = pod(spec=KATA_POD + "  tolerations: [{key: gpu, operator: Exists}]\n")
    assert spec_of(tolerating + own)["tolerations"] == [
        {"key": "gpu", "operator": "Exists"}, NOT_READY, UNREACHABLE,
        {"key": "sandbox", "operator": "Equal", "value": "kata", "effect": "NoSchedule"}]


def test_a_toleration_another_tolerates_a_superset_of_is_dropped_as_kubernetes_merges() -> None:
    # the class tolerates not-ready for longer: DefaultTolerationSeconds' own is dropped
    longer = kata("scheduling: {tolerations: [{key: node.kubernetes.io/not-ready, operator: "
                  "Exists, effect: NoExecute, tolerationSeconds: 600}]}\n")
    assert spec_of(longer + pod())["tolerations"] == [
        UNREACHABLE, {**NOT_READY, "tolerationSeconds": 600}]
    # an empty key with Exists tolerates every taint: the pod's others are dropped
    every = kata("scheduling: {tolerations: [{operator: Exists}]}\n")
    assert spec_of(every + pod())["tolerations"] == [{"operator": "Exists"}]
    # of two equal ones the first is kept; a later subset is dropped
    merge = runtime_classes.merge_tolerations
    exists = {"key": "k", "operator": "Exists"}
    equal = {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
    assert merge([exists, dict(exists)], [equal]) == [exists]
    assert merge([equal], [exists]) == [exists]
    # Go's quirk: an Equal toleration covers only one whose operator is written Equal, while
    # one of no operator (Equal too) covers both
    unwritten = {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert merge([unwritten], [equal]) == [unwritten]
    assert merge([equal], [unwritten]) == [unwritten]
    assert merge([None], []) == [{}]


MISMATCH = ("spec.overhead: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined "
            "Overhead")
WITHOUT_CLASS = ("spec.overhead: pod rejected: Pod Overhead set without corresponding "
                 "RuntimeClass defined Overhead")


@pytest.mark.parametrize(("text", "line"), [
    (pod(spec="  runtimeClassName: gvisor\n"),
     'spec.runtimeClassName: pod rejected: RuntimeClass "gvisor" not found'),
    (pod(spec="  runtimeClassName: ''\n"),
     "spec.runtimeClassName: resource name may not be empty"),
    (pod(spec="  runtimeClassName: a/b\n"),
     "spec.runtimeClassName: invalid resource name \"a/b\": [may not contain '/']"),
    (kata("overhead: {podFixed: {cpu: 250m}}\n")
     + pod(spec=KATA_POD + "  overhead: {cpu: 100m}\n"),
     MISMATCH),
    (kata("overhead: {podFixed: {cpu: 250m}}\n")
     + pod(spec=KATA_POD + "  overhead: {cpu: 250m, memory: 1Mi}\n"),
     MISMATCH),
    (kata("overhead: {}\n") + pod(spec=KATA_POD + "  overhead: {cpu: 1}\n"),
     MISMATCH),
    (kata("scheduling: {nodeSelector: {runtime: kata}}\n")
     + pod(spec=KATA_POD + "  nodeSelector: {runtime: runc}\n"),
     "spec.nodeSelector: conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; "
     "pod.spec.nodeSelector[runtime] = runc"),
    (pod(spec="  overhead: {cpu: 250m}\n"),
     WITHOUT_CLASS),
    (pod(spec="  overhead: {}\n"),
     WITHOUT_CLASS),
    (kata() + pod(spec=KATA_POD + "  overhead: {cpu: 250m}\n"),
     WITHOUT_CLASS),
    # validated as the pod is, between the plugin's Admit and Validate
    (pod(spec="  overhead: {gpu: 1}\n"),
     'spec.overhead.limits[gpu]: Invalid value: "gpu": must be a standard resource type or '
     "fully qualified"),
])
def test_what_the_runtime_class_plugin_refuses_is_one_line_naming_the_pod(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: str) -> None:
    number = text.count("---\n") + 1
    assert refused(tmp_path, node() + text, capsys) == (
        f" document {number} (Pod default/p): {line}")


LABEL_RULE = object_names.LABEL_RULE
"""The rule of a DNS-1123 label, which a handler must be."""
VALUE_RULE = object_labels.VALUE_RULE


@pytest.mark.parametrize(("body", "line"), [
    ("", "handler: Required value"),
    ("handler: Kata\n", f'handler: Invalid value: "Kata": {LABEL_RULE}'),
    ("handler: kata.v2\n", 'handler: Invalid value: "kata.v2": must not contain dots'),
    ("handler: 5\n", 'handler: must be a string, got 5 (quote it: "5")'),
    ("handler: kata\noverhead: {podFixed: {gpu: 1}}\n",
     'overhead.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully '
     "qualified"),
    ("handler: kata\noverhead: {podFixed: {pods: 1}}\n",
     'overhead.limits[pods]: Invalid value: "pods": must be a standard resource for containers'),
    ("handler: kata\noverhead: {podFixed: {cpu: '-1'}}\n",
     'overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
    ("handler: kata\noverhead: {podFixed: {cpu: 1, example.com/fpga: 1500m}}\n",
     'overhead.limits[example.com/fpga]: Invalid value: "1500m": must be an integer'),
    ("handler: kata\noverhead: {podFixed: {memory: 1Gi, hugepages-2Mi: 1Mi}}\n",
     'overhead.limits[hugepages-2Mi]: Invalid value: "1Mi": 1Mi is not positive integer '
     "multiple of hugepages-2Mi"),
    ("handler: kata\noverhead: {podFixed: {hugepages-2Mi: 4Mi}}\n",
     "overhead: Forbidden: HugePages require cpu or memory"),
    # a quantity that does not decode is named where it is written, before any rule
    ("overhead: {podFixed: {cpu: 1e3Ki}}\n",
     "overhead.podFixed.cpu: invalid quantity '1e3Ki': quantities must match the regular "
     "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ("handler: kata\noverhead: {podFixed: [cpu]}\n",
     "overhead.podFixed: must be a mapping, got ['cpu']"),
    ("handler: kata\nscheduling: {nodeSelector: {runtime: a b}}\n",
     f'scheduling.nodeSelector: Invalid value: "a b": {VALUE_RULE}'),
    ("handler: kata\nscheduling: {tolerations: [{key: k, operator: Foo}]}\n",
     'scheduling.tolerations[0].operator: Unsupported value: "Foo": supported values: "Equal", '
     '"Exists"'),
    ("handler: kata\nscheduling: {tolerations: [{key: k, effect: NoExecute, "
     "tolerationSeconds: '5'}]}\n",
     "scheduling.tolerations[0].tolerationSeconds: must be a 64-bit integer, got '5'"),
    ("handler: kata\nscheduling: {tolerations: [{key: k, value: v, effect: NoExecute}, "
     "{key: k, operator: Equal, value: v, effect: NoExecute}, "
     "{key: k, value: v, effect: NoExecute, tolerationSeconds: 30}]}\n",
     'scheduling.tolerations[2]: Duplicate value: {"Key":"k","Operator":"","Value":"v",'
     '"Effect":"NoExecute","TolerationSeconds":30}'),
])
def test_a_runtime_class_its_validation_refuses_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, line: str) -> None:
    text = node() + "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\n"
    assert refused(tmp_path, text + body, capsys) == f" document 2 (RuntimeClass kata): {line}"


@pytest.mark.parametrize(("text", "line"), [
    (KATA.replace("{name: kata}", "{name: kata, labels: {a: b c}}"),
     f'document 2 (RuntimeClass kata): metadata.labels: Invalid value: "b c": {VALUE_RULE}'),
    (KATA.replace("node.k8s.io/v1", "node.k8s.io/v1beta1"),
     'document 2 (RuntimeClass kata): apiVersion: no matches for kind "RuntimeClass" in '
     'version "node.k8s.io/v1beta1" (RuntimeClass is node.k8s.io/v1)'),
    (KATA.replace("kind: RuntimeClass", "kind: RuntimeClas"),
     'document 2 (RuntimeClas kata): kind: no matches for kind "RuntimeClas" in version '
     '"node.k8s.io/v1" (did you mean RuntimeClass?)'),
    (KATA.replace("{name: kata}", "{name: Kata_1}"),
     'document 2 (RuntimeClass Kata_1): metadata.name: Invalid value: "Kata_1": '
     f"{object_names.SUBDOMAIN_RULE}"),
])
def test_a_runtime_class_is_refused_as_other_objects_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: str) -> None:
    assert refused(tmp_path, node() + text, capsys) == f" {line}"


def test_a_runtime_class_named_twice_is_refused_as_a_duplicate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(tmp_path, node() + KATA + "---\n" + KATA, capsys) == (
        " document 3 (RuntimeClass kata): metadata.name: duplicate RuntimeClass (also "
        f"{tmp_path / 'in.yaml'} document 2 (RuntimeClass kata))")


def test_a_job_template_naming_the_class_makes_pods_the_class_admits(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\n"
           "spec:\n  parallelism: 2\n  completions: 2\n  template:\n"
           "    metadata: {{labels: {{scheduling.x-k8s.io/pod-group: g}}}}\n    spec:\n"
           "      schedulerName: gangsched\n      runtimeClassName: {name}\n"
           "      restartPolicy: Never\n{extra}"
           "      containers: [{{name: c, resources: {{requests: {{cpu: '2'}}}}}}]\n")
    overhead = kata("overhead: {podFixed: {cpu: 500m}}\nscheduling: {nodeSelector: "
                    "{runtime: kata}}\n")
    cluster = node() + node("n2", "runtime: kata") + node("n3", "runtime: kata") + GANG.format(
        size=2) + overhead
    placed = outcome(tmp_path, cluster + job.format(name="kata", extra=""), capsys)
    assert sorted(placed.values()) == [("n2", None), ("n3", None)]  # 2.5 CPUs: one a node
    items = pods_of(overhead + job.format(name="kata", extra=""))
    assert [(item.obj["spec"]["overhead"], item.obj["spec"]["nodeSelector"])
            for item in items] == [({"cpu": "500m"}, {"runtime": "kata"})] * 2
    line = refused(tmp_path, node() + job.format(name="gvisor", extra=""), capsys)
    assert line.startswith(" document 2 (Pod default/j-") and line.endswith(
        '): spec.runtimeClassName: pod rejected: RuntimeClass "gvisor" not found'), line
    # the template's own overhead is decoded and validated with it, named in the template
    assert refused(tmp_path, node() + overhead + job.format(
        name="kata", extra="      overhead: {gpu: 1}\n"), capsys) == (
        ' document 3 (Job j): spec.template.spec.overhead.limits[gpu]: Invalid value: "gpu": '
        "must be a standard resource type or fully qualified")
    assert refused(tmp_path, node() + overhead + job.format(
        name="kata", extra="      overhead: {cpu: abc}\n"), capsys) == (
        " document 3 (Job j): spec.template.spec.overhead.cpu: invalid quantity 'abc': "
        f"{quantity_syntax.FORMAT_WRONG}")


@pytest.mark.parametrize(("ours", "theirs"), [
    ("{cpu: 500m, memory: 1Gi}", "{cpu: '0.5', memory: '1073741824'}"),
    ("{cpu: 1}", "{cpu: 1000m}"),
    ("{cpu: '1.0000000001'}", "{cpu: 1000000001n}"),  # rounded up to a nano-unit, as Go does
    ("{memory: 1Mi}", "{memory: 1024Ki}"),
])
def test_a_pod_overhead_equal_to_the_classes_in_amount_is_admitted(ours: str,
                                                                     theirs: str) -> None:
    text = kata(f"overhead: {{podFixed: {ours}}}\n") + pod(
        spec=f"{KATA_POD}  overhead: {theirs}\n")
    assert spec_of(text)["overhead"] == yaml.safe_load(ours)  # the class's replaces the pod's


def test_a_runtime_class_is_read_not_ignored_and_needs_no_pod(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = simulate(tmp_path, node() + kata(
        "overhead: {podFixed: {cpu: 250m}}\nscheduling: {nodeSelector: {runtime: kata}, "
        "tolerations: [{key: sandbox, operator: Exists}]}\n"), capsys)
    assert code == 0, err
    assert json.loads(out)["ignored"] == []
