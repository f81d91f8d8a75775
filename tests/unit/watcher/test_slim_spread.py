"""Slimming `topologySpreadConstraints`: carried with kube-scheduler's defaults, and refused
(the pod kept Pending with the field named) where the API server's validation refuses them."""

from __future__ import annotations

from typing import Any

import pytest

from services.contracts import names
from services.contracts.events import NodeSelectorRequirement, TopologySpreadConstraint
from services.watcher import slim

ZONE = "topology.kubernetes.io/zone"


def spread_pod(*constraints: dict[str, Any],
               labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ml", "labels": labels or {"app": "a"}},
            "spec": {"containers": [{"name": "c"}], "topologySpreadConstraints": list(constraints)}}


def constraint(**fields: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "a"}}, **fields}


def test_a_constraint_is_carried_with_kube_scheduler_defaults_and_nothing_is_unsupported() -> None:
    event = slim.pod_event(spread_pod(constraint()), 0)
    assert event.unsupported == () and event.invalid_reason is None
    assert event.topology_spread == (TopologySpreadConstraint(
        max_skew=1, topology_key=ZONE, when_unsatisfiable="DoNotSchedule",
        label_selector=(NodeSelectorRequirement("app", "In", ("a",)),), min_domains=1,
        node_affinity_policy="Honor", node_taints_policy="Ignore", match_label_keys=()),)


def test_every_field_given_is_carried_in_spec_order() -> None:
    hard = constraint(maxSkew=2, minDomains=3, nodeAffinityPolicy="Ignore",
                      nodeTaintsPolicy="Honor", matchLabelKeys=["job"],
                      labelSelector={"matchExpressions": [
                          {"key": "app", "operator": "Exists"},
                          {"key": "job", "operator": "In", "values": ["j1"]}]})
    soft = constraint(topologyKey="kubernetes.io/hostname", whenUnsatisfiable="ScheduleAnyway",
                      labelSelector=None)
    event = slim.pod_event(spread_pod(hard, soft, labels={"app": "a", "job": "j1"}), 0)
    assert event.invalid_reason is None
    assert event.topology_spread == (
        TopologySpreadConstraint(
            max_skew=2, topology_key=ZONE, when_unsatisfiable="DoNotSchedule",
            label_selector=(NodeSelectorRequirement("app", "Exists"),
                            NodeSelectorRequirement("job", "In", ("j1",))),
            min_domains=3, node_affinity_policy="Ignore", node_taints_policy="Honor",
            match_label_keys=("job",)),
        TopologySpreadConstraint(max_skew=1, topology_key="kubernetes.io/hostname",
                                 when_unsatisfiable="ScheduleAnyway", label_selector=None))


@pytest.mark.parametrize(("constraints", "reason"), [
    ([constraint(maxSkew=0)], "[0].maxSkew must be an integer > 0, got 0"),
    ([constraint(maxSkew="1")], "[0].maxSkew must be an integer > 0, got '1'"),
    ([constraint(topologyKey="")], "[0].topologyKey can not be empty"),
    ([constraint(whenUnsatisfiable=None)],
     "[0].whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway, got None"),
    ([constraint(), constraint(maxSkew=2)],
     "[1].{topologyKey, whenUnsatisfiable} duplicates an earlier constraint: "
     f"{{{ZONE}, DoNotSchedule}}"),
    ([constraint(minDomains=0)], "[0].minDomains must be an integer > 0, got 0"),
    ([constraint(minDomains=2, whenUnsatisfiable="ScheduleAnyway")],
     "[0].minDomains can only be used with whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"),
    ([constraint(nodeTaintsPolicy="honor")],
     "[0].nodeTaintsPolicy must be Honor or Ignore, got 'honor'"),
    ([constraint(labelSelector=None, matchLabelKeys=["job"])],
     "[0].matchLabelKeys must not be specified when labelSelector is not set"),
    ([constraint(matchLabelKeys=["-job"])], "[0].matchLabelKeys: '-job' is not a valid label name"),
    ([constraint(matchLabelKeys=["app"])],
     "[0].matchLabelKeys: 'app' exists in both matchLabelKeys and labelSelector"),
    ([constraint(labelSelector={"matchExpressions": [{"key": "app", "operator": "Gt",
                                                      "values": ["1"]}]})],
     "[0].labelSelector is not a valid label selector"),
])
def test_a_constraint_the_api_would_refuse_keeps_the_pod_pending_with_the_field(
        constraints: list[dict[str, Any]], reason: str) -> None:
    event = slim.pod_event(spread_pod(*constraints), 0)
    assert event.invalid_reason == f"spec.topologySpreadConstraints{reason}"
    assert event.unsupported == ()


def test_the_api_servers_own_merge_of_match_label_keys_is_valid() -> None:
    merged = constraint(matchLabelKeys=["job"], labelSelector={
        "matchLabels": {"app": "a"},
        "matchExpressions": [{"key": "job", "operator": "In", "values": ["j1"]}]})
    assert slim.pod_event(spread_pod(merged), 0).invalid_reason is None


@pytest.mark.parametrize(("key", "valid"), [
    ("app", True), ("example.com/app-1", True), ("a_b.c", True), ("/app", False),
    ("Example.com/app", False), ("a" * 63, True), ("a" * 64, False), ("app-", False)])
def test_label_names_are_qualified_names(key: str, valid: bool) -> None:
    assert names.is_label_name(key) is valid
