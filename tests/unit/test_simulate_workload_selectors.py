"""`gangsched simulate` refuses a workload whose selector the API server refuses
(services/planner/simulate/workload_selectors.py: Kubernetes 1.36's `ValidateReplicaSetSpec`,
`ValidateDeploymentSpec`, `ValidateStatefulSetSpec`, and a Job's `validateGeneratedSelector`
and `ValidateJobSpec`), in its words, as one line and exit status 2: such a workload creates
no pod, so none may be reported bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.planner.simulate import controller_labels
from tests.unit.test_simulate_malformed import NODE, refused, simulate

WORKLOAD = ("apiVersion: {version}\nkind: {kind}\nmetadata: {{name: w}}\n"
            "spec: {{{count}: 2, {selector}template: {{{labels}spec: {{containers: "
            "[{{name: c}}]}}}}}}\n")
APPS = ("ReplicaSet", "Deployment", "StatefulSet")
MISMATCH = "`selector` does not match template `labels`"
VALUE_RULE = ("a valid label must be an empty string or consist of alphanumeric characters, "
              "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
              "'MyValue' or 'my_value' or '12345', regex used for validation is "
              "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def workload(kind: str, selector: str | None, labels: str | None = "{a: c}") -> str:
    """A workload `w` of `kind` whose spec has `selector` (None: none) and whose template has
    `labels` (None: none)."""
    version, count = ("batch/v1", "parallelism") if kind == "Job" else ("apps/v1", "replicas")
    return WORKLOAD.format(version=version, kind=kind, count=count,
                           selector="" if selector is None else f"selector: {selector}, ",
                           labels="" if labels is None else f"metadata: {{labels: {labels}}}, ")


def refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, selector: str | None,
            labels: str | None = "{a: c}") -> str:
    """What the workload is refused with, less its document (a node is document 1)."""
    line = refused(tmp_path, NODE + workload(kind, selector, labels), capsys)
    where = f" document 2 ({kind} w): "
    assert line.startswith(where), line
    return line.removeprefix(where)


@pytest.mark.parametrize("kind", APPS)
@pytest.mark.parametrize(("selector", "labels", "told"), [
    ("{matchLabels: {a: b}}", "{a: c}",
     f'spec.template.metadata.labels: Invalid value: {{"a":"c"}}: {MISMATCH}'),
    # Go's json.Marshal of the label map: keys sorted, no spaces
    ("{matchLabels: {a: b}}", "{z: y, a: c}",
     f'spec.template.metadata.labels: Invalid value: {{"a":"c","z":"y"}}: {MISMATCH}'),
    ("{matchLabels: {a: c}}", None, f"spec.template.metadata.labels: Invalid value: null: "
                                    f"{MISMATCH}"),
    ("{matchLabels: {a: c}}", "{}", f"spec.template.metadata.labels: Invalid value: {{}}: "
                                    f"{MISMATCH}"),
    ("{matchExpressions: [{key: a, operator: In, values: [x, y]}]}", "{a: c}",
     f'spec.template.metadata.labels: Invalid value: {{"a":"c"}}: {MISMATCH}'),
    ("{matchExpressions: [{key: a, operator: NotIn, values: [c]}]}", "{a: c}",
     f'spec.template.metadata.labels: Invalid value: {{"a":"c"}}: {MISMATCH}'),
    ("{matchExpressions: [{key: b, operator: Exists}]}", "{a: c}",
     f'spec.template.metadata.labels: Invalid value: {{"a":"c"}}: {MISMATCH}'),
    ("{matchExpressions: [{key: a, operator: DoesNotExist}]}", "{a: c}",
     f'spec.template.metadata.labels: Invalid value: {{"a":"c"}}: {MISMATCH}'),
    ("{matchLabels: {a: c}, matchExpressions: [{key: b, operator: Exists}]}", "{a: c}",
     f'spec.template.metadata.labels: Invalid value: {{"a":"c"}}: {MISMATCH}'),
    # ValidateLabelSelector, before any matching
    ("{matchExpressions: [{key: a, operator: Gt, values: ['1']}]}", "{a: c}",
     'spec.selector.matchExpressions[0].operator: Invalid value: "Gt": not a valid selector '
     "operator"),
    ("{matchExpressions: [{key: a, operator: In}]}", "{a: c}",
     "spec.selector.matchExpressions[0].values: Required value: must be specified when "
     "`operator` is 'In' or 'NotIn'"),
    ("{matchExpressions: [{key: a, operator: Exists, values: [c]}]}", "{a: c}",
     "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when "
     "`operator` is 'Exists' or 'DoesNotExist'"),
    ("{matchExpressions: [{key: a, operator: In, values: [c, 'a b']}]}", "{a: c}",
     f'spec.selector.matchExpressions[0].values[1]: Invalid value: "a b": {VALUE_RULE}'),
    ("{matchLabels: {a: 'c d'}}", "{a: c}",
     f'spec.selector.matchLabels: Invalid value: "c d": {VALUE_RULE}'),
    ("{matchExpressions: [{key: 'a/b/c', operator: Exists}]}", "{a: c}",
     'spec.selector.matchExpressions[0].key: Invalid value: "a/b/c": a valid label key must '
     "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
     "alphanumeric character (e.g. 'MyName' or 'my.name' or '123-abc', regex used for "
     "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
     "subdomain prefix and '/' (e.g. 'example.com/MyName')"),
])
def test_an_apps_workload_whose_selector_the_api_server_refuses_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, selector: str,
        labels: str | None, told: str) -> None:
    assert refusal(tmp_path, capsys, kind, selector, labels) == told


@pytest.mark.parametrize(("kind", "word"), [
    ("ReplicaSet", "deployment"), ("Deployment", "deployment"), ("StatefulSet", "statefulset")])
@pytest.mark.parametrize("selector", ["{}", "{matchLabels: {}}", "{matchExpressions: []}"])
def test_an_empty_selector_is_refused_as_the_api_server_words_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, word: str,
        selector: str) -> None:
    # a ReplicaSet's validation calls itself a deployment, as the API server's does
    assert refusal(tmp_path, capsys, kind, selector) == (
        f"spec.selector: Invalid value: {{}}: empty selector is invalid for {word}")


@pytest.mark.parametrize("kind", APPS)
@pytest.mark.parametrize("selector", [None, "null"])
def test_an_apps_workload_without_a_selector_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str,
        selector: str | None) -> None:
    # apps/v1 defaults no selector from the template's labels (extensions/v1beta1 did)
    assert refusal(tmp_path, capsys, kind, selector) == "spec.selector: Required value"


@pytest.mark.parametrize("kind", APPS)
@pytest.mark.parametrize(("selector", "labels"), [
    ("{matchLabels: {a: c}}", "{a: c, b: d}"),
    ("{matchExpressions: [{key: a, operator: In, values: [x, c]}, {key: b, operator: NotIn, "
     "values: [c]}, {key: a, operator: Exists}, {key: z, operator: DoesNotExist}]}",
     "{a: c, b: d}"),
    ("{matchExpressions: [{key: a, operator: DoesNotExist}]}", None),
])
def test_a_selector_that_selects_the_templates_labels_is_taken(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, selector: str,
        labels: str | None) -> None:
    code, out, err = simulate(tmp_path, NODE + workload(kind, selector, labels), capsys)
    assert code == 0, err
    made = json.loads(out)["otherSchedulers"]  # pods of the default scheduler, not bound here
    assert made and all(pod.startswith("default/w-") for pod in made)


def test_a_job_selector_the_api_server_would_not_generate_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without `manualSelector: true` the API server adds its `controller-uid` to the selector
    given, which must then select only the labels it generates (`validateGeneratedSelector`);
    the uid is the simulated Job's."""
    uid = controller_labels.uid("Job", "default", "w")
    assert refusal(tmp_path, capsys, "Job", "{matchLabels: {a: c}}") == (
        f'spec.selector: Invalid value: {{"matchLabels":{{"a":"c",'
        f'"batch.kubernetes.io/controller-uid":"{uid}"}}}}: `selector` not auto-generated')
    code, _, err = simulate(tmp_path, NODE + workload("Job", "{matchLabels: {job-name: w}}"),
                            capsys)
    assert code == 0, err  # it selects what the API server generates: taken


def manual_job(selector: str | None) -> str:
    """A Job `w` with `manualSelector: true` and `selector` (None: none), template labels
    `{a: c}`."""
    return workload("Job", selector).replace("parallelism: 2, ",
                                             "parallelism: 2, manualSelector: true, ")


def test_a_manual_job_selector_is_required_and_must_select_the_template(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(tmp_path, NODE + manual_job(None), capsys) == (
        " document 2 (Job w): spec.selector: Required value")
    assert refused(tmp_path, NODE + manual_job("{matchLabels: {a: b}}"), capsys) == (
        f' document 2 (Job w): spec.template.metadata.labels: Invalid value: '
        f'{{"a":"c"}}: {MISMATCH}')
    for selector in ("{matchLabels: {a: c}}", "{}"):  # an empty manual selector selects all
        code, _, err = simulate(tmp_path, NODE + manual_job(selector), capsys)
        assert code == 0, (selector, err)
