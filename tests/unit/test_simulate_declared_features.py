"""`gangsched simulate` reads a Node's `status.declaredFeatures` and a pod's restart rules as the
watcher reads them (NodeDeclaredFeatures: a pod with a RestartAllContainers rule goes only to a
node declaring `RestartAllContainersOnContainerExits`), and refuses what the API server refuses
of them (services/planner/simulate/node_features.py), in its words, as one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.planner.simulate import node_features
from tests.unit.test_simulate_malformed import refused, simulate

RESTART_ALL = "RestartAllContainersOnContainerExits"
NODE = ('{{"apiVersion": "v1", "kind": "Node", "metadata": {{"name": "{name}"}}, "status": '
        '{{"allocatable": {{"cpu": "{cpu}", "memory": "16Gi", "pods": "110"}}{status}}}}}\n---\n')
POD = ('{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "p"}}, "spec": '
       '{{"schedulerName": "gangsched", "containers": [{{"name": "c", "restartPolicy": "Never", '
       '"restartPolicyRules": {rules}, "resources": {{"requests": {{"cpu": "1"}}}}}}]{spec}}}}}\n')
RULE = '{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}'
FORM = node_features.FEATURE_NAME_FORM


def node(name: str, cpu: str = "4", features: str | None = None) -> str:
    status = "" if features is None else f', "declaredFeatures": {features}'
    return NODE.format(name=name, cpu=cpu, status=status)


def pod(rules: str = f"[{RULE}]", spec: str = "") -> str:
    return POD.format(rules=rules, spec=spec)


def outcome(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = simulate(tmp_path, text, capsys)
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)["pods"]["default/p"]
    return result


def test_a_pod_restarting_all_containers_goes_to_the_node_declaring_the_feature(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = node("big", cpu="32") + node("small", features=f'["ExtendWebSocketsToKubelet", '
                                                           f'"{RESTART_ALL}"]') + pod()
    assert outcome(tmp_path, text, capsys)["node"] == "small"


def test_without_a_node_declaring_it_the_pod_is_pending_with_kubes_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = node("a") + node("b", features='["ExtendWebSocketsToKubelet"]') + pod()
    found = outcome(tmp_path, text, capsys)
    assert (found["node"], found["reason"]) == (
        None, "0/2 nodes are available: 2 node(s) didn't match Pod's required features.")


def test_a_rule_that_restarts_only_its_container_requires_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = node("a") + pod('[{"action": "Restart", "exitCodes": {"operator": "NotIn", '
                           '"values": [0]}}]')
    assert outcome(tmp_path, text, capsys)["node"] == "a"


@pytest.mark.parametrize(("text", "line"), [
    (node("n1", features=f'"{RESTART_ALL}"') + pod(),
     f' document 1 (Node n1): status.declaredFeatures: must be a list, got \'{RESTART_ALL}\''),
    (node("n1", features="[1]") + pod(),
     " document 1 (Node n1): status.declaredFeatures[0]: must be a string, got 1 (quote it: "
     '"1")'),
    (node("n1") + pod(rules=f"{RULE}"),
     " document 2 (Pod default/p): spec.containers[0].restartPolicyRules: must be a list, got "
     "{'action': 'RestartAllContainers', 'exitCodes': {'operator': 'In..."),
    (node("n1") + pod(rules='[{"action": "RestartAllContainers", "exitCodes": '
                            '{"operator": "In", "values": ["1"]}}]'),
     " document 2 (Pod default/p): spec.containers[0].restartPolicyRules[0].exitCodes.values[0]"
     ": must be a 32-bit integer, got '1'"),
    (node("n1") + pod(spec=', "hostUsers": "false"'),
     " document 2 (Pod default/p): spec.hostUsers: must be true or false, got 'false'"),
])
def test_a_field_of_the_wrong_type_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: str) -> None:
    assert refused(tmp_path, text, capsys) == line


@pytest.mark.parametrize(("features", "line"), [
    (f'["{RESTART_ALL}", "Alpha"]',
     'status.declaredFeatures[1]: Invalid value: "Alpha": list must be sorted alphabetically'),
    (f'["{RESTART_ALL}", "{RESTART_ALL}"]',
     f'status.declaredFeatures[1]: Duplicate value: "{RESTART_ALL}"'),
    ('["lower"]',
     f'status.declaredFeatures[0]: Invalid value: "lower": invalid feature name "lower": {FORM}'),
])
def test_declared_features_the_api_server_refuses_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], features: str, line: str) -> None:
    text = node("n1", features=features) + pod()
    assert refused(tmp_path, text, capsys) == f" document 1 (Node n1): {line}"


def test_a_host_network_in_a_user_namespace_is_refused_while_its_alpha_gate_is_off(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = node("n1") + pod(rules="[]", spec=', "hostNetwork": true, "hostUsers": false')
    assert refused(tmp_path, text, capsys) == (
        " document 2 (Pod default/p): spec.hostNetwork: Forbidden: when `hostUsers` is false")


def test_a_workload_templates_restart_rules_are_checked_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = node("n1") + (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\nspec:\n  template:\n"
        "    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n"
        "        restartPolicyRules: [{action: RestartAllContainers, exitCodes: "
        "{operator: In, values: [1]}}]\n")
    assert refused(tmp_path, text, capsys) == (
        " document 2 (Job train): spec.template.spec.containers[0].restartPolicy: Required "
        "value: must specify restartPolicy when restart rules are used")


def rules_problem(*rules: Any, policy: str | None = "Never") -> tuple[str, str] | None:
    container: dict[str, Any] = {"name": "c", "restartPolicyRules": list(rules)}
    if policy is not None:
        container["restartPolicy"] = policy
    return node_features.pod_problem({"initContainers": [container]})


def test_each_restart_rule_check_in_the_api_servers_order_and_words() -> None:
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
    assert rules_problem(rule, {"action": "Restart", "exitCodes": {"operator": "NotIn"}}) is None
    assert rules_problem(policy=None) is None  # no rules: nothing required
    assert rules_problem(rule, policy=None) == (
        "initContainers[0].restartPolicy",
        "Required value: must specify restartPolicy when restart rules are used")
    assert rules_problem(rule, {"action": "Stop"}) == (
        "initContainers[0].restartPolicyRules[1].action",
        'Unsupported value: "Stop": supported values: "Restart", "RestartAllContainers"')
    assert rules_problem({"action": "Restart"}) == (
        "initContainers[0].restartPolicyRules[0].exitCodes", "Required value: must be specified")
    assert rules_problem(None) == (  # a null rule is the empty one: its action first
        "initContainers[0].restartPolicyRules[0].action",
        'Unsupported value: "": supported values: "Restart", "RestartAllContainers"')
    assert rules_problem({"action": "Restart", "exitCodes": {}}) == (
        "initContainers[0].restartPolicyRules[0].exitCodes.operator",
        'Unsupported value: "": supported values: "In", "NotIn"')


def test_each_declared_feature_check_in_the_api_servers_order_and_words() -> None:
    def problem(*features: Any) -> tuple[str, str] | None:
        return node_features.node_problem({"declaredFeatures": list(features)})

    assert problem("A", "B/c", "B/d1", "Zz9") is None
    assert node_features.node_problem(None) is None
    assert problem("B", "a", "A") == (  # the name at [1] before the order of [2]
        "declaredFeatures[1]", f'Invalid value: "a": invalid feature name "a": {FORM}')
    assert problem("B/", "A") == (
        "declaredFeatures[0]", f'Invalid value: "B/": invalid feature name "B/": {FORM}')
    long_name = "A" * 254
    assert problem(long_name) == ("declaredFeatures[0]", (
        f'Invalid value: "{"A" * 77}...": invalid feature name "{long_name}": must be no more '
        "than 253 characters"))
    assert problem(None) == (
        "declaredFeatures[0]", f'Invalid value: "": invalid feature name "": {FORM}')
