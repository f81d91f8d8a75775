"""PodDisruptionBudgets on the real control plane: the watcher publishes what the API server
and kube-controller-manager's disruption controller say (the watcher's side of preemption).

`gangsched watcher` runs as its own process on a private NATS. Three bare pods KWOK runs and
a budget of minAvailable 1 over them: the controller computes disruptionsAllowed 2, and the
budget's DisruptionBudgetObserved carries it; an eviction through the API server's Eviction
subresource puts the pod in `status.disruptedPods` (one disruption fewer), which the watcher
publishes too, then the controller's count once the pod is gone; deleting the budget
publishes DisruptionBudgetDeleted, and so does the next watcher for a budget deleted while
none ran (its seed from the log). A watcher whose identity may not list budgets keeps
running and publishing pods, says what is missing in its log, and catches up once granted.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests, split
from tests.support.waiting import eventually
from tests.unit.deploy import chart

pytestmark = pytest.mark.e2e

NODE = "kwok-node-0"
RBAC = "rbac.authorization.k8s.io"


def web_pods(count: int) -> list[dict[str, Any]]:
    """Bare pods labelled app=web, bound to the KWOK node (KWOK runs them, Ready)."""
    pods = [manifests.pod(f"web-{i}", None, nodeName=NODE) for i in range(count)]
    for pod in pods:
        pod["metadata"]["labels"] = {"app": "web"}
    return pods


def web_budget(min_available: int) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}}}


def budget_now(cp: ControlPlane, namespace: str) -> dict[str, Any]:
    return kube.get_json(cp, "pdb", "web", "-n", namespace)


def published(services: split.Services, namespace: str) -> list[dict[str, Any]]:
    """Every event the watcher published on the budget's subject, in order."""
    return split.messages(services.nats.url, "EVENTS", f"gangsched.events.pdb.{namespace}.web")


def observed_as_api(services: split.Services, namespace: str,
                    budget: dict[str, Any]) -> bool:
    """The last event on the budget's subject states what this version of it says.

    Its resourceVersion may be an earlier one: the watcher leaves out a watch event that
    repeats its object's last published one (`services.watcher.repeats`), and the disruption
    controller writes versions the slim event cannot tell apart (say `expectedPods` 3, then 2
    once an evicted pod, already counted out, is gone).
    """
    events = published(services, namespace)
    if not events:
        return False
    last, status = events[-1], budget.get("status", {})
    return last == {
        "type": "DisruptionBudgetObserved", "at_ms": last["at_ms"],
        "uid": budget["metadata"]["uid"], "namespace": namespace, "name": "web",
        "resource_version": last["resource_version"],
        "selector": [{"key": "app", "operator": "In", "values": ["web"]}],
        "disruptions_allowed": status.get("disruptionsAllowed", 0),
        "disrupted_pods": sorted(status.get("disruptedPods") or {})}


def evict(cp: ControlPlane, namespace: str, name: str) -> None:
    """POST the pod's `eviction` subresource, as `kubectl drain` does."""
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace}}
    cp.kubectl("create", "--raw", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
               "-f", "-", input=json.dumps(body))


def test_a_budget_is_published_with_the_disruption_controllers_counts_and_its_delete(
        control_plane: ControlPlane, services: split.Services, namespace: str) -> None:
    services.start("watcher")
    manifests.create(control_plane, namespace, *web_pods(3), web_budget(1))

    def settled(allowed: int) -> dict[str, Any] | None:
        budget = budget_now(control_plane, namespace)
        status = budget.get("status", {})
        return budget if (status.get("disruptionsAllowed") == allowed
                          and not status.get("disruptedPods")
                          and status.get("observedGeneration") == 1) else None

    budget = eventually(lambda: settled(2), timeout=60, what="disruptionsAllowed 2")
    assert budget is not None  # `eventually` returns only a truthy value
    assert budget["status"]["currentHealthy"] == 3
    # mypy forgets the narrowing in the lambda, as `budget` is assigned again below
    eventually(lambda: observed_as_api(services, namespace, budget),  # type: ignore[arg-type]
               timeout=15, what="the budget's counts published")

    evict(control_plane, namespace, "web-0")
    eventually(lambda: any(event.get("disrupted_pods") == ["web-0"]
                           and event["disruptions_allowed"] == 1
                           for event in published(services, namespace)),
               timeout=15, what="the eviction's disruptedPods published")
    budget = eventually(lambda: settled(1), timeout=60, what="disruptionsAllowed 1, web-0 gone")
    assert budget is not None  # `eventually` returns only a truthy value
    eventually(lambda: observed_as_api(services, namespace, budget), timeout=15,
               what="the recount published")

    control_plane.kubectl("delete", "pdb", "web", "-n", namespace, "--wait=true")
    eventually(lambda: published(services, namespace)[-1]["type"] == "DisruptionBudgetDeleted",
               timeout=15, what="the delete published")
    deleted = published(services, namespace)[-1]
    assert (deleted["uid"], deleted["namespace"], deleted["name"]) == (
        budget["metadata"]["uid"], namespace, "web")


def test_a_budget_deleted_while_no_watcher_ran_gets_its_delete_from_the_next_watcher(
        control_plane: ControlPlane, services: split.Services, namespace: str) -> None:
    first = services.start("watcher")[0]
    manifests.create(control_plane, namespace, web_budget(1))
    budget = budget_now(control_plane, namespace)
    eventually(lambda: published(services, namespace) != [], timeout=15,
               what="the budget published")
    assert first.stop() == 0
    control_plane.kubectl("delete", "pdb", "web", "-n", namespace, "--wait=true")
    services.start("watcher")  # seeded from the log: the budget is known, the list lacks it
    eventually(lambda: published(services, namespace)[-1]["type"] == "DisruptionBudgetDeleted",
               timeout=30, what="the synthetic delete published")
    assert published(services, namespace)[-1]["uid"] == budget["metadata"]["uid"]


def watcher_rules(*, with_budgets: bool) -> list[dict[str, Any]]:
    """The chart's watcher ClusterRole rules, without the PodDisruptionBudget rule unless
    `with_budgets`."""
    rules: list[dict[str, Any]] = chart.find(chart.render(), "ClusterRole",
                                             f"{chart.RELEASE}-watcher")["rules"]
    return [rule for rule in rules if with_budgets or rule["apiGroups"] != ["policy"]]


@pytest.fixture
def watcher_without_budgets(control_plane: ControlPlane, namespace: str,
                            tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A kubeconfig for a ServiceAccount with the chart's watcher rules but the budgets', and
    the name of its ClusterRole (cluster-scoped RBAC deleted afterwards)."""
    name = f"gangsched-watcher-{uuid.uuid4().hex[:8]}"
    subject = {"kind": "ServiceAccount", "name": "watcher", "namespace": namespace}
    manifests.apply(control_plane, None,
                    {"apiVersion": "v1", "kind": "ServiceAccount",
                     "metadata": {"name": "watcher", "namespace": namespace}},
                    {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name},
                     "rules": watcher_rules(with_budgets=False)},
                    {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
                     "metadata": {"name": name}, "subjects": [subject],
                     "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name}})
    token = control_plane.kubectl("create", "token", "watcher", "-n", namespace,
                                  "--duration=1h").strip()
    try:
        yield kube.token_kubeconfig(control_plane, tmp_path / "watcher.kubeconfig", token), name
    finally:
        control_plane.kubectl("delete", "clusterrolebinding,clusterrole", name,
                              "--ignore-not-found")


def test_a_watcher_rbac_forbids_budgets_keeps_running_says_why_and_catches_up_once_granted(
        control_plane: ControlPlane, services: split.Services, namespace: str,
        watcher_without_budgets: tuple[Path, str]) -> None:
    kubeconfig, role = watcher_without_budgets
    watcher = services.launch("watcher", kubeconfig=kubeconfig)
    manifests.create(control_plane, namespace, *web_pods(1), web_budget(1))
    hint = ("(RBAC: let this identity list and watch poddisruptionbudgets.policy, as the watcher "
            "ClusterRole of deploy/chart/templates/rbac.yaml does; not ready until it may)")
    eventually(lambda: hint in watcher.log_text(), timeout=30, what="the missing grant logged")
    pod_subject = f"gangsched.events.pod.{namespace}.web-0"
    eventually(lambda: split.last_message(services.nats.url, "EVENTS", pod_subject) is not None,
               timeout=30, what="pods still published")
    assert watcher.process is not None and watcher.process.poll() is None
    assert not (watcher.data_dir / "run.json").exists()  # not ready: a list is missing
    assert published(services, namespace) == []
    refusals = [line for line in watcher.log_text().splitlines() if hint in line]
    assert all("pdb list/watch failed, retrying in" in line and "HTTP 403 Forbidden" in line
               for line in refusals), refusals
    assert "Traceback" not in watcher.log_text()

    manifests.apply(control_plane, None, {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": role},
        "rules": watcher_rules(with_budgets=True)})
    watcher.wait_ready(ready_timeout=90)  # the next retry lists the budgets
    budget = budget_now(control_plane, namespace)
    eventually(lambda: published(services, namespace) != [], timeout=15,
               what="the budget published")
    assert published(services, namespace)[0]["uid"] == budget["metadata"]["uid"]
