"""`gangsched simulate` refuses a toleration or a node taint the API server would refuse
(services/planner/simulate/tolerations.py: Kubernetes 1.36's `ValidateTolerations` and
`validateNodeTaints`), in its words, as one line and exit status 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.planner.simulate import object_labels, tolerations
from tests.unit.test_simulate_malformed import NODE, refused, simulate

TAINTED = ('{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": '
           '{"kubernetes.io/hostname": "n1"}}, "status": {"allocatable": {"cpu": "4", '
           '"memory": "16Gi", "pods": "110"}}, "spec": {"taints": [%s]}}\n---\n')
POD = ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {}}, "spec": '
       '{"schedulerName": "gangsched", "containers": [{"name": "c", "image": "pause", '
       '"resources": {"requests": {"cpu": "1"}}}]%s}}\n')
NO_SCHEDULE = '{"key": "k", "effect": "NoSchedule"}'
EFFECTS = 'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'


def tolerating(*given: str) -> str:
    return POD % f', "tolerations": [{", ".join(given)}]'


@pytest.mark.parametrize(("text", "line"), [
    (TAINTED % NO_SCHEDULE + tolerating('{"key": "k", "operator": "Exists", "value": "v"}'),
     "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when "
     "`operator` is 'Exists'"),
    (TAINTED % NO_SCHEDULE + tolerating('{"operator": "Equal", "value": "v"}'),
     'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` '
     'is empty, which means "match all values and all keys"'),
    (TAINTED % NO_SCHEDULE + tolerating('{"key": "k", "operator": "Exists", "effect": "Bogus"}'),
     f'spec.tolerations[0].effect: Unsupported value: "Bogus": {EFFECTS}'),
    (TAINTED % NO_SCHEDULE + tolerating('{"key": "k", "operator": "Exists", "effect": '
                                        '"NoSchedule", "tolerationSeconds": 5}'),
     "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
     "when `tolerationSeconds` is set"),
    # the comparison operators' alpha gate is off: refused, listed as supported all the same
    (TAINTED % '{"key": "k", "value": "5", "effect": "NoSchedule"}'
     + tolerating('{"key": "k", "operator": "Gt", "value": "3"}'),
     'spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", '
     '"Exists", "Lt", "Gt"'),
    (TAINTED % '{"key": "k", "value": "5", "effect": "NoSchedule"}'
     + tolerating('{"key": "k", "operator": "Foo", "value": "5"}'),
     'spec.tolerations[0].operator: Unsupported value: "Foo": supported values: "Equal", '
     '"Exists"'),
])
def test_a_pod_with_a_toleration_the_api_server_refuses_is_refused_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: str) -> None:
    assert refused(tmp_path, text, capsys) == f" document 2 (Pod default/p): {line}"


def test_a_node_with_a_taint_the_api_server_refuses_is_refused_where_it_names_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # ValidateNode validates the taints under the path `metadata`, not `spec`
    text = TAINTED % '{"key": "k", "effect": "Bogus"}' + POD % ""
    assert refused(tmp_path, text, capsys) == (
        f' document 1 (Node n1): metadata.taints[0].effect: Unsupported value: "Bogus": '
        f'{EFFECTS}')


def test_a_workload_template_with_a_bad_toleration_is_refused_naming_its_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + ("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: r}\nspec:\n"
                   "  replicas: 2\n  selector: {matchLabels: {app: r}}\n  template:\n"
                   "    metadata: {labels: {app: r}}\n    spec:\n      containers: [{name: c}]\n"
                   "      tolerations: [{key: k, operator: Foo}]\n")
    assert refused(tmp_path, text, capsys) == (
        ' document 2 (ReplicaSet r): spec.template.spec.tolerations[0].operator: Unsupported '
        'value: "Foo": supported values: "Equal", "Exists"')


def test_valid_tolerations_and_taints_still_simulate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (TAINTED % f'{NO_SCHEDULE}, {{"key": "k", "effect": "NoExecute"}}'
            + tolerating('{"key": "k", "operator": "Equal"}',
                         '{"operator": "Exists", "effect": "NoExecute", '
                         '"tolerationSeconds": 30}'))
    code, out, err = simulate(tmp_path, text, capsys)
    assert code == 0, err
    assert '"node": "n1"' in out


def problem(*given: dict[str, Any] | None) -> tuple[str, str] | None:
    return tolerations.pod_problem({"tolerations": list(given)})


def refusal(found: tuple[str, str] | None) -> tuple[str, str]:
    assert found is not None
    return found


def test_each_toleration_rule_in_the_api_servers_order_and_words() -> None:
    assert problem({"key": "k", "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": -1}, {"operator": "Exists"}, {"key": "k"}) is None
    # a null toleration is the empty one: an empty key with the operator "" (Equal)
    assert problem(None) == (
        "tolerations[0].operator", f'Invalid value: "": {tolerations.EMPTY_KEY}')
    # the key first, then the operator of an empty key, then tolerationSeconds off NoExecute
    key = object_labels.key_problem("a/b/c")
    assert problem({"key": "a/b/c", "operator": "Foo"}) == (
        "tolerations[0].key", f'Invalid value: "a/b/c": {key}')
    assert problem({"operator": "Foo", "tolerationSeconds": 1}) == (
        "tolerations[0].operator", f'Invalid value: "Foo": {tolerations.EMPTY_KEY}')
    assert refusal(problem({"operator": "Exists", "value": "v", "tolerationSeconds": 1}))[0] == (
        "tolerations[0].effect")
    # an Equal value is a label value, every message joined by ";", named as the operator
    long_bad = "-" * 64
    assert problem({"key": "k", "value": long_bad}) == (
        "tolerations[0].operator",
        f'Invalid value: "{long_bad}": must be no more than 63 bytes;{object_labels.VALUE_RULE}')
    assert refusal(problem({"key": "k", "operator": "Lt", "value": "3"}))[1].startswith(
        'Unsupported value: "Lt"')
    # the effect last, and only the first invalid toleration
    assert problem({"key": "k"}, {"key": "k", "value": "v", "effect": "Never"}) == (
        "tolerations[1].effect", f'Unsupported value: "Never": {EFFECTS}')


def test_a_toleration_seconds_that_is_no_int64_is_refused_before_any_rule() -> None:
    assert problem({"key": "k", "operator": "Foo"}, {"key": "k", "tolerationSeconds": "5"}) == (
        "tolerations[1].tolerationSeconds", "must be a 64-bit integer, got '5'")
    assert refusal(problem({"key": "k", "effect": "NoExecute", "tolerationSeconds": 2**63}))[0] == (
        "tolerations[0].tolerationSeconds")
    assert problem({"key": "k", "effect": "NoExecute", "tolerationSeconds": 2**63 - 1}) is None


def taint_problem(*given: dict[str, Any] | None) -> tuple[str, str] | None:
    return tolerations.node_problem({"taints": list(given)})


def test_each_taint_rule_in_the_api_servers_order_and_words() -> None:
    assert tolerations.node_problem(None) is None
    assert taint_problem({"key": "k", "effect": "NoSchedule"},
                         {"key": "k", "effect": "NoExecute"}) is None
    assert taint_problem(None) == (
        "taints[0].key", 'Invalid value: "": name part must be non-empty')
    assert taint_problem({"key": "k", "value": "a b", "effect": "Bogus"}) == (
        "taints[0].value", f'Invalid value: "a b": {object_labels.VALUE_RULE}')
    assert taint_problem({"key": "k"}) == ("taints[0].effect", "Required value")
    assert taint_problem({"key": "k", "effect": "NoScheduleNoAdmit"}) == (
        "taints[0].effect", f'Unsupported value: "NoScheduleNoAdmit": {EFFECTS}')


def test_a_second_taint_of_a_key_and_effect_is_a_duplicate_shown_as_go_marshals_it() -> None:
    assert taint_problem({"key": "k", "value": "a", "effect": "NoSchedule"},
                         {"key": "k", "value": "b", "effect": "NoSchedule"}) == (
        "taints[1]", 'Duplicate value: {"Key":"k","Value":"b","Effect":"NoSchedule",'
                     '"TimeAdded":null}: taints must be unique by key and effect pair')
    # metav1.Time marshals in UTC, to the second
    assert refusal(taint_problem({"key": "k", "effect": "NoExecute"},
                                 {"key": "k", "effect": "NoExecute",
                                  "timeAdded": "2024-05-01T12:00:00.5+02:00"}))[1].startswith(
        'Duplicate value: {"Key":"k","Value":"","Effect":"NoExecute",'
        '"TimeAdded":"2024-05-01T10:00:00Z"}')
