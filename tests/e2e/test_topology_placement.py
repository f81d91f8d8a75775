"""Native PodGroup topology placement: gangsched puts a gang in the domain kube-scheduler picks.

Kubernetes 1.36 (feature gates GenericWorkload, GangScheduling and TopologyAwareWorkloadScheduling,
all alpha and off by default; the API server drops `spec.schedulingConstraints` without the
last, and kube-scheduler takes a pod with `spec.schedulingGroup` through its pod group cycle
only with the first) places a PodGroup with `spec.schedulingConstraints.topology: [{key: K}]`
in one domain of the node label K (`schedule_one_podgroup.go`,
`podGroupSchedulingPlacementAlgorithm`):

- TopologyPlacement (`topologyaware/topology_placement.go`) makes one placement per value of
  K among ALL nodes (nodes without K are in none); when members are already scheduled
  (assumed or bound) only their domain;
- each placement is simulated with the plain pod group algorithm restricted to its nodes
  (pods one by one through the usual filters; members that do not fit are left out, the
  placement succeeds when GangScheduling's Permit sees minCount members scheduled);
- no placement succeeds: the group is unschedulable, its `PodGroupScheduled` condition False
  (reason Unschedulable) with the message `0/N placements are available, first placement
  status: ...` (N every placement generated); one succeeds: it is taken unscored;
- several: each is scored by the PlacementScore plugins, weight 1 each in the default
  profile: PodGroupPodsCount (the group's scheduled members plus those the placement
  places, normalized `count * 100 // max count` over the successful placements) and
  NodeResourcesFit's `ScorePlacement` (MostAllocated, whatever the profile's node scoring
  strategy: per resource of the strategy, cpu and memory of weight 1, `min(requested,
  allocatable) * 100 // allocatable` over the SUM of every node of the domain, `requested`
  the nodes' non-zero requests plus the placed members'; the mean of the two, floored). The
  highest total wins; kube-scheduler breaks equal totals at random, so no case here has one.

Each case below is one pair of identical node sets, one per scheduler, with a topology key of
its own (`tp.gangsched.io/<case>-<scheduler>`, values `a`, `b`: the domains of one scheduler
never hold a node of the other, and the label value is the neutral name of the domain) and an
arena label (the gang's pods select it: they never go to another case's or the other
scheduler's nodes). Pods bound by name come first (fillers, and members of the gang in
`pinned`), then the gang's pending pods, then its PodGroup (so the whole gang is there when
its group appears: kube-scheduler lets a gang into its queue once minCount pods exist, and
would otherwise place a gang of minCount < pods on its first minCount pods). kube-scheduler
(`default-scheduler`) and gangsched (`gangsched run --group-apis ...`) each schedule their
own copy; both must end in the domain worked out by hand (`expected`; `pending`: nothing of
the gang bound), and each case records what a plausible wrong rule would choose instead
(`wrong`, never `expected`). Every pod requests cpu and memory (no non-zero defaults) and all
of a case's gang pods are alike, so how many fit in a domain does not depend on the order.

Units below: cpu in millicores, memory in MiB; a score line reads `cpu requested/allocatable
-> score, memory requested/allocatable -> score -> Fit`, `count -> normalized`, total.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests
from tests.support.gangsched_process import BOTH_GROUP_APIS, GangschedRun, serving
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

NATIVE = "scheduling.k8s.io/v1alpha2"
GATES = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
PLANE_ARGS = (f"--feature-gates={GATES}", "--runtime-config=scheduling.k8s.io/v1alpha2=true")
PREFIX = "tp.gangsched.io"
ARENA = f"{PREFIX}/arena"
HOSTNAME = "kubernetes.io/hostname"
GANG = "gang"
SCHEDULERS = {"kube": "default-scheduler", "ours": "gangsched"}
PENDING = "pending"
UNLABELED = "unlabeled"
"""The outcome of nodes without the topology key (case `unlabeled-needed`)."""
PLACEMENTS_UNAVAILABLE = "placements are available"
BOUND_TIMEOUT = 60.0
PENDING_FOR = 5.0

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Node:
    """A KWOK node: allocatable `cpu` (millicores) and `memory` (MiB); `filler` (cpu, memory)
    of a pod of no group bound there by name; `members` of the gang bound there by name;
    `arena` False: the gang's pods do not select it (it is still in its domain)."""

    cpu: int = 4000
    memory: int = 8192
    filler: tuple[int, int] | None = None
    members: int = 0
    arena: bool = True


@dataclass(frozen=True)
class Case:
    """`racks`: domain name → its nodes; `unlabeled`: nodes of the arena without the key; a gang
    of `pods` pods (members bound by name included) of `cpu`/`memory` each, minCount
    `min_count`. `totals`: kube-scheduler's placement score per domain whose placement
    succeeds, by hand (empty when fewer than two succeed: none is scored); `expected` the
    domain both must choose, or PENDING; `wrong`: way of placing → its outcome (a domain,
    `a+b` for a gang across domains, UNLABELED, PENDING)."""

    name: str
    racks: dict[str, tuple[Node, ...]]
    pods: int
    min_count: int
    cpu: int
    memory: int
    totals: dict[str, int]
    expected: str
    wrong: dict[str, str]
    unlabeled: tuple[Node, ...] = field(default_factory=tuple)


CASES = [
    # 1. The gang fits in one rack only. Pods 2000/1024, 4 of them, minCount 4.
    #   a: a-0 holds a filler of 3000/1024 (room for 0), a-1 empty (2): 2 < 4, fails
    #   b: two empty nodes: 2 + 2 = 4, succeeds; the only one, taken unscored.
    # a is the more allocated: MostAllocated without asking whether the gang fits picks a,
    # and so does a tie broken by name.
    Case("fits-one-rack",
         {"a": (Node(filler=(3000, 1024)), Node()), "b": (Node(), Node())},
         pods=4, min_count=4, cpu=2000, memory=1024, totals={}, expected="b",
         wrong={"unfit_most_allocated": "a", "first_by_name": "a"}),
    # 2. Both racks fit; the domain's sum decides (MostAllocated). Pods 1000/1024, 2, min 2.
    #   a: a-0 filler 3000/3072 (room for 1), a-1 empty (4)
    #      cpu 5000/8000 -> 62, memory 5120/16384 -> 31 -> Fit 46; count 2 -> 100; 146
    #   b: b-0, b-1 each a filler of 2000/2048 (room for 2 each)
    #      cpu 6000/8000 -> 75, memory 6144/16384 -> 37 -> Fit 56; count 2 -> 100; 156
    # best b by 10. LeastAllocated: a; the busiest single node (a-0 at 75% against 50%): a.
    Case("most-allocated",
         {"a": (Node(filler=(3000, 3072)), Node()),
          "b": (Node(filler=(2000, 2048)), Node(filler=(2000, 2048)))},
         pods=2, min_count=2, cpu=1000, memory=1024, totals={"a": 146, "b": 156},
         expected="b",
         wrong={"least_allocated": "a", "busiest_node": "a", "first_by_name": "a"}),
    # 3. Only with a node without the label would the gang fit. Pods 2000/1024, 3, min 3.
    #   a: one empty node (room for 2), b: the same: 2 < 3 each, both fail. The arena's
    #   unlabeled node (8000/16384, room for 4) is in no domain. Pending in both.
    # Unlabeled nodes taken as one more domain: bound there; the key ignored: bound anywhere.
    Case("unlabeled-needed", {"a": (Node(),), "b": (Node(),)},
         unlabeled=(Node(cpu=8000, memory=16384),),
         pods=3, min_count=3, cpu=2000, memory=1024, totals={}, expected=PENDING,
         wrong={"unlabeled_as_domain": UNLABELED, "no_topology": "a+b"}),
    # 4. The racks together would hold the gang, no single one does. Pods 2000/1024, 4, min 3.
    #   a: one empty node (room for 2 < 3), b: the same. Pending in both; the PodGroup says
    #   "0/2 placements are available". The key ignored: 2 + 2 bound across the racks; a
    #   domain taken once it places anything (not minCount): 2 bound in a.
    Case("split-only", {"a": (Node(),), "b": (Node(),)},
         pods=4, min_count=3, cpu=2000, memory=1024, totals={}, expected=PENDING,
         wrong={"no_topology": "a+b", "any_pod_placed": "a"}),
    # 5. minCount below the pod count: PodGroupPodsCount outweighs a more allocated rack.
    #    Pods 1000/256, 4 of them, minCount 2.
    #   a: a-0 filler 1000/128 (room for 3)
    #      cpu 4000/4000 -> 100, memory 896/8192 -> 10 -> Fit 55; count 3 -> 100; 155
    #   b: b-0 filler 2000/5120 (room for 2)
    #      cpu 4000/4000 -> 100, memory 5632/8192 -> 68 -> Fit 84; count 2 -> 200 // 3 = 66; 150
    # best a by 5: 3 bound there, the 4th left pending. Fit alone: b; the count normalized to
    # the pod count (4) instead of the highest count: a 75 + 55 = 130, b 50 + 84 = 134, b; the
    # count capped at minCount: both 100, b.
    Case("pods-count", {"a": (Node(filler=(1000, 128)),), "b": (Node(filler=(2000, 5120)),)},
         pods=4, min_count=2, cpu=1000, memory=256, totals={"a": 155, "b": 150},
         expected="a",
         wrong={"fit_only": "b", "count_over_pods": "b", "count_capped_at_min": "b"}),
    # 6. A member already bound pins the rack. Pods 1000/1024, 3 of them, minCount 3; gang-0
    #    bound by name on a-0, so only a is generated: a-0 has room for the other 2 (3 of 3
    #    scheduled: Permit passes), taken unscored.
    # Were the bound member's domain ignored (PodGroupPodsCount still counts it: 3 in both):
    #   a: cpu 3000/4000 -> 75, memory 3072/8192 -> 37 -> Fit 56; 156
    #   b: b-0 filler 2000/2048: cpu 4000/4000 -> 100, memory 4096/8192 -> 50 -> Fit 75; 175
    # b: the gang across the racks.
    Case("pinned", {"a": (Node(members=1),), "b": (Node(filler=(2000, 2048)),)},
         pods=3, min_count=3, cpu=1000, memory=1024, totals={}, expected="a",
         wrong={"bound_members_ignored": "a+b"}),
    # 7. The domain's sum counts every node of the domain, also one the gang's pods cannot use
    #    (not in the arena). Pods 1000/1024, 2 of them, minCount 2.
    #   a: a-0 filler 2000/2048 (room for 2), a-1 16000/32768 outside the arena
    #      cpu 4000/20000 -> 20, memory 4096/40960 -> 10 -> Fit 15; count 2 -> 100; 115
    #   b: b-0 filler 1000/1024 (room for 3)
    #      cpu 3000/4000 -> 75, memory 3072/8192 -> 37 -> Fit 56; count 2 -> 100; 156
    # best b by 41. Summed over the nodes the pods may use: a cpu 4000/4000 -> 100, memory
    # 4096/8192 -> 50 -> 75 against b's 56: a.
    Case("whole-domain",
         {"a": (Node(filler=(2000, 2048)), Node(cpu=16000, memory=32768, arena=False)),
          "b": (Node(filler=(1000, 1024)),)},
         pods=2, min_count=2, cpu=1000, memory=1024, totals={"a": 115, "b": 156},
         expected="b", wrong={"usable_nodes_only": "a"}),
]


# -- kube-scheduler's rule, as a model of the cases ---------------------------------------------


def room(case: Case, node: Node) -> int:
    """How many more of the gang's pods fit on `node`."""
    if not node.arena:
        return 0
    cpu = node.cpu - (node.filler or (0, 0))[0] - node.members * case.cpu
    memory = node.memory - (node.filler or (0, 0))[1] - node.members * case.memory
    return max(0, min(cpu // case.cpu, memory // case.memory))


def bound_members(case: Case) -> int:
    return sum(node.members for nodes in case.racks.values() for node in nodes)


def placed(case: Case) -> dict[str, int]:
    """Domain → how many pending pods its placement places, for each placement that succeeds
    (GangScheduling's Permit: members scheduled, bound or placed, reach minCount)."""
    pinned = [rack for rack, nodes in case.racks.items() if any(n.members for n in nodes)]
    members = bound_members(case)
    found = {}
    for rack in pinned or list(case.racks):
        count = min(case.pods - members, sum(room(case, n) for n in case.racks[rack]))
        if count and members + count >= case.min_count:
            found[rack] = count
    return found


def most_allocated(requested: int, allocatable: int) -> int:
    return min(requested, allocatable) * 100 // allocatable


def fit_score(case: Case, rack: str, count: int) -> int:
    """NodeResourcesFit's ScorePlacement: MostAllocated over the domain's sums."""
    nodes = case.racks[rack]
    cpu = count * case.cpu + sum((n.filler or (0, 0))[0] + n.members * case.cpu for n in nodes)
    memory = count * case.memory + sum((n.filler or (0, 0))[1] + n.members * case.memory
                                       for n in nodes)
    return (most_allocated(cpu, sum(n.cpu for n in nodes))
            + most_allocated(memory, sum(n.memory for n in nodes))) // 2


def totals(case: Case) -> dict[str, int]:
    """The placement scores of the successful placements, when more than one is scored."""
    found = placed(case)
    if len(found) < 2:
        return {}
    members = bound_members(case)
    most = max(members + count for count in found.values())
    return {rack: fit_score(case, rack, count) + (members + count) * 100 // most
            for rack, count in found.items()}


def chosen(case: Case) -> str:
    """The domain kube-scheduler takes (a unique best total), or PENDING."""
    found = placed(case)
    if not found:
        return PENDING
    scores = totals(case)
    if not scores:
        (only,) = found
        return only
    best = max(scores.values())
    (winner,) = [rack for rack, score in scores.items() if score == best]
    return winner


def bound_count(case: Case) -> int:
    """The gang's pods bound once placed: the members bound by name, plus those placed."""
    where = chosen(case)
    return bound_members(case) + (0 if where == PENDING else placed(case)[where])


def test_hand_computed_placements_follow_from_the_cases() -> None:
    """The premises: the totals by hand are the model's (kube-scheduler's formulas on the
    cases), the best total is unique, `expected` is what the model chooses and no wrong way
    of placing gives it."""
    for case in CASES:
        assert totals(case) == case.totals, case.name
        assert chosen(case) == case.expected, case.name
        assert case.wrong and case.expected not in case.wrong.values(), case.name
        assert list(case.racks) == ["a", "b"], case.name


# -- the cluster -----------------------------------------------------------------------------


def rack_key(case: Case, scheduler: str) -> str:
    return f"{PREFIX}/{case.name}-{scheduler}"


def arena(case: Case, scheduler: str) -> str:
    return f"{case.name}-{scheduler}"


def namespace(case: Case, scheduler: str) -> str:
    return f"tp-{case.name}-{scheduler}"


def node_names(case: Case, scheduler: str) -> dict[str, tuple[str, Node]]:
    """Node name → (its domain or UNLABELED, its Node)."""
    named = {f"tp-{case.name}-{scheduler}-{rack}-{i}": (rack, node)
             for rack, nodes in case.racks.items() for i, node in enumerate(nodes)}
    named.update({f"tp-{case.name}-{scheduler}-none-{i}": (UNLABELED, node)
                  for i, node in enumerate(case.unlabeled)})
    return named


def node_manifest(case: Case, scheduler: str, name: str, rack: str, node: Node) -> Manifest:
    labels = {HOSTNAME: name, "type": "kwok", "kubernetes.io/os": "linux"}
    if rack != UNLABELED:
        labels[rack_key(case, scheduler)] = rack
    if node.arena:
        labels[ARENA] = arena(case, scheduler)
    allocatable = {"cpu": f"{node.cpu}m", "memory": f"{node.memory}Mi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels,
                         "annotations": {"kwok.x-k8s.io/node": "fake",
                                         "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {},
            "status": {"allocatable": allocatable, "capacity": dict(allocatable)}}


def container(cpu: int, memory: int) -> Manifest:
    return {"name": "main", "image": manifests.IMAGE,
            "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}}}


def filler(name: str, node: str, cpu: int, memory: int) -> Manifest:
    """A pod of no group bound to `node` by name."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [container(cpu, memory)]}}


def member(case: Case, scheduler: str, index: int, node: str | None = None) -> Manifest:
    """Pod `gang-<index>` of the gang, of `scheduler`; bound to `node` by name if given."""
    spec: Manifest = {"schedulerName": SCHEDULERS[scheduler],
                      "terminationGracePeriodSeconds": 0,
                      "schedulingGroup": {"podGroupName": GANG},
                      "nodeSelector": {ARENA: arena(case, scheduler)},
                      "containers": [container(case.cpu, case.memory)]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{GANG}-{index}"},
            "spec": spec}


def podgroup(case: Case, scheduler: str) -> Manifest:
    return {"apiVersion": NATIVE, "kind": "PodGroup", "metadata": {"name": GANG},
            "spec": {"schedulingPolicy": {"gang": {"minCount": case.min_count}},
                     "schedulingConstraints": {"topology": [{"key": rack_key(case, scheduler)}]}}}


@pytest.fixture(scope="module")
def placement_plane() -> Iterator[ControlPlane]:
    """kube-scheduler with the workload gates on, the native API served, no nodes."""
    with ControlPlane(nodes=0, kube_scheduler=True, extra_args=list(PLANE_ARGS)) as cp:
        yield cp


@pytest.fixture(scope="module")
def placement_gangsched(placement_plane: ControlPlane,
                        tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangschedRun]:
    """`gangsched run` reading both PodGroup APIs."""
    with serving(placement_plane.kubeconfig, tmp_path_factory.mktemp("gangsched"),
                 *BOTH_GROUP_APIS) as run:
        yield run


def ready_and_untainted(cp: ControlPlane, names: set[str]) -> bool:
    """Every node of `names` Ready (KWOK) with no taint (the node lifecycle controller's
    not-ready taint removed)."""
    items = kube.get_json(cp, "nodes")["items"]
    ready = {node["metadata"]["name"] for node in items
             if not (node.get("spec") or {}).get("taints")
             and any(c.get("type") == "Ready" and c.get("status") == "True"
                     for c in (node.get("status") or {}).get("conditions") or [])}
    return names <= ready


def create_case(cp: ControlPlane, case: Case) -> float:
    """Nodes, namespaces, pods bound by name, the gang's pods and (last) the PodGroups of both
    schedulers; the time the PodGroups were created (time.monotonic)."""
    nodes = [node_manifest(case, scheduler, name, rack, node)
             for scheduler in SCHEDULERS
             for name, (rack, node) in node_names(case, scheduler).items()]
    cp.kubectl("create", "-f", "-", input=_list(nodes))
    wanted = {node["metadata"]["name"] for node in nodes}
    eventually(lambda: ready_and_untainted(cp, wanted), timeout=60, what="nodes Ready")
    pending: dict[str, list[Manifest]] = {}
    for scheduler in SCHEDULERS:
        ns = namespace(case, scheduler)
        cp.kubectl("create", "namespace", ns)
        prebound, index = [], 0
        for name, (_, node) in node_names(case, scheduler).items():
            if node.filler is not None:
                prebound.append(filler(f"filler-{name}", name, *node.filler))
            for _ in range(node.members):
                prebound.append(member(case, scheduler, index, node=name))
                index += 1
        if prebound:
            manifests.create(cp, ns, *prebound)
        pending[scheduler] = [member(case, scheduler, i) for i in range(index, case.pods)]
    eventually(lambda: all(all_running(cp, namespace(case, s)) for s in SCHEDULERS),
               timeout=30, what="the pods bound by name running")
    for scheduler, pods in pending.items():
        manifests.create(cp, namespace(case, scheduler), *pods)
    for scheduler in SCHEDULERS:
        manifests.create(cp, namespace(case, scheduler), podgroup(case, scheduler))
    return time.monotonic()


def all_running(cp: ControlPlane, ns: str) -> bool:
    """Whether every pod of `ns` runs (KWOK runs the pods bound to its nodes)."""
    return all(pod["status"].get("phase") == "Running" for pod in kube.pods(cp, ns))


def _list(items: list[Manifest]) -> str:
    """A v1 List of `items`, as JSON."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def outcome(cp: ControlPlane, case: Case, scheduler: str) -> tuple[str, int]:
    """Where the gang's pods are bound: one domain, several (`a+b`), UNLABELED, or PENDING;
    and how many are bound."""
    racks = {name: rack for name, (rack, _) in node_names(case, scheduler).items()}
    gang = [pod for pod in kube.pods(cp, namespace(case, scheduler))
            if pod["metadata"]["name"].startswith(f"{GANG}-")]
    bound = kube.bound(gang)
    where = sorted({racks.get(pod["spec"]["nodeName"], "elsewhere") for pod in bound})
    return ("+".join(where) if where else PENDING), len(bound)


def rejections(cp: ControlPlane, case: Case, scheduler: str) -> list[str]:
    """What says the gang waits: the PodGroup's `PodGroupScheduled=False` message, the pods'
    `PodScheduled=False` messages, FailedScheduling events."""
    ns = namespace(case, scheduler)
    group = kube.get_json(cp, "podgroups.scheduling.k8s.io", GANG, "-n", ns)
    said = [c.get("message", "") for c in (group.get("status") or {}).get("conditions") or []
            if c.get("type") == "PodGroupScheduled" and c.get("status") == "False"]
    for pod in kube.pods(cp, ns):
        said += [c.get("message", "") for c in (pod.get("status") or {}).get("conditions") or []
                 if c.get("type") == "PodScheduled" and c.get("status") == "False"]
    said += [e.get("message", "") for e in kube.events(cp, ns, "FailedScheduling")]
    return said


def group_condition(cp: ControlPlane, case: Case, scheduler: str) -> dict[str, Any] | None:
    group = kube.get_json(cp, "podgroups.scheduling.k8s.io", GANG, "-n",
                          namespace(case, scheduler))
    return next((c for c in (group.get("status") or {}).get("conditions") or []
                 if c.get("type") == "PodGroupScheduled"), None)


def settled(cp: ControlPlane, case: Case, scheduler: str) -> bool:
    """Whether the scheduler acted on the gang: as many of its pods bound as the model binds;
    for a pending case, the PodGroup's `PodGroupScheduled` condition False (both write it once
    they tried the gang), or anything bound (which the test rejects)."""
    if case.expected != PENDING:
        return outcome(cp, case, scheduler)[1] >= bound_count(case)
    condition = group_condition(cp, case, scheduler)
    tried = condition is not None and condition.get("status") == "False"
    return tried or outcome(cp, case, scheduler)[1] > 0


def settling_times(cp: ControlPlane, case: Case, start: float) -> dict[str, float | None]:
    """Seconds from the PodGroups' creation (`start`) until each scheduler `settled` the
    case, both watched at once; None: not within BOUND_TIMEOUT."""
    found: dict[str, float] = {}
    deadline = start + BOUND_TIMEOUT
    while len(found) < len(SCHEDULERS) and time.monotonic() < deadline:
        for scheduler in SCHEDULERS:
            if scheduler not in found and settled(cp, case, scheduler):
                found[scheduler] = time.monotonic() - start
        time.sleep(0.25)
    return {scheduler: found.get(scheduler) for scheduler in SCHEDULERS}


def held(cp: ControlPlane, case: Case, scheduler: str) -> tuple[str, int]:
    """The scheduler's outcome, once it held: for a pending case nothing bound for PENDING_FOR
    seconds, else no change of how many are bound for 2 s."""
    first = outcome(cp, case, scheduler)
    consistently(lambda: outcome(cp, case, scheduler) == first,
                 duration=PENDING_FOR if case.expected == PENDING else 2.0,
                 what=f"{scheduler}: {first} held")
    return first


@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_gangsched_places_the_gang_in_the_domain_kube_scheduler_picks(
        placement_plane: ControlPlane, placement_gangsched: GangschedRun, case: Case) -> None:
    start = create_case(placement_plane, case)
    try:
        for scheduler in SCHEDULERS:  # the gates on: the API server kept the constraint
            stored = kube.get_json(placement_plane, "podgroups.scheduling.k8s.io", GANG, "-n",
                                   namespace(case, scheduler))
            assert stored["spec"].get("schedulingConstraints") == {
                "topology": [{"key": rack_key(case, scheduler)}]}
        times = settling_times(placement_plane, case, start)
        theirs = held(placement_plane, case, "kube")
        condition = group_condition(placement_plane, case, "kube")
        print(f"{case.name}: kube-scheduler {theirs} after {times['kube']}s; {condition}")
        assert times["kube"] is not None, f"kube-scheduler did not act: {theirs}"
        assert theirs == (case.expected, bound_count(case))
        assert condition is not None
        if case.expected == PENDING:
            assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
            assert condition["message"].startswith(f"0/2 {PLACEMENTS_UNAVAILABLE}"), condition
        elif bound_count(case) == case.pods:
            assert (condition["status"], condition["reason"]) == ("True", "Scheduled")
        else:
            # minCount reached, a pod beyond it left: kube-scheduler writes True, then its cycle
            # for that pod writes False unless its PodGroup lister already shows the True
            # (`updatePodGroupCondition` reads the informer cache): either, by its timing
            assert (condition["status"], condition["reason"]) in {
                ("True", "Scheduled"), ("False", "Unschedulable")}, condition
        # kube-scheduler's own: gangsched tells no status of a group none of whose pods is
        # its own (it overwrote this one with "gang <ns>/<name>: N members bound ...")
        assert not condition.get("message", "").startswith("gang "), condition
        ours = held(placement_plane, case, "ours")
        print(f"{case.name}: gangsched {ours} after {times['ours']}s; "
              f"{group_condition(placement_plane, case, 'ours')}")
        assert times["ours"] is not None, f"gangsched did not act: {ours}"
        assert ours == theirs
        if case.expected == PENDING:
            said = rejections(placement_plane, case, "ours")
            assert any(PLACEMENTS_UNAVAILABLE in message for message in said), said
    finally:
        for scheduler in SCHEDULERS:
            placement_plane.kubectl("delete", "namespace", namespace(case, scheduler),
                                    "--wait=false")
