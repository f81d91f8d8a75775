"""Slimming PodDisruptionBudgets (`watcher.budgets`): selector, disruptionsAllowed and
disruptedPods as DefaultPreemption reads them, malformed budgets published as read."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.events import DisruptionBudgetDeleted, NodeSelectorRequirement
from services.watcher import budgets
from tests.unit.watcher.test_slim import _JSONISH

WHEN = "2024-05-01T10:00:00Z"


def budget(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
           **meta: Any) -> dict[str, Any]:
    metadata = {"name": "web", "namespace": "ml", "uid": "b1", "resourceVersion": "12", **meta}
    obj: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                           "metadata": metadata, "spec": {"minAvailable": 2, **(spec or {})}}
    if status is not None:
        obj["status"] = status
    return obj


def test_a_budget_keeps_identity_selector_allowed_disruptions_and_disrupted_pods() -> None:
    event = budgets.budget_event(budget(
        {"selector": {"matchLabels": {"tier": "front", "app": "web"},
                      "matchExpressions": [
                          {"key": "zone", "operator": "NotIn", "values": ["a", "b"]},
                          {"key": "canary", "operator": "DoesNotExist"}]}},
        {"disruptionsAllowed": 2, "currentHealthy": 4, "desiredHealthy": 2, "expectedPods": 4,
         "disruptedPods": {"web-3": WHEN, "web-1": WHEN}}), 1000)
    assert (event.at_ms, event.uid, event.namespace, event.name, event.resource_version) == (
        1000, "b1", "ml", "web", "12")
    assert event.selector == (  # matchLabels first, sorted by key, as In with one value
        NodeSelectorRequirement("app", "In", ("web",)),
        NodeSelectorRequirement("tier", "In", ("front",)),
        NodeSelectorRequirement("zone", "NotIn", ("a", "b")),
        NodeSelectorRequirement("canary", "DoesNotExist", ()))
    assert event.disruptions_allowed == 2
    assert event.disrupted_pods == ("web-1", "web-3")
    assert budgets.budget_problem(budget({"selector": {"matchLabels": {"app": "web"}}},
                                         {"disruptionsAllowed": 0})) is None


def test_an_absent_selector_is_none_and_an_empty_one_selects_nothing_as_empty() -> None:
    assert budgets.budget_event(budget(), 0).selector is None
    assert budgets.budget_event(budget({"selector": {}}), 0).selector == ()
    assert budgets.budget_event(budget({"selector": {"matchLabels": {}}}), 0).selector == ()


def test_a_budget_the_disruption_controller_has_not_seen_allows_no_disruption() -> None:
    event = budgets.budget_event(budget({"selector": {"matchLabels": {"app": "web"}}}), 0)
    assert (event.disruptions_allowed, event.disrupted_pods) == (0, ())
    obj = budget(status={"disruptionsAllowed": None, "disruptedPods": None})
    event = budgets.budget_event(obj, 0)
    assert (event.disruptions_allowed, event.disrupted_pods) == (0, ())
    assert budgets.budget_problem(obj) is None  # null is absent, not malformed


@pytest.mark.parametrize("selector", [
    {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["web"]}]},
    {"matchExpressions": [{"key": "app", "operator": "In"}]},  # In needs values
    {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["web"]}]},
    "app=web",
])
def test_an_invalid_selector_selects_no_pod_and_is_named(selector: dict[str, Any] | str) -> None:
    obj = budget({"selector": selector}, {"disruptionsAllowed": 1})
    event = budgets.budget_event(obj, 0)
    assert (event.selector, event.disruptions_allowed, event.name) == (None, 1, "web")
    assert budgets.budget_problem(obj) == (
        "spec.selector is not a valid label selector (read as selecting no pod)")


@pytest.mark.parametrize("allowed", ["2", -1, True, 2.0, 2**31])
def test_a_malformed_disruptions_allowed_reads_as_none_allowed_and_is_named(
        allowed: str | int | float) -> None:
    obj = budget({"selector": {"matchLabels": {"app": "web"}}}, {"disruptionsAllowed": allowed})
    assert budgets.budget_event(obj, 0).disruptions_allowed == 0
    assert budgets.budget_problem(obj) == (
        "status.disruptionsAllowed is not an integer >= 0 (read as 0)")


def test_malformed_disrupted_pods_read_as_none_and_are_named() -> None:
    obj = budget({"selector": {}}, {"disruptionsAllowed": 3, "disruptedPods": ["web-1"]})
    event = budgets.budget_event(obj, 0)
    assert (event.disruptions_allowed, event.disrupted_pods) == (3, ())
    assert budgets.budget_problem(obj) == "status.disruptedPods is not a map (read as empty)"


def test_a_budget_without_namespace_is_in_default_and_a_delete_carries_identity() -> None:
    assert budgets.budget_event({"metadata": {"name": "x"}}, 0).namespace == "default"
    assert budgets.budget_deleted(budget(), 7) == DisruptionBudgetDeleted(
        at_ms=7, uid="b1", namespace="ml", name="web", resource_version="12")


_OBJECTS = st.dictionaries(
    st.sampled_from(["metadata", "spec", "status"]), _JSONISH | st.dictionaries(
        st.sampled_from(["selector", "matchLabels", "matchExpressions", "key", "operator",
                         "values", "disruptionsAllowed", "disruptedPods", "name", "namespace",
                         "uid", "resourceVersion"]), _JSONISH))


@settings(max_examples=300, deadline=None)
@given(_OBJECTS)
def test_slimming_random_budget_objects_never_raises_and_always_encodes(
        obj: dict[str, Any]) -> None:
    msgspec.json.encode(budgets.budget_event(obj, 0))
    msgspec.json.encode(budgets.budget_deleted(obj, 0))
    problem = budgets.budget_problem(obj)
    assert problem is None or isinstance(problem, str)
