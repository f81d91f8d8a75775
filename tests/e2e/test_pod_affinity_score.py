"""Preferred inter-pod (anti-)affinity decides the node: gangsched picks what kube-scheduler
picks.

The differential test compares feasibility only (the two score nodes with different plugin
sets); here each case is a few KWOK nodes where InterPodAffinity's score (weight 2, normalized
to 0..100) outweighs every other score by far, so the best node is unique for both. Each case
has its own nodes (a nodeSelector keeps its pods there), namespace and zone values, so cases
do not count each other's pods. Pods bound by name are created first; then each case's pod is
judged by gangsched on the cluster as listed (`differential.verdict`, its own code path) and
offered to the real kube-scheduler; both must choose the node worked out by hand.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from services.kube.client import KubeClient
from tests.cluster.fixture import ControlPlane
from tests.e2e.differential import oracle, runner, verdict
from tests.e2e.differential.families import HOSTNAME, ZONE, ClusterPlan, Manifest
from tests.e2e.differential.families.requests import IMAGE

pytestmark = pytest.mark.e2e

CASE = "diff.gangsched.io/case"
NODES_PER_CASE = 4
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def weighted(weight: int, key: str, **labels: str) -> Manifest:
    return {"weight": weight, "podAffinityTerm": term(key, **labels)}


def term(key: str, **labels: str) -> Manifest:
    return {"topologyKey": key, "labelSelector": {"matchLabels": labels}}


@dataclass(frozen=True)
class Case:
    """`bound`: (node number, app label, spec.affinity) of pods bound by name; `pod`: the
    offered pod's app label and affinity; `best`: the node number both must choose;
    `plain_best`: where gangsched puts the pod without its affinity (None: not checked)."""

    name: str
    bound: list[tuple[int, str, Manifest]]
    app: str
    affinity: Manifest
    best: int
    plain_best: int | None = None
    big: dict[int, str] = field(default_factory=dict)
    """Node number → cpu of a pod of app `other` bound there (makes the node less free)."""


CASES = [
    # a db pod on n2 attracts: the other nodes are emptier
    Case("affinity", [(2, "db", {})], "web",
         {"podAffinity": {PREFERRED: [weighted(20, HOSTNAME, app="db")]}}, best=2, plain_best=0),
    # web pods on n0..n2 repel; n3 is the only one without, though a big pod fills it
    Case("anti", [(0, "web", {}), (1, "web", {}), (2, "web", {})], "web",
         {"podAntiAffinity": {PREFERRED: [weighted(50, HOSTNAME, app="web")]}}, best=3,
         plain_best=0, big={3: "3"}),
    # existing pods' terms: preferred affinity (+80 on n1), preferred anti-affinity (-100 on
    # n2), required affinity (+1 on n3): normalized n0 55, n1 100, n2 0, n3 56
    Case("symmetry", [(1, "cache", {"podAffinity": {PREFERRED: [weighted(80, HOSTNAME,
                                                                          app="web")]}}),
                      (2, "cache", {"podAntiAffinity": {PREFERRED: [weighted(100, HOSTNAME,
                                                                             app="web")]}}),
                      (3, "cache", {"podAffinity": {REQUIRED: [term(HOSTNAME, app="web")]}})],
         "web", {}, best=1),
    # an existing pod's required affinity alone: hardPodAffinityWeight 1, normalized to 100
    Case("hard", [(2, "cache", {"podAffinity": {REQUIRED: [term(HOSTNAME, app="web")]}})],
         "web", {}, best=2),
    # zones: n0, n1 in one, n2, n3 in the other; n0's pod repels the zone (-100), a db pod on n3
    # attracts (+10): normalized n0 0, n1 0, n2 90, n3 100
    Case("zone", [(0, "cache", {"podAntiAffinity": {PREFERRED: [weighted(100, ZONE,
                                                                          app="batch")]}}),
                  (3, "db", {})],
         "batch", {"podAffinity": {PREFERRED: [weighted(10, HOSTNAME, app="db")]}}, best=3),
]


def node_name(case: Case, number: int) -> str:
    return f"pas-{case.name}-{number}"


def node(case: Case, number: int) -> Manifest:
    name = node_name(case, number)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {HOSTNAME: name, ZONE: f"{case.name}-{number // 2}",
                                    CASE: case.name, "type": "kwok",
                                    "kubernetes.io/os": "linux"},
                         "annotations": {"kwok.x-k8s.io/node": "fake",
                                         "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def pod(case: Case, name: str, app: str, affinity: Manifest, cpu: str = "100m",
        on: int | None = None) -> Manifest:
    spec: Manifest = {"terminationGracePeriodSeconds": 0, "nodeSelector": {CASE: case.name},
                      "containers": [{"name": "main", "image": IMAGE, "resources": {
                          "requests": {"cpu": cpu, "memory": "128Mi"}}}]}
    if affinity:
        spec["affinity"] = copy.deepcopy(affinity)
    if on is not None:
        spec["nodeName"] = node_name(case, on)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": f"pas-{case.name}", "labels": {"app": app}},
            "spec": spec}


def bound_pods(case: Case) -> list[Manifest]:
    pods = [pod(case, f"bound-{i}", app, affinity, on=number)
            for i, (number, app, affinity) in enumerate(case.bound)]
    pods += [pod(case, f"big-{number}", "other", {}, cpu=cpu, on=number)
             for number, cpu in sorted(case.big.items())]
    return pods


@pytest.fixture(scope="module")
def scheduler_plane() -> Iterator[ControlPlane]:
    """A control plane with kube-scheduler and no nodes (the test creates its own)."""
    with ControlPlane(nodes=0, kube_scheduler=True) as cp:
        yield cp


async def _choices(client: KubeClient) -> dict[str, runner.NodeChoices]:
    """Per case: kube-scheduler's node, gangsched's, and gangsched's without the affinity."""
    plan = ClusterPlan(nodes=[node(case, n) for case in CASES for n in range(NODES_PER_CASE)],
                       namespaces=tuple(f"pas-{case.name}" for case in CASES))
    slimmer = verdict.Slimmer()
    found: dict[str, runner.NodeChoices] = {}
    async with oracle.mirrors(client) as mirrors:
        await runner.build_cluster(client, mirrors, plan)
        for case in CASES:
            for manifest in bound_pods(case):
                await runner.prebind(client, mirrors.pods, manifest)
        for case in CASES:
            offered = pod(case, "offered", case.app, case.affinity)
            found[case.name] = await runner.node_choices(client, mirrors, slimmer, offered)
    return found


@pytest.mark.timeout(300)
def test_preferred_pod_affinity_picks_the_node_kube_scheduler_picks(
        scheduler_plane: ControlPlane) -> None:
    found = asyncio.run(
        runner.with_client(scheduler_plane.kubeconfig, _choices))
    expected = {case.name: (node_name(case, case.best), node_name(case, case.best))
                for case in CASES}
    assert {name: choice[:2] for name, choice in found.items()} == expected
    plain = {case.name: found[case.name][2] for case in CASES if case.plain_best is not None}
    assert plain == {case.name: node_name(case, case.plain_best) for case in CASES
                     if case.plain_best is not None}
