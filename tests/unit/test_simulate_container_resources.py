"""`gangsched simulate` refuses container resources the API server refuses
(services/planner/simulate/container_resources.py), in its words, as one line and exit status
2: a name that is no resource a container may ask, a request above its limit, an extended
resource whose request differs from its limit or that has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_simulate_api_versions import NODE, simulate


def pod(resources: str, where: str = "containers") -> str:
    spec = (f"containers: [{{name: app}}], initContainers: [{{name: c, resources: {resources}}}]"
            if where == "initContainers" else f"containers: [{{name: c, resources: {resources}}}]")
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{{spec}}}\n"


@pytest.mark.parametrize(("resources", "field", "why"), [
    ("{requests: {gpu: '1'}}", "spec.containers[0].resources.requests[gpu]",
     'Invalid value: "gpu": must be a standard resource type or fully qualified'),
    ("{limits: {pods: '1'}}", "spec.containers[0].resources.limits[pods]",
     'Invalid value: "pods": must be a standard resource for containers'),
    ("{requests: {'bad name!': '1'}}", "spec.containers[0].resources.requests[bad name!]",
     'Invalid value: "bad name!": name part must consist of alphanumeric characters'),
    ("{requests: {example.com/: '1'}}", "spec.containers[0].resources.requests[example.com/]",
     'Invalid value: "example.com/": name part must be non-empty'),
    ("{requests: {cpu: '2'}, limits: {cpu: '1'}}", "spec.containers[0].resources.requests",
     'Invalid value: "2": must be less than or equal to cpu limit of 1'),
    ("{requests: {example.com/gpu: '1'}}", "spec.containers[0].resources.limits",
     "Required value: Limit must be set for non overcommitable resources"),
    ("{requests: {example.com/gpu: '1'}, limits: {example.com/gpu: '2'}}",
     "spec.containers[0].resources.requests",
     'Invalid value: "1": must be equal to example.com/gpu limit of 2'),
    ("{requests: {hugepages-2Mi: 2Mi}, limits: {hugepages-2Mi: 4Mi}}",
     "spec.containers[0].resources.requests",
     'Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi'),
    ("{limits: {gpu: '1'}}", "spec.initContainers[0].resources.limits[gpu]",
     'Invalid value: "gpu": must be a standard resource type or fully qualified'),
])
def test_a_container_resource_the_api_server_refuses_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], resources: str, field: str,
        why: str) -> None:
    where = "initContainers" if "initContainers" in field else "containers"
    code, err = simulate(tmp_path, NODE + "---\n" + pod(resources, where), capsys)
    assert code == 2
    assert f"(Pod default/p): {field}: {why}" in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_workload_templates_containers_are_named_in_the_template(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n"
           "    spec: {containers: [{name: c, resources: {requests: {gpu: '1'}}}]}\n")
    code, err = simulate(tmp_path, NODE + "---\n" + job, capsys)
    assert code == 2
    assert "spec.template.spec.containers[0].resources.requests[gpu]: Invalid value" in err


@pytest.mark.parametrize("resources", [
    "{requests: {cpu: 500m, memory: 1Gi, ephemeral-storage: 1Gi}, limits: {cpu: '1'}}",
    "{requests: {example.com/gpu: '2'}, limits: {example.com/gpu: '2'}}",
    "{limits: {example.com/gpu: '2'}}",  # the request defaults to the limit
    "{requests: {hugepages-2Mi: 2Mi}, limits: {hugepages-2Mi: 2Mi, memory: 1Gi}}",
    "{requests: {kubernetes.io/whatever: '1'}}",  # native: overcommit allowed, no limit needed
    "{requests: {cpu: '1'}, limits: {cpu: 1000m}}",  # equal, written otherwise
])
def test_what_the_api_server_takes_is_simulated(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], resources: str) -> None:
    assert simulate(tmp_path, NODE + "---\n" + pod(resources), capsys)[0] == 0
