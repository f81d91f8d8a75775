"""`gangsched simulate` reads PodDisruptionBudgets and keeps their `disruptionsAllowed` as the
disruption controller would (simplified: `services.planner.simulate.budgets`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.cli.simulate import arrivals, load_documents, simulate_command, start_ms
from services.contracts.events import (
    DisruptionBudgetObserved,
    NodeSelectorRequirement,
    PodObserved,
)
from services.planner.core.config import PlannerConfig
from services.planner.simulate import engine, manifests
from services.planner.simulate.budgets import BudgetSpec, disruptions_allowed
from tests.unit.planner.builders import make_pod
from tests.unit.test_simulate_preemption import manifests_of, simulated

APP = (NodeSelectorRequirement("app", "In", ("web",)),)


def budget(selector: tuple[NodeSelectorRequirement, ...] | None = APP,
           namespace: str = "default") -> DisruptionBudgetObserved:
    return DisruptionBudgetObserved(at_ms=0, uid="pdb", namespace=namespace, name="web",
                                    resource_version="", selector=selector)


def web(count: int, running: int, deleting: int = 0) -> list[PodObserved]:
    pods = [make_pod(f"web-{i}").labelled(app="web") for i in range(count)]
    return [(pod.on_node("n").deleting() if i < deleting else pod.on_node("n")).build()
            if i < running else pod.build() for i, pod in enumerate(pods)]


@pytest.mark.parametrize(("spec", "pods", "allowed"), [
    (BudgetSpec(min_available=2), web(4, 4), 2),
    (BudgetSpec(min_available=2), web(4, 1), 0),             # never negative
    (BudgetSpec(min_available="50%"), web(3, 3), 1),         # 50% of 3 rounds up to 2
    (BudgetSpec(max_unavailable=1), web(4, 4), 1),
    (BudgetSpec(max_unavailable="25%"), web(5, 5), 2),       # 25% of 5 rounds up to 2
    (BudgetSpec(max_unavailable=1), web(4, 4, deleting=1), 0),  # a pod going is not healthy
    (BudgetSpec(), web(2, 2), 2),
    (BudgetSpec(min_available=0), [], 0),                    # nothing expected
])
def test_disruptions_allowed_as_the_disruption_controller_counts_them(
        spec: BudgetSpec, pods: list[PodObserved], allowed: int) -> None:
    assert disruptions_allowed(budget(), spec, pods) == allowed


def test_a_budget_counts_only_the_pods_its_selector_picks_in_its_namespace() -> None:
    others = [make_pod("db").labelled(app="db").on_node("n").build(),
              make_pod("web-x", namespace="other").labelled(app="web").on_node("n").build()]
    assert disruptions_allowed(budget(), BudgetSpec(min_available=0), web(1, 1) + others) == 1
    assert disruptions_allowed(budget(selector=None), BudgetSpec(), web(2, 2)) == 0
    assert disruptions_allowed(budget(selector=()), BudgetSpec(), web(1, 1) + others[:1]) == 2


PDB = """---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: low}
spec:
  minAvailable: 1
  selector: {matchLabels: {scheduling.x-k8s.io/pod-group: low}}
"""


def test_a_pdb_manifest_is_observed_with_the_allowed_disruptions_of_the_bound_gang(
        tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(manifests_of((("low", 0),)) + PDB)
    items, ignored = manifests.expand(load_documents([path]))
    assert ignored == []
    result = engine.run(arrivals(items, start_ms(items)), PlannerConfig())
    observed = result.state.budgets["default/low"]
    assert observed.selector == (NodeSelectorRequirement(
        "scheduling.x-k8s.io/pod-group", "In", ("low",)),)
    assert observed.disruptions_allowed == 1  # 2 healthy, 1 must stay


def test_the_victims_going_take_the_allowed_disruptions_down() -> None:
    sim, _ = simulated()
    sim.apply(budget(selector=(NodeSelectorRequirement(
        "scheduling.x-k8s.io/pod-group", "In", ("low",)),)))
    sim.budgets["default/web"] = BudgetSpec(max_unavailable=1)
    sim.refresh_budgets(0)
    assert sim.state.budgets["default/web"].disruptions_allowed == 0  # both low pods deleting


@pytest.mark.parametrize(("spec", "message"), [
    ("{minAvailable: 1, maxUnavailable: 1}",
     "spec: minAvailable and maxUnavailable cannot be both set"),
    ("{minAvailable: -1}", "spec.minAvailable: must be an integer >= 0 or a percentage"),
    ("{maxUnavailable: 120%}", "spec.maxUnavailable: must be an integer >= 0 or a percentage"),
    ("{maxUnavailable: 1, selector: {matchExpressions: [{key: a, operator: Maybe}]}}",
     "spec.selector: not a valid label selector"),
])
def test_an_invalid_pdb_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, message: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(f"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: b}}\n"
                    f"spec: {spec}\n")
    assert simulate_command([path], "json") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"document 1 (PodDisruptionBudget default/b): {message}" in err, err
