"""Whole-gang preemption on the real control plane (cases a-e).

PriorityClasses gs-low (10), gs-high (1000) and gs-top (2000); the API server's Priority
admission resolves them to `spec.priority`. KWOK nodes of 4 CPU. After each scenario
`replay --verify` re-derives every decision, the Preemptions included, bit for bit.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests
from tests.support.gangsched_process import GangschedRun, serving
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

CLASSES = {"gs-low": 10, "gs-high": 1000, "gs-top": 2000}


def _classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": name}, "value": value} for name, value in CLASSES.items()]


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[ControlPlane]:
    with ControlPlane(nodes=2, cpu="4", memory="16Gi", pods=110) as cp:
        manifests.apply(cp, None, *_classes())
        yield cp


@pytest.fixture(scope="module")
def six_nodes() -> Iterator[ControlPlane]:
    with ControlPlane(nodes=6, cpu="4", memory="16Gi", pods=110) as cp:
        manifests.apply(cp, None, *_classes())
        yield cp


@pytest.fixture(scope="module")
def on_two(two_nodes: ControlPlane,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangschedRun]:
    with serving(two_nodes.kubeconfig, tmp_path_factory.mktemp("gangsched")) as run:
        yield run


@pytest.fixture(scope="module")
def on_six(six_nodes: ControlPlane,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangschedRun]:
    with serving(six_nodes.kubeconfig, tmp_path_factory.mktemp("gangsched")) as run:
        yield run


def _namespace(cp: ControlPlane, prefix: str) -> Iterator[str]:
    """A namespace for one scenario; its pods are gone (nodes empty) before the next one."""
    with kube.fresh_namespace(cp, prefix) as name:
        yield name
        cp.kubectl("delete", "pods", "--all", "-n", name, "--wait=true", "--timeout=60s")


@pytest.fixture
def ns2(two_nodes: ControlPlane) -> Iterator[str]:
    yield from _namespace(two_nodes, "preempt")


@pytest.fixture
def ns6(six_nodes: ControlPlane) -> Iterator[str]:
    yield from _namespace(six_nodes, "preempt")


def _pod(name: str, group: str | None, cls: str, cpu: str = "4",
         **labels: str) -> dict[str, Any]:
    pod = manifests.pod(name, group, cpu=cpu, priorityClassName=cls)
    pod["metadata"]["labels"].update(labels)
    return pod


def _placed(cp: ControlPlane, namespace: str) -> dict[str, str]:
    """Names of pods bound (and not terminating) → node."""
    return {pod["metadata"]["name"]: pod["spec"]["nodeName"]
            for pod in kube.bound(kube.pods(cp, namespace))
            if not pod["metadata"].get("deletionTimestamp")}


def _names(cp: ControlPlane, namespace: str) -> set[str]:
    return {pod["metadata"]["name"] for pod in kube.pods(cp, namespace)}


def _verify(run: GangschedRun) -> None:
    result = subprocess.run([sys.executable, "-m", "services.cli.main", "replay", "--verify",
                             "--data-dir", str(run.data_dir)],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("verified "), result.stdout


def _podgroup_condition(cp: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    podgroup = kube.get_json(cp, "podgroup", name, "-n", namespace)
    conditions = podgroup.get("status", {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Scheduled"), {})


def test_a_high_gang_evicts_the_low_gang_in_its_way_and_runs(
        two_nodes: ControlPlane, on_two: GangschedRun, ns2: str) -> None:
    manifests.apply(two_nodes, ns2, manifests.podgroup("low", 1), _pod("low-0", "low", "gs-low"))
    eventually(lambda: "low-0" in _placed(two_nodes, ns2), timeout=60, what="low-0 bound")
    manifests.apply(two_nodes, ns2, manifests.podgroup("high", 2),
                    _pod("high-0", "high", "gs-high"), _pod("high-1", "high", "gs-high"))
    placed = eventually(lambda: p if len(p := _placed(two_nodes, ns2)) == 2
                        and set(p) == {"high-0", "high-1"} else None,
                        timeout=90, what="the high gang bound on both nodes")
    assert placed is not None  # `eventually` returns only a truthy value
    assert sorted(placed.values()) == ["kwok-node-0", "kwok-node-1"]
    assert "low-0" not in _names(two_nodes, ns2)  # evicted, a bare pod: gone
    preempted = [event for event in kube.events(two_nodes, ns2, "Preempted")
                 if event["involvedObject"]["name"] == "low-0"]
    assert preempted and f"{ns2}/high" in preempted[0]["message"], preempted
    condition = eventually(lambda: c if (c := _podgroup_condition(two_nodes, ns2, "low"))
                           .get("reason") == "Preempted" else None,
                           timeout=30, what="the low PodGroup reads Preempted")
    assert condition is not None  # `eventually` returns only a truthy value
    assert condition["message"].startswith(f"preempted by gang {ns2}/high (priority 1000 > 10)")
    samples = on_two.metric_samples()
    assert samples[("gangsched_preemptions_total", ())] >= 1
    assert samples[("gangsched_preemption_victims_total", ())] >= 1
    _verify(on_two)


def test_b_the_fewest_whole_gangs_are_evicted_and_none_is_left_partial(
        six_nodes: ControlPlane, on_six: GangschedRun, ns6: str) -> None:
    for name in ("a", "b", "c"):
        manifests.apply(six_nodes, ns6, manifests.podgroup(name, 4),
                        *[_pod(f"{name}-{i}", name, "gs-low", cpu="2") for i in range(4)])
    eventually(lambda: len(_placed(six_nodes, ns6)) == 12, timeout=90, what="12 low pods bound")
    manifests.apply(six_nodes, ns6, manifests.podgroup("big", 8),
                    *[_pod(f"big-{i}", "big", "gs-high", cpu="1") for i in range(8)])
    eventually(lambda: sum(name.startswith("big-") for name in _placed(six_nodes, ns6)) == 8,
               timeout=120, what="the gang of 8 bound")
    left = {name.split("-")[0] for name in _names(six_nodes, ns6) if not name.startswith("big")}
    assert len(left) == 2, left  # exactly one whole gang of the three was evicted
    for gang in left:
        members = [name for name in _placed(six_nodes, ns6) if name.startswith(f"{gang}-")]
        assert len(members) == 4, (gang, members)  # the others kept every member
    _verify(on_six)


def test_c_a_preemptor_that_would_not_fit_even_then_evicts_nothing(
        two_nodes: ControlPlane, on_two: GangschedRun, ns2: str) -> None:
    manifests.apply(two_nodes, ns2, _pod("low", None, "gs-low"), _pod("top", None, "gs-top"))
    eventually(lambda: len(_placed(two_nodes, ns2)) == 2, timeout=60, what="low and top bound")
    manifests.apply(two_nodes, ns2, manifests.podgroup("wide", 2),
                    _pod("wide-0", "wide", "gs-high"), _pod("wide-1", "wide", "gs-high"))

    def refused() -> list[dict[str, Any]] | None:
        events = [e for e in kube.events(two_nodes, ns2, "FailedScheduling")
                  if "preemption: not helpful" in e.get("message", "")]
        return events or None

    eventually(refused, timeout=60, what="FailedScheduling says preemption is not helpful")
    time.sleep(3)  # a futile eviction would have been carried out by now
    assert set(_placed(two_nodes, ns2)) == {"low", "top"}
    assert not kube.events(two_nodes, ns2, "Preempted")
    _verify(on_two)


def test_d_a_pdb_protected_victim_is_avoided_when_another_choice_exists(
        two_nodes: ControlPlane, on_two: GangschedRun, ns2: str) -> None:
    manifests.apply(two_nodes, ns2, _pod("guarded", None, "gs-low", role="db"),
                    _pod("spare", None, "gs-low", role="web"),
                    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": "db"},
                     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"role": "db"}}}})
    eventually(lambda: len(_placed(two_nodes, ns2)) == 2, timeout=60, what="both bound")

    def budget_counted() -> bool:
        pdb = kube.get_json(two_nodes, "pdb", "db", "-n", ns2)
        status = pdb.get("status", {})
        counted: bool = (status.get("currentHealthy") == 1
                         and status.get("disruptionsAllowed") == 0)
        return counted

    eventually(budget_counted, timeout=60, what="the PDB allows no disruption")
    time.sleep(2)  # the watcher publishes the budget's status
    manifests.apply(two_nodes, ns2, _pod("urgent", None, "gs-high"))
    eventually(lambda: "urgent" in _placed(two_nodes, ns2), timeout=90, what="urgent bound")
    assert "guarded" in _placed(two_nodes, ns2)
    assert "spare" not in _names(two_nodes, ns2)
    _verify(on_two)
