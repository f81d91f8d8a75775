"""`gangsched simulate` merges a pod's inter-pod (anti-)affinity `matchLabelKeys` and
`mismatchLabelKeys` into the term's `labelSelector` as the API server does on creation
(`mutatePodAffinity`, pkg/registry/core/pod/strategy.go), and refuses the keys its validation
refuses (`ValidateMatchLabelKeysAndMismatchLabelKeys`):
services/planner/simulate/pod_affinity_keys.py. The planner, as kube-scheduler, reads only the
merged selector (`watcher.slim.pod_affinity_term`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from services.cli.simulate import simulate
from services.planner.core.config import PlannerConfig
from services.planner.simulate import object_labels, pod_affinity_keys
from tests.unit.test_simulate_malformed import refused

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
---
"""
OLD_WEB = """apiVersion: v1
kind: Pod
metadata: {name: web-old, labels: {app: web, pod-template-hash: old}}
spec: {nodeName: n1, containers: [{name: c}]}
---
"""
NEW_WEB = """apiVersion: v1
kind: Pod
metadata: {name: web-new, labels: {app: web, pod-template-hash: new}}
spec:
  schedulerName: gangsched
  containers: [{name: c}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector: {matchLabels: {app: web}}
        matchLabelKeys: [pod-template-hash]
"""
"""A rollout's new pod, kept off nodes of its own template's pods only (the upstream pattern)."""
DB_OF_TENANT_B = """apiVersion: v1
kind: Pod
metadata: {name: db-b, labels: {role: db, tenant: b}}
spec: {nodeName: n1, containers: [{name: c}]}
---
"""
WEB_OF_TENANT_A = """apiVersion: v1
kind: Pod
metadata: {name: web-a, labels: {role: web, tenant: a}}
spec:
  schedulerName: gangsched
  containers: [{name: c}]
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: zone
        labelSelector: {matchLabels: {role: db}}
        matchLabelKeys: [tenant]
"""
GANG_MEMBER = """---
apiVersion: v1
kind: Pod
metadata: {{name: m{i}, labels: {{tenant: a, scheduling.x-k8s.io/pod-group: g}}}}
spec:
  schedulerName: gangsched
  containers: [{{name: c}}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: zone
        labelSelector: {{matchExpressions: [{{key: tenant, operator: Exists}}]}}
        mismatchLabelKeys: [tenant]
"""
"""A member of a gang of one tenant kept away from every other tenant's pods."""
GANG = ("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\n"
        "spec: {minMember: 2}\n" + GANG_MEMBER.format(i=0) + GANG_MEMBER.format(i=1))
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
TERM = f"spec.affinity.podAntiAffinity.{REQUIRED}[0]"


def run(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    return simulate([path], PlannerConfig())


def test_match_label_keys_keep_anti_affinity_to_the_pods_of_the_same_template(
        tmp_path: Path) -> None:
    pods = run(tmp_path, NODE + OLD_WEB + NEW_WEB)["pods"]
    assert (pods["default/web-new"]["node"], pods["default/web-new"]["reason"]) == ("n1", None)
    pods = run(tmp_path, NODE + OLD_WEB.replace("hash: old", "hash: new") + NEW_WEB)["pods"]
    assert pods["default/web-new"]["reason"] == (
        "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.")


def test_match_label_keys_narrow_pod_affinity_to_the_pods_own_tenant(tmp_path: Path) -> None:
    pods = run(tmp_path, NODE + DB_OF_TENANT_B + WEB_OF_TENANT_A)["pods"]
    assert (pods["default/web-a"]["node"], pods["default/web-a"]["reason"]) == (
        None, "0/1 nodes are available: 1 node(s) didn't match pod affinity rules.")


def test_mismatch_label_keys_let_a_tenants_gang_share_a_zone(tmp_path: Path) -> None:
    result = run(tmp_path, NODE + GANG)
    assert {name: pod["node"] for name, pod in result["pods"].items()} == {
        "default/m0": "n1", "default/m1": "n1"}


def test_a_deployments_pods_are_merged_with_their_template_hash(tmp_path: Path) -> None:
    """Each pod a controller makes is merged with its own labels (pod-template-hash)."""
    deployment = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
                  "  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n"
                  "    metadata: {labels: {app: web}}\n    spec:\n"
                  + "\n".join("    " + line for line in NEW_WEB.split("spec:\n", 1)[1]
                              .splitlines()) + "\n")
    pods = run(tmp_path, NODE + OLD_WEB + deployment)["pods"]
    assert [(pod["node"], pod["reason"]) for name, pod in pods.items()
            if name.startswith("default/web-") and name != "default/web-old"] == [("n1", None)]


def spec_with(term: dict[str, Any], kind: str = "podAntiAffinity",
              preferred: bool = False) -> dict[str, Any]:
    terms = [{"weight": 10, "podAffinityTerm": term}] if preferred else [term]
    field = "preferredDuringSchedulingIgnoredDuringExecution" if preferred else REQUIRED
    return {"containers": [{"name": "c"}], "affinity": {kind: {field: terms}}}


@pytest.mark.parametrize("kind", ["podAffinity", "podAntiAffinity"])
@pytest.mark.parametrize("preferred", [False, True])
def test_required_and_preferred_terms_are_merged_in_then_not_in(
        kind: str, preferred: bool) -> None:
    spec = spec_with({"topologyKey": "zone", "labelSelector": {
        "matchLabels": {"app": "web"}, "matchExpressions": [{"key": "x", "operator": "Exists"}]},
        "matchLabelKeys": ["tenant", "absent"], "mismatchLabelKeys": ["team"]},
        kind, preferred)
    pod_affinity_keys.merge(spec, {"app": "web", "tenant": "a", "team": "t1"})
    field = "preferredDuringSchedulingIgnoredDuringExecution" if preferred else REQUIRED
    given = spec["affinity"][kind][field][0]
    term = given["podAffinityTerm"] if preferred else given
    assert term["labelSelector"] == {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "x", "operator": "Exists"},
        {"key": "tenant", "operator": "In", "values": ["a"]},
        {"key": "team", "operator": "NotIn", "values": ["t1"]}]}
    assert (term["matchLabelKeys"], term["mismatchLabelKeys"]) == (["tenant", "absent"], ["team"])


@pytest.mark.parametrize("term", [
    {"topologyKey": "zone", "matchLabelKeys": ["tenant"]},  # no selector: matches no pod
    {"topologyKey": "zone", "labelSelector": None, "mismatchLabelKeys": ["tenant"]},
    {"topologyKey": "zone", "labelSelector": {}, "matchLabelKeys": ["absent"]},
    # as the API server stored it (a cluster's dump): merged once, not twice
    {"topologyKey": "zone", "labelSelector": {"matchExpressions": [
        {"key": "tenant", "operator": "In", "values": ["a"]}]}, "matchLabelKeys": ["tenant"]},
])
def test_a_term_without_a_selector_or_a_label_to_merge_is_left_as_written(
        term: dict[str, Any]) -> None:
    spec = spec_with(term)
    written = copy.deepcopy(spec)
    pod_affinity_keys.merge(spec, {"tenant": "a"})
    assert spec == written


def test_a_stored_pod_with_its_merged_selector_is_taken_and_read_as_stored(
        tmp_path: Path) -> None:
    """A cluster's dump: the old pod as the API server stored it, merged and keeping its keys,
    is not refused as holding `pod-template-hash` twice; the new pod is merged."""
    stored = OLD_WEB.replace("spec: {nodeName: n1, containers: [{name: c}]}", (
        "spec:\n  nodeName: n1\n  containers: [{name: c}]\n  affinity: {podAntiAffinity: "
        f"{{{REQUIRED}: [{{topologyKey: kubernetes.io/hostname, labelSelector: {{matchLabels: "
        "{app: web}, matchExpressions: [{key: pod-template-hash, operator: In, values: [old]}]}, "
        "matchLabelKeys: [pod-template-hash]}]}}"))
    pods = run(tmp_path, NODE + stored + NEW_WEB)["pods"]
    assert (pods["default/web-new"]["node"], pods["default/web-new"]["reason"]) == ("n1", None)


@pytest.mark.parametrize(("term", "line"), [
    ("{topologyKey: zone, matchLabelKeys: [tenant]}",
     f"{TERM}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
    ("{topologyKey: zone, labelSelector: {}, mismatchLabelKeys: ['a/b/c']}",
     f'{TERM}.mismatchLabelKeys[0]: Invalid value: "a/b/c": '
     + str(object_labels.key_problem("a/b/c"))),
    ("{topologyKey: zone, labelSelector: {}, matchLabelKeys: [x, team], "
     "mismatchLabelKeys: [team]}",  # the pod has no label `team`: nothing merged
     f'{TERM}.matchLabelKeys[1]: Invalid value: "team": exists in both matchLabelKeys and '
     "mismatchLabelKeys"),
    # merged: the pod's `tenant In (a)` repeats the key of `matchLabels` (named as the API
    # server names it, the index in matchLabelKeys after the term's path)
    ("{topologyKey: zone, labelSelector: {matchLabels: {tenant: a}}, matchLabelKeys: [x, tenant]}",
     f'{TERM}[1]: Invalid value: "tenant": exists in both matchLabelKeys and labelSelector'),
    # merged, `tenant NotIn (a)` after `tenant In (a)`: that check comes first
    ("{topologyKey: zone, labelSelector: {}, matchLabelKeys: [x, tenant], "
     "mismatchLabelKeys: [tenant]}",
     f'{TERM}[1]: Invalid value: "tenant": exists in both matchLabelKeys and labelSelector'),
    ("{topologyKey: zone, labelSelector: {}, matchLabelKeys: tenant}",
     f"{TERM}.matchLabelKeys: must be a list, got 'tenant'"),
    ("{topologyKey: zone, labelSelector: {}, mismatchLabelKeys: [1]}",
     f'{TERM}.mismatchLabelKeys[0]: must be a string, got 1 (quote it: "1")'),
])
def test_label_keys_the_api_server_refuses_are_refused_naming_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], term: str, line: str) -> None:
    text = NODE + ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {tenant: a}}\n"
                   "spec:\n  containers: [{name: c}]\n  affinity: {podAntiAffinity: "
                   f"{{{REQUIRED}: [{term}]}}}}\n")
    assert refused(tmp_path, text, capsys) == f" document 2 (Pod default/p): {line}"


def test_a_workload_template_is_validated_as_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NODE + ("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: r}\nspec:\n"
                   "  replicas: 1\n  selector: {matchLabels: {app: r}}\n  template:\n"
                   "    metadata: {labels: {app: r}}\n    spec:\n      containers: [{name: c}]\n"
                   f"      affinity: {{podAffinity: {{{REQUIRED}: [{{topologyKey: zone, "
                   "matchLabelKeys: [app]}]}}\n")
    assert refused(tmp_path, text, capsys) == (
        f" document 2 (ReplicaSet r): spec.template.spec.affinity.podAffinity.{REQUIRED}[0]"
        ".matchLabelKeys: Forbidden: must not be specified when labelSelector is not set")
