"""Preferred node affinity decides the node: gangsched picks what kube-scheduler picks.

The differential test compares feasibility only; here each case is four KWOK nodes alike in
resources where NodeAffinity's score (weight 2, normalized to 0..100) outweighs every other
score by far, so the best node is unique for both. Each case has its own nodes (a nodeSelector
keeps its pod there) and namespace. A case's bound pods are created first; then its pod is
judged by gangsched on the cluster as listed (`differential.verdict`, its own code path) and
offered to the real kube-scheduler; both must choose the node worked out by hand, and
gangsched without the preferred terms another (the one resources alone pick).

Then: preferred terms kube-scheduler cannot parse (a value that is no label value, a Gt value
that is no integer), bound only where one node passes the filters and otherwise left with
kube-scheduler's PreScore error, word for word; and PreferNoSchedule taints normalized as
TaintToleration scores them, against a preference.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from services.config.settings import KubeSettings
from services.kube.client import KubeClient, connect
from tests.cluster.fixture import ControlPlane
from tests.e2e.differential import oracle, runner, verdict
from tests.e2e.differential.families import HOSTNAME, ClusterPlan, Manifest
from tests.e2e.differential.families.requests import IMAGE
from tests.e2e.differential.oracle import Mirrors

pytestmark = pytest.mark.e2e

CASE = "diff.gangsched.io/case"
DISK, GENERATION = "diff.gangsched.io/disktype", "diff.gangsched.io/generation"
NODES_PER_CASE = 4
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def prefer(weight: int, *expressions: Manifest, fields: tuple[Manifest, ...] = ()) -> Manifest:
    preference: Manifest = {}
    if expressions:
        preference["matchExpressions"] = list(expressions)
    if fields:
        preference["matchFields"] = list(fields)
    return {"weight": weight, "preference": preference}


def expression(key: str, operator: str, *values: str) -> Manifest:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


@dataclass(frozen=True)
class Case:
    """`labels`: node number → its extra labels; `terms` the offered pod's preferred terms;
    `best` the node number both must choose, `plain_best` gangsched's without the terms;
    `big`: node number → cpu of a pod bound there (makes the node less free)."""

    name: str
    labels: dict[int, dict[str, str]]
    terms: list[Manifest]
    best: int
    plain_best: int = 0
    big: dict[int, str] = field(default_factory=dict)


def node_name(case: Case, number: int) -> str:
    return f"nas-{case.name}-{number}"


CASES = [
    # one term of weight 50 matches n2 alone: n2 200, the others 0
    Case("weight", {2: {DISK: "ssd"}}, [prefer(50, expression(DISK, "In", "ssd"))], best=2),
    # weights add up: n1 30 + 40 = 70, n2 30, n3 40 -> normalized n1 100, n2 42, n3 57
    Case("sum", {1: {DISK: "ssd", GENERATION: "3"}, 2: {DISK: "ssd"}, 3: {GENERATION: "5"}},
         [prefer(30, expression(DISK, "Exists")), prefer(40, expression(GENERATION, "Gt", "2"))],
         best=1),
    # matchFields on metadata.name, ANDed with an expression no node fails (DoesNotExist)
    Case("fields", {}, [prefer(1, expression(DISK, "DoesNotExist"),
                               fields=({"key": "metadata.name", "operator": "In",
                                        "values": ["nas-fields-3"]},))], best=3),
    # a pod of 3 cpu on n2 makes resources prefer the others; the preference (200) outweighs
    Case("resources", {2: {DISK: "ssd"}}, [prefer(1, expression(DISK, "In", "ssd"))], best=2,
         big={2: "3"}),
]


def node(case: Case, number: int) -> Manifest:
    name = node_name(case, number)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {HOSTNAME: name, CASE: case.name, "type": "kwok",
                                    "kubernetes.io/os": "linux",
                                    **case.labels.get(number, {})},
                         "annotations": {"kwok.x-k8s.io/node": "fake",
                                         "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def pod(case: Case, name: str, terms: list[Manifest], cpu: str = "100m",
        on: int | None = None) -> Manifest:
    spec: Manifest = {"terminationGracePeriodSeconds": 0, "nodeSelector": {CASE: case.name},
                      "containers": [{"name": "main", "image": IMAGE, "resources": {
                          "requests": {"cpu": cpu, "memory": "128Mi"}}}]}
    if terms:
        spec["affinity"] = {"nodeAffinity": {PREFERRED: copy.deepcopy(terms)}}
    if on is not None:
        spec["nodeName"] = node_name(case, on)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": f"nas-{case.name}", "labels": {}},
            "spec": spec}


@pytest.fixture(scope="module")
def scheduler_plane() -> Iterator[ControlPlane]:
    """A control plane with kube-scheduler and no nodes (the test creates its own)."""
    with ControlPlane(nodes=0, kube_scheduler=True) as cp:
        yield cp


async def _choices(client: KubeClient) -> dict[str, runner.NodeChoices]:
    """Per case: kube-scheduler's node, gangsched's, and gangsched's without the terms."""
    plan = ClusterPlan(nodes=[node(case, n) for case in CASES for n in range(NODES_PER_CASE)],
                       namespaces=tuple(f"nas-{case.name}" for case in CASES))
    slimmer = verdict.Slimmer()
    found: dict[str, runner.NodeChoices] = {}
    async with oracle.mirrors(client) as mirrors:
        await runner.build_cluster(client, mirrors, plan)
        for case in CASES:
            for number, cpu in sorted(case.big.items()):
                await runner.prebind(client, mirrors.pods,
                                     pod(case, f"big-{number}", [], cpu=cpu, on=number))
        for case in CASES:
            offered = pod(case, "offered", case.terms)
            found[case.name] = await runner.node_choices(client, mirrors, slimmer, offered)
    return found


@pytest.mark.timeout(300)
def test_preferred_node_affinity_picks_the_node_kube_scheduler_picks(
        scheduler_plane: ControlPlane) -> None:
    found = asyncio.run(
        runner.with_client(scheduler_plane.kubeconfig, _choices))
    assert found == {case.name: (node_name(case, case.best), node_name(case, case.best),
                                 node_name(case, case.plain_best)) for case in CASES}


@dataclass(frozen=True)
class Unparseable:
    """A pod whose preferred terms kube-scheduler cannot parse, on two nodes of its own;
    `pinned`: the node number its nodeSelector also pins it to (one feasible node)."""

    case: Case
    pinned: int | None = None


UNPARSEABLE = [
    Unparseable(Case("label-value", {}, [prefer(10, expression(DISK, "In", "fast disk"))],
                     best=0)),
    Unparseable(Case("sign", {}, [prefer(10, expression(GENERATION, "Gt", "-5"))], best=0)),
    Unparseable(Case("one-feasible", {}, [prefer(10, expression(GENERATION, "Gt", "five"))],
                     best=1), pinned=1),
]


async def _scheduled(mirrors: Mirrors, namespace: str, name: str) -> tuple[str | None, str]:
    """kube-scheduler's node for the pod, else its PodScheduled condition's message (its
    reason first): waits up to 20 s for one or the other."""
    for _ in range(80):
        await asyncio.sleep(0.25)
        seen = mirrors.pods.by_name(namespace, name) or {}
        if seen.get("spec", {}).get("nodeName"):
            return seen["spec"]["nodeName"], ""
        for condition in seen.get("status", {}).get("conditions", []):
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                return None, f"{condition.get('reason')}: {condition.get('message')}"
    return None, "no outcome in 20 s"


async def _unparseable(cp: ControlPlane) -> dict[str, tuple[object, object]]:
    client = await connect(KubeSettings(kubeconfig=cp.kubeconfig))
    found: dict[str, tuple[object, object]] = {}
    try:
        plan = ClusterPlan(nodes=[node(u.case, n) for u in UNPARSEABLE for n in range(2)],
                           namespaces=tuple(f"nas-{u.case.name}" for u in UNPARSEABLE))
        slimmer = verdict.Slimmer()
        async with oracle.mirrors(client) as mirrors:
            await runner.build_cluster(client, mirrors, plan)
            for unparseable in UNPARSEABLE:
                case = unparseable.case
                offered = pod(case, "offered", case.terms)
                if unparseable.pinned is not None:
                    offered["spec"]["nodeSelector"][HOSTNAME] = node_name(case,
                                                                          unparseable.pinned)
                admitted = await oracle.create(client, offered, dry_run=True)
                ours = verdict.judge(slimmer, runner.observed(mirrors), admitted)
                await oracle.create(client, offered)
                kube = await _scheduled(mirrors, f"nas-{case.name}", "offered")
                found[case.name] = (kube, (ours.node, "" if ours.node else
                                           f"SchedulerError: {ours.reason}"))
    finally:
        await client.close()
    return found


INTEGER = "for 'Gt', 'Lt' operators, the value must be an integer"
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
PRESCORE = 'SchedulerError: running PreScore plugin "NodeAffinity": [0].matchExpressions[0]'


@pytest.mark.timeout(300)
def test_terms_kube_scheduler_cannot_parse_bind_only_on_a_single_feasible_node(
        scheduler_plane: ControlPlane) -> None:
    """Two feasible nodes: PreScore fails the pod (never bound), with the same message from
    both; one feasible node: kube-scheduler binds it unscored, and so does gangsched."""
    found = asyncio.run(_unparseable(scheduler_plane))
    label_value = (None, f'{PRESCORE}.values[0][{DISK}]: Invalid value: "fast disk": '
                         f"{LABEL_VALUE}")
    sign = (None, f'{PRESCORE}.values[0][{GENERATION}]: Invalid value: "-5": {LABEL_VALUE}')
    pinned = (node_name(UNPARSEABLE[2].case, 1), "")
    assert found == {"label-value": (label_value, label_value), "sign": (sign, sign),
                     "one-feasible": (pinned, pinned)}


TAINTED = Case("pns", {1: {DISK: "ssd"}}, [prefer(1, expression(DISK, "In", "ssd"))], best=1)
PREFER_NO_SCHEDULE = {0: ["t1", "t2"], 1: ["t1"], 2: []}


async def _tainted(cp: ControlPlane) -> tuple[str | None, str | None]:
    client = await connect(KubeSettings(kubeconfig=cp.kubeconfig))
    try:
        nodes = []
        for number, keys in PREFER_NO_SCHEDULE.items():
            manifest = node(TAINTED, number)
            manifest["spec"] = {"taints": [{"key": key, "effect": "PreferNoSchedule"}
                                           for key in keys]}
            nodes.append(manifest)
        plan = ClusterPlan(nodes=nodes, namespaces=(f"nas-{TAINTED.name}",))
        slimmer = verdict.Slimmer()
        async with oracle.mirrors(client) as mirrors:
            await runner.build_cluster(client, mirrors, plan)
            offered = pod(TAINTED, "offered", TAINTED.terms)
            admitted = await oracle.create(client, offered, dry_run=True)
            ours = verdict.judge(slimmer, runner.observed(mirrors), admitted)
            kube = await oracle.offer(client, mirrors.pods, offered)
            return kube.node, ours.node
    finally:
        await client.close()


@pytest.mark.timeout(300)
def test_prefer_no_schedule_is_normalized_against_the_preference(
        scheduler_plane: ControlPlane) -> None:
    """Node 0: two PreferNoSchedule taints, node 1: one (and disk=ssd, preferred weight 1),
    node 2: none. TaintToleration 0, 150, 300 (reverse-normalized, weight 3); NodeAffinity
    node 1 200: node 1 (350) for both; a flat 300 per taint chose node 2."""
    best = node_name(TAINTED, 1)
    assert asyncio.run(_tainted(scheduler_plane)) == (best, best)
