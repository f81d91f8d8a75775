"""`gangsched simulate` defaults a pod's pod-level requests as the API server does
(`SetDefaults_Pod`'s `defaultHugePagePodLimits` and `defaultPodRequests`,
pkg/apis/core/v1/defaults.go): services/planner/simulate/pod_level_resources.py. A pod-level
limit stands for the request only of a resource no container requests; otherwise the pod is
charged its containers' aggregate request, as the watcher charges a pod the API server stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.cli.simulate import simulate
from services.planner.core.config import PlannerConfig
from services.planner.simulate import pod_level_resources

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
"""
POD = """apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  schedulerName: gangsched
  resources: {{limits: {limits}}}
  containers:
  - {{name: c, resources: {{requests: {requests}}}}}
"""


def run(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    return simulate([path], PlannerConfig())


@pytest.mark.parametrize(("limits", "requests"), [
    ("{cpu: '6'}", "{cpu: '1'}"),  # the reviewer's d2_podlevel.yaml
    ("{memory: 16Gi}", "{memory: 1Gi}"),
    ("{cpu: '6', memory: 16Gi}", "{cpu: 500m, memory: 1Gi}"),
    ("{cpu: '6'}", "{cpu: '0'}"),  # requested, even as 0: the aggregate, not the limit
])
def test_a_pod_limit_beyond_the_node_with_container_requests_within_it_binds(
        tmp_path: Path, limits: str, requests: str) -> None:
    pod = run(tmp_path, NODE + POD.format(limits=limits, requests=requests))["pods"]["default/p"]
    assert (pod["node"], pod["reason"]) == ("n1", None)


def test_the_limit_of_a_resource_no_container_requests_is_the_request(tmp_path: Path) -> None:
    """cpu is requested (1 of 4), memory is not: the pod requests its 16Gi memory limit."""
    text = NODE + POD.format(limits="{cpu: '6', memory: 16Gi}", requests="{cpu: '1'}")
    pod = run(tmp_path, text)["pods"]["default/p"]
    assert (pod["node"], pod["reason"]) == (None, "0/1 nodes are available: 1 Insufficient "
                                            "memory.")


def test_the_aggregate_counts_sidecars_and_the_largest_init_container(tmp_path: Path) -> None:
    """Sidecar 1 + app 1 = 2; the init container after the sidecar needs 3 + 1 = 4: the pod
    requests 4 cpu (not its 6-cpu limit), which one more cpu-requesting pod does not fit."""
    text = NODE + POD.format(limits="{cpu: '6'}", requests="{cpu: '1'}") + (
        "  initContainers:\n"
        "  - {name: s, restartPolicy: Always, resources: {requests: {cpu: '1'}}}\n"
        "  - {name: i, resources: {limits: {cpu: '3'}}}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: q, annotations: "
        "{simulate.gangsched.io/at: '1'}}\nspec:\n  schedulerName: gangsched\n"
        "  containers: [{name: c, resources: {requests: {cpu: 1m}}}]\n")
    pods = run(tmp_path, text)["pods"]
    assert [(pods[name]["node"], pods[name]["reason"]) for name in ("default/p", "default/q")] \
        == [("n1", None), (None, "0/1 nodes are available: 1 Insufficient cpu.")]


@pytest.mark.parametrize(("spec", "pod_level"), [
    ({"resources": {"limits": {"cpu": "6"}},
      "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
     {"limits": {"cpu": "6"}, "requests": {"cpu": "1"}}),
    # a container's limit is its request; a request given at the pod level is kept
    ({"resources": {"limits": {"cpu": "6", "memory": "4Gi"}, "requests": {"memory": "2Gi"}},
      "containers": [{"resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}}}]},
     {"limits": {"cpu": "6", "memory": "4Gi"}, "requests": {"memory": "2Gi", "cpu": "1500m"}}),
    # no container requests it: the limit, as written
    ({"resources": {"limits": {"memory": "4G"}}, "containers": [{}]},
     {"limits": {"memory": "4G"}, "requests": {"memory": "4G"}}),
    # sidecar 250m + app 500m; init 2 + the sidecar before it
    ({"resources": {"limits": {"cpu": "6"}},
      "containers": [{"resources": {"requests": {"cpu": "500m"}}}],
      "initContainers": [
          {"restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}},
          {"resources": {"requests": {"cpu": "2"}}}]},
     {"limits": {"cpu": "6"}, "requests": {"cpu": "2250m"}}),
    # defaultHugePagePodLimits: the containers' hugepages limit becomes the pod's, then its
    # request; memory from the containers (requests given only at the pod level: no limits
    # before the hugepages one)
    ({"resources": {"requests": {"cpu": "1"}},
      "containers": [{"resources": {"requests": {"memory": "1Gi"},
                                    "limits": {"hugepages-2Mi": "4Mi"}}}]},
     {"requests": {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "4Mi"},
      "limits": {"hugepages-2Mi": "4Mi"}}),
    # nothing given at the pod level: nothing defaulted
    ({"resources": {}, "containers": [{"resources": {"limits": {"hugepages-2Mi": "4Mi"}}}]},
     {}),
    ({"resources": {"requests": {"cpu": "1"}},
      "containers": [{"resources": {"requests": {"cpu": "2"}}}]},
     {"requests": {"cpu": "1"}}),
    # a malformed container quantity: left as written (the planner refuses that field)
    ({"resources": {"limits": {"cpu": "6"}},
      "containers": [{"resources": {"requests": {"cpu": "lots"}}}]},
     {"limits": {"cpu": "6"}}),
])
def test_pod_level_requests_are_defaulted_as_set_defaults_pod_does(
        spec: dict[str, Any], pod_level: dict[str, Any]) -> None:
    pod_level_resources.default(spec)
    assert spec["resources"] == pod_level
