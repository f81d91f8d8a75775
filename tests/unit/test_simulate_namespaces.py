"""`gangsched simulate` reads Namespaces, whose labels an inter-pod term's `namespaceSelector`
matches (services/watcher/namespaces.py, as the watcher reads them on a cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.unit.test_simulate_api_versions import simulate

CLUSTER = """apiVersion: v1
kind: Node
metadata: {name: n0, labels: {kubernetes.io/hostname: n0}}
status: {allocatable: {cpu: "4", pods: "10"}}
---
apiVersion: v1
kind: Namespace
metadata: {name: ml, labels: {team: TEAM}}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: ml, labels: {app: db}}
spec: {schedulerName: gangsched, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, annotations: {simulate.gangsched.io/at: "5"}}
spec:
  schedulerName: gangsched
  containers: [{name: c}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector: {matchLabels: {app: db}}
        namespaceSelector: {matchLabels: {team: research}}
"""


@pytest.mark.parametrize(("team", "web_node"), [("research", None), ("ops", "n0")])
def test_a_namespace_selector_reads_the_namespaces_labels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], team: str,
        web_node: str | None) -> None:
    code, out = simulate(tmp_path, CLUSTER.replace("TEAM", team), capsys)
    assert code == 0, out
    pods = yaml.safe_load(out)["pods"]
    assert pods["ml/db"]["node"] == "n0"
    assert pods["default/web"]["node"] == web_node


def test_a_namespace_named_no_dns_label_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = simulate(tmp_path, "apiVersion: v1\nkind: Namespace\nmetadata: {name: a.b}\n",
                         capsys)
    assert code == 2
    assert 'metadata.name: Invalid value: "a.b": must not contain dots' in err


@pytest.mark.parametrize("declared", [True, False])
def test_every_namespace_carries_its_name_label_declared_or_not(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], declared: bool) -> None:
    """The API server labels each Namespace `kubernetes.io/metadata.name`, the usual way to
    select one by name; a namespace a pod is in exists on a cluster even when no manifest here
    declares it (review: simulate placed `web` where the cluster would refuse it)."""
    text = CLUSTER.replace("{name: ml, labels: {team: TEAM}}", "{name: ml}").replace(
        "{matchLabels: {team: research}}", "{matchLabels: {kubernetes.io/metadata.name: ml}}")
    if not declared:
        text = text.replace("apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n---\n", "")
        assert "kind: Namespace" not in text
    code, out = simulate(tmp_path, text, capsys)
    assert code == 0, out
    assert yaml.safe_load(out)["pods"]["default/web"]["node"] is None
