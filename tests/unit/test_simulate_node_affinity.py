"""`gangsched simulate` refuses a required node-affinity value the API server refuses
(`ValidateNodeSelectorRequirement`, pkg/apis/core/validation/validation.go: every value a label
value), in its words, as one line and exit status 2: services/planner/simulate/node_affinity.py.
Before, such a pod was placed (`NotIn` matched, `Gt ["-1"]` read as -1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.planner.simulate import node_affinity, object_labels
from tests.unit.test_simulate_malformed import refused

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a, gen: "3"}}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
---
"""
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  schedulerName: gangsched\n"
       "  containers: [{{name: c}}]\n  affinity: {{nodeAffinity: {{" + REQUIRED
       + ": {{nodeSelectorTerms: [{{matchExpressions: [{expressions}]}}]}}}}}}\n")
VALUES = f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions"
FORM = object_labels.VALUE_RULE


@pytest.mark.parametrize(("expressions", "line"), [
    ('{key: zone, operator: NotIn, values: ["not a label value!"]}',  # t_badval.yaml
     f'{VALUES}[0].values[0]: Invalid value: "not a label value!": {FORM}'),
    ('{key: gen, operator: Gt, values: ["-1"]}',  # ParseInt reads it; no label value
     f'{VALUES}[0].values[0]: Invalid value: "-1": {FORM}'),
    ('{key: gen, operator: Exists}, {key: gen, operator: Lt, values: ["+5"]}',
     f'{VALUES}[1].values[0]: Invalid value: "+5": {FORM}'),
    ('{key: zone, operator: In, values: [a, ' + "x" * 64 + "]}",
     f'{VALUES}[0].values[1]: Invalid value: "{"x" * 64}": must be no more than 63 bytes'),
])
def test_a_required_term_value_that_is_no_label_value_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], expressions: str, line: str) -> None:
    text = NODE + POD.format(expressions=expressions)
    assert refused(tmp_path, text, capsys) == f" document 2 (Pod default/p): {line}"


def test_a_workload_templates_required_term_is_refused_naming_its_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + ("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: r}\nspec:\n"
                   "  replicas: 1\n  selector: {matchLabels: {app: r}}\n  template:\n"
                   "    metadata: {labels: {app: r}}\n    spec:\n      containers: [{name: c}]\n"
                   f"      affinity: {{nodeAffinity: {{{REQUIRED}: {{nodeSelectorTerms: "
                   "[{matchExpressions: [{key: gen, operator: Gt, values: ['-1']}]}]}}}\n")
    assert refused(tmp_path, text, capsys) == (
        f' document 2 (ReplicaSet r): spec.template.{VALUES}[0].values[0]: Invalid value: "-1": '
        f"{FORM}")


def test_a_persistent_volumes_required_term_is_refused_naming_its_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + ("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec:\n"
                   "  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n"
                   "  local: {path: /d}\n  nodeAffinity: {required: {nodeSelectorTerms: "
                   "[{matchExpressions: [{key: zone, operator: In, values: [a, 'b c']}]}]}}\n")
    assert refused(tmp_path, text, capsys) == (
        " document 2 (PersistentVolume pv): spec.nodeAffinity.required.nodeSelectorTerms[0]"
        f'.matchExpressions[0].values[1]: Invalid value: "b c": {FORM}')


@pytest.mark.parametrize("spec", [
    # a label value though no integer: taken (kube-scheduler's Gt then matches no node)
    {"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "gen", "operator": "Gt", "values": ["abc"]},
        {"key": "gen", "operator": "Lt", "values": ["08"]}]}]}}}},
    # preferred terms and node names are not checked here
    {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [
            {"key": "gen", "operator": "Gt", "values": ["-1"]}]}}]}}},
    {"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [None, {"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}},
])
def test_what_the_api_server_takes_is_no_problem(spec: dict[str, Any]) -> None:
    assert node_affinity.pod_problem(spec) is None

