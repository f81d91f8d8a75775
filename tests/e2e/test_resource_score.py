"""NodeResourcesFit and NodeResourcesBalancedAllocation scores: gangsched picks what
kube-scheduler picks.

kube-scheduler's LeastAllocated score (NodeResourcesFit, weight 1 in the default profile) does
not weigh requests as given: it counts each container's MISSING cpu or memory request as 100m
and 200 MiB (`schedutil.DefaultMilliCPURequest`, `DefaultMemoryRequest`, applied by
`resourcehelper.PodRequests` with `NonMissingContainerRequests`), both for the pod it scores
and for every pod already on the node (`NodeInfo.NonZeroRequested`, from
`PodInfo.CalculateResource`). A request of 0 given is kept (the key is present); a limit
without a request is the request (API defaulting, before the scheduler sees the pod); app
containers are summed, sidecars added, each plain init container counted against the max (all
of them defaulted per container); pod-level `spec.resources.requests` replace the containers'
aggregate for cpu and memory (no default for a resource the pod sets); `spec.overhead` is added.
The filter (fit) reads the requests as given: only the score changes.

NodeResourcesBalancedAllocation (weight 1, added to it) reads the requests AS GIVEN
(`useRequested`: `NodeInfo.Requested`, no defaults), over cpu and memory: per resource the
fraction requested / allocatable, at most 1; the balance `int64((1 - |cpu - memory| / 2) *
100)`, with the pod and without it; the score `50 + (50 + with - without) / 2` (Go's integer
division, truncating). It is skipped (adds nothing anywhere) for a pod requesting neither cpu
nor memory as given (`isBestEffortPod`: PreScore returns Skip).

Each case is a few KWOK nodes of their own (a nodeSelector on the case label keeps its pods
there), with pods bound by `spec.nodeName` first (`runner.prebind`), then one pod offered:
judged by gangsched on the cluster as listed (`differential.verdict`) and bound by the real
kube-scheduler (`runner.node_choices`); both must choose the node worked out by hand below.
No taints, affinities, spread constraints or images here: every other score is alike.

Cases 1-6 turn on the non-zero requests. The offered pod of cases 1-5 is BestEffort, so
BalancedAllocation skips it and only NodeResourcesFit tells the nodes apart; case 6 offers a
pod that requests something, and its BalancedAllocation scores are worked out too. Per node
below: "non-zero" cpu/memory held with the offered pod -> LeastAllocated per resource
((allocatable - requested) * 100 // allocatable) -> the node's score (their mean, floored);
"as given": the same with the requests as given, as gangsched scored before it counted the
defaults (`as_given`, the node that picks: always another node than `best`, so the test fails
for a scheduler that weighs requests as given).

Cases 7-10 turn on BalancedAllocation: NodeResourcesFit ties or nearly ties and the balance
decides. Per node: Fit as above, then BalancedAllocation's fractions without and with the
offered pod, the two balances and the score, and the sum. `without_balanced` is the node
NodeResourcesFit alone picks (gangsched breaks equal scores by node name, so a tie goes to the
lower number: always another node than `best`); case 9 also records `uncapped`, the pick were
fractions past 1 not capped, and case 10 `balanced_non_zero`, the pick were BalancedAllocation
to count the defaulted (non-zero) requests. Every `best` is unique by some points (case 9 by 1,
the most the cap can change there, see it), so kube-scheduler's random tie-break among equal
top scores never matters.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field

import pytest

from services.kube.client import KubeClient
from tests.cluster.fixture import ControlPlane
from tests.e2e.differential import oracle, runner, verdict
from tests.e2e.differential.families import HOSTNAME, ClusterPlan, Manifest
from tests.e2e.differential.families.requests import IMAGE

pytestmark = pytest.mark.e2e

CASE = "diff.gangsched.io/case"
ALLOCATABLE = {"cpu": "1", "memory": "1Gi", "pods": "110"}
"""Every node's allocatable unless a case says otherwise: small, so 100m is 10 points of cpu
score and 200 MiB 19.5 of memory score."""
LARGE = {"cpu": "4", "memory": "8Gi", "pods": "110"}
"""The nodes of the BalancedAllocation cases 7-9: 1000m is .25 of cpu, 1Gi .125 of memory."""
OVERHEAD_CLASS = "rs-overhead"
RUNTIME_CLASS: Manifest = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                           "metadata": {"name": OVERHEAD_CLASS}, "handler": "runc",
                           "overhead": {"podFixed": {"cpu": "10m", "memory": "10Mi"}}}


def container(name: str = "main", requests: dict[str, str] | None = None,
              limits: dict[str, str] | None = None, sidecar: bool = False) -> Manifest:
    """A container with the given requests and limits (none: it requests nothing)."""
    resources: Manifest = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    made: Manifest = {"name": name, "image": IMAGE, "resources": resources}
    if sidecar:
        made["restartPolicy"] = "Always"
    return made


def spec(*containers: Manifest, init: tuple[Manifest, ...] = (),
         pod_level: dict[str, str] | None = None, runtime_class: str | None = None) -> Manifest:
    """A pod spec's resource-bearing part: app containers, init containers, pod-level requests,
    a RuntimeClass (its overhead)."""
    made: Manifest = {"containers": list(containers)}
    if init:
        made["initContainers"] = list(init)
    if pod_level is not None:
        made["resources"] = {"requests": pod_level}
    if runtime_class is not None:
        made["runtimeClassName"] = runtime_class
    return made


def requesting(cpu: str, memory: str) -> Manifest:
    """One container requesting `cpu` and `memory`."""
    return spec(container(requests={"cpu": cpu, "memory": memory}))


BEST_EFFORT = spec(container())


@dataclass(frozen=True)
class Case:
    """`nodes` node numbers 0..nodes-1; `bound`: node number → the specs of the pods bound
    there (by name); `offered` the spec of the pod offered to both schedulers; `best` the node
    number both must choose; `allocatable`: node number → its allocatable where not
    ALLOCATABLE. What a scheduler scoring otherwise would pick (None: not worked out; never
    `best`): `as_given` NodeResourcesFit weighing requests as given; `without_balanced`
    NodeResourcesFit alone (no BalancedAllocation); `uncapped` BalancedAllocation with
    fractions past 1 left so; `balanced_non_zero` BalancedAllocation counting the non-zero
    requests (defaults for missing ones)."""

    name: str
    nodes: int
    bound: dict[int, list[Manifest]]
    best: int
    as_given: int | None = None
    without_balanced: int | None = None
    uncapped: int | None = None
    balanced_non_zero: int | None = None
    offered: Manifest = field(default_factory=lambda: copy.deepcopy(BEST_EFFORT))
    allocatable: dict[int, dict[str, str]] = field(default_factory=dict)

    def others(self) -> dict[str, int]:
        """The picks of the wrong ways of scoring worked out for this case."""
        picks = {"as_given": self.as_given, "without_balanced": self.without_balanced,
                 "uncapped": self.uncapped, "balanced_non_zero": self.balanced_non_zero}
        return {way: pick for way, pick in picks.items() if pick is not None}


CASES = [
    # BestEffort pods weigh 100m/200Mi each. With the offered pod (+100m/200Mi), non-zero:
    #   n0 (two BestEffort)  300m/600Mi -> 70, 41 -> 55   as given    0m/0     -> 100
    #   n1 (one BestEffort)  200m/400Mi -> 80, 60 -> 70   as given    0m/0     -> 100
    #   n2 (50m/64Mi)        150m/264Mi -> 85, 74 -> 79   as given   50m/64Mi  -> 94
    #   n3 (150m/300Mi)      250m/500Mi -> 75, 51 -> 63   as given  150m/300Mi -> 77
    # best n2 by 9; as given n0 and n1 tie at 100 (gangsched breaks ties by name: n0)
    Case("besteffort", 4, {0: [BEST_EFFORT, BEST_EFFORT], 1: [BEST_EFFORT],
                           2: [requesting("50m", "64Mi")], 3: [requesting("150m", "300Mi")]},
         best=2, as_given=0),
    # explicit requests of 0 stay 0 (two such pods on n1, with a pod of 10m/16Mi so that
    # requests as given do not tie n0 and n1):
    #   n0 (one BestEffort)          200m/400Mi -> 80, 60 -> 70   as given  0m/0     -> 100
    #   n1 (0/0, 0/0, 10m/16Mi)      110m/216Mi -> 89, 78 -> 83   as given 10m/16Mi  -> 98
    #   n2 (60m/64Mi)                160m/264Mi -> 84, 74 -> 79   as given 60m/64Mi  -> 93
    # best n1 by 4 (were the zeros defaulted, n1 310m/616Mi -> 54 and n2 would win)
    Case("explicit-zero", 3,
         {0: [BEST_EFFORT], 1: [requesting("0", "0"), requesting("0", "0"),
                                requesting("10m", "16Mi")],
          2: [requesting("60m", "64Mi")]}, best=1, as_given=0),
    # a container requesting only memory counts 100m of cpu; limits alone are the requests
    # (cpu 20m memory 64Mi), not defaulted:
    #   n0 (memory 64Mi only)        200m/264Mi -> 80, 74 -> 77   as given  0m/64Mi -> 96
    #   n1 (limits 20m/64Mi)         120m/264Mi -> 88, 74 -> 81   as given 20m/64Mi -> 95
    #   n2 (one BestEffort)          200m/400Mi -> 80, 60 -> 70   as given  0m/0    -> 100
    # best n1 by 4 (were n0's missing cpu not defaulted, n0 100m/264Mi -> 82 would win)
    Case("partial", 3,
         {0: [spec(container(requests={"memory": "64Mi"}))],
          1: [spec(container(limits={"cpu": "20m", "memory": "64Mi"}))], 2: [BEST_EFFORT]},
         best=1, as_given=2),
    # init containers: n0's app container requests cpu 150m only (its memory 200Mi), its init
    # container nothing (100m/200Mi, under the max: nothing added); n1 two BestEffort app
    # containers (200m/400Mi); n2 an app container of 100m/100Mi and a BestEffort sidecar
    # (added: 200m/300Mi):
    #   n0   250m/400Mi -> 75, 60 -> 67   as given 150m/0      -> 92
    #   n1   300m/600Mi -> 70, 41 -> 55   as given   0m/0      -> 100
    #   n2   300m/500Mi -> 70, 51 -> 60   as given 100m/100Mi  -> 90
    # best n0 by 7 (init summed instead of maxed: n0 350m/600Mi -> 53; the sidecar not
    # defaulted: n2 200m/300Mi -> 75 would win)
    Case("init", 3,
         {0: [spec(container(requests={"cpu": "150m"}), init=(container("init"),))],
          1: [spec(container("first"), container("second"))],
          2: [spec(container(requests={"cpu": "100m", "memory": "100Mi"}),
                   init=(container("sidecar", sidecar=True),))]},
         best=0, as_given=1),
    # pod-level requests replace the containers' aggregate: n0 pod level 50m/64Mi over two
    # BestEffort containers (no default); n2 pod level cpu 30m only over one BestEffort
    # container (its memory 200Mi); n3 a BestEffort pod with RuntimeClass overhead 10m/10Mi
    # (defaults plus overhead):
    #   n0   150m/264Mi -> 85, 74 -> 79   as given 50m/64Mi -> 94
    #   n1   200m/400Mi -> 80, 60 -> 70   as given  0m/0    -> 100
    #   n2   130m/400Mi -> 87, 60 -> 73   as given 30m/0    -> 98
    #   n3   210m/410Mi -> 79, 59 -> 69   as given 10m/10Mi -> 99
    # best n0 by 6 (n2's memory not defaulted: 130m/200Mi -> 83 would win; n3's containers
    # not defaulted for its overhead: 110m/210Mi -> 84 would)
    Case("pod-level", 4,
         {0: [spec(container("first"), container("second"),
                   pod_level={"cpu": "50m", "memory": "64Mi"})],
          1: [BEST_EFFORT], 2: [spec(container(), pod_level={"cpu": "30m"})],
          3: [spec(container(), runtime_class=OVERHEAD_CLASS)]},
         best=0, as_given=1),
    # the offered pod requests 10m/10Mi in one container and nothing in another: non-zero
    # 110m/210Mi. Nodes of different sizes (alike, only the rounding would tell the offered
    # pod's own defaults apart): n0 500m/512Mi empty, n1 4/8Gi holding 700m/1600Mi.
    #   n0     110m/210Mi  -> 78, 58 -> 68   as given  10m/10Mi   -> 98, 98 -> 98
    #   n1     810m/1810Mi -> 79, 77 -> 78   as given 710m/1610Mi -> 82, 80 -> 81
    # BalancedAllocation (requests as given; 50 + (50 + with - without) / 2, each
    # int((1 - |cpu fraction - memory fraction| / 2) * 100)): n0 without 100, with
    # 10/500 vs 10/512 -> 99: 74; n1 without .175 vs .1953 -> 98, with .1775 vs .1965 -> 99: 75.
    # best n1: 78 + 75 = 153 against 68 + 74 = 142
    Case("burstable", 2, {1: [requesting("700m", "1600Mi")]}, best=1, as_given=0,
         offered=spec(container(requests={"cpu": "10m", "memory": "10Mi"}),
                      container("second")),
         allocatable={0: {"cpu": "500m", "memory": "512Mi", "pods": "110"},
                      1: {"cpu": "4", "memory": "8Gi", "pods": "110"}}),
    # BalancedAllocation decides. Every bound pod gives cpu and memory (non-zero = as given)
    # unless said. Per node: with the offered pod -> LeastAllocated per resource -> Fit; cpu /
    # memory fractions without the pod -> balance, with it -> balance: 50 + (50 + with -
    # without) / 2; Fit + that. Nodes of LARGE (4 cpu, 8Gi) unless said.
    # A tie in Fit, broken by the balance; offered 1000m/1Gi (.25/.125 of a node):
    #   n0 2000m/1Ki    3000m/1Gi+1Ki -> 25, 87 -> 56   .5/.0 -> 75, .75/.125 -> 68: 71      127
    #   n1 1200m/1536Mi 2200m/2560Mi  -> 45, 68 -> 56   .3/.1875 -> 94, .55/.3125 -> 88: 72  128
    #   n2 500m/3Gi     1500m/4Gi     -> 62, 50 -> 56   .125/.375 -> 87, .375/.5 -> 93: 78  134
    # best n2 by 6 (the pod evens out its memory-heavy load); Fit alone: all 56, n0 by name
    Case("balance-tie", 3,
         {0: [requesting("2", "1Ki")], 1: [requesting("1200m", "1536Mi")],
          2: [requesting("500m", "3Gi")]},
         best=2, without_balanced=0, offered=requesting("1", "1Gi"),
         allocatable=dict.fromkeys(range(3), LARGE)),
    # Fit prefers n1 by 2, the balance overturns it; offered 1000m/1Gi:
    #   n0 200m/2Gi   1200m/3Gi -> 70, 62 -> 66   .05/.25 -> 90,   .3/.375 -> 96: 78  144
    #   n1 500m/1Gi   1500m/2Gi -> 62, 75 -> 68   .125/.125 -> 100, .375/.25 -> 93: 71  139
    # best n0 by 5; Fit alone: n1 (68 against 66)
    Case("balance-overturns", 2,
         {0: [requesting("200m", "2Gi")], 1: [requesting("500m", "1Gi")]},
         best=0, without_balanced=1, offered=requesting("1", "1Gi"),
         allocatable=dict.fromkeys(range(2), LARGE)),
    # A fraction past 1, capped: n0 holds 3000m/1Gi and 2000m/512Mi, bound by name past its
    # 4 cpu; the offered pod requests cpu 0 (given, so 0 for Fit too) and memory 512Mi, and the
    # filter checks only what the pod requests, so n0 stays feasible. Its cpu fraction 1.25 is
    # capped at 1 with and without the pod:
    #   n0 5000m/1536Mi  5000m/2Gi -> 0, 75 -> 37   1/.1875 -> 59, 1/.25 -> 62: 76   113
    #   n1 3500m/2560Mi  3500m/3Gi -> 12, 62 -> 37  .875/.3125 -> 71, .875/.375 -> 75: 77  114
    # best n1 by 1. Uncapped, n0's balances would be 1.25/.1875 -> 46 and 1.25/.25 -> 50: 77,
    # 114, a tie that gangsched breaks to n0; Fit alone: a tie, n0. One point is all the cap
    # can make here: a fraction of a feasible node passes 1 only for a resource the pod does
    # not request, so it is the same with and without the pod and the other fraction stays
    # below it: capped or not, with - without differs by the truncation alone.
    Case("balance-capped", 2,
         {0: [requesting("3", "1Gi"), requesting("2", "512Mi")],
          1: [requesting("3500m", "2560Mi")]},
         best=1, without_balanced=0, uncapped=0, offered=requesting("0", "512Mi"),
         allocatable=dict.fromkeys(range(2), LARGE)),
    # the balance reads requests as given where Fit adds the defaults: n0 holds two BestEffort
    # pods and 100m/160Mi (non-zero 300m/560Mi, as given 100m/160Mi); nodes of ALLOCATABLE (1
    # cpu, 1Gi); offered 300m/64Mi:
    #   n0 (as above)  600m/624Mi -> 40, 39 -> 39   .1/.15625 -> 97, .4/.21875 -> 90: 71  110
    #   n1 350m/512Mi  650m/576Mi -> 35, 43 -> 39   .35/.5 -> 92, .65/.5625 -> 95: 76     115
    # best n1 by 5. Fit alone: a tie, n0. The balance on non-zero requests: n0 .3/.546875 ->
    # 87, .6/.609375 -> 99: 81, 120 (n0). Fit as given: n0 400m/224Mi -> 60, 78 -> 69, 140 (n0).
    Case("balance-as-given", 2,
         {0: [BEST_EFFORT, BEST_EFFORT, requesting("100m", "160Mi")],
          1: [requesting("350m", "512Mi")]},
         best=1, as_given=0, without_balanced=0, balanced_non_zero=0,
         offered=requesting("300m", "64Mi")),
]


def namespace(case: Case) -> str:
    return f"rs-{case.name}"


def node_name(case: Case, number: int) -> str:
    return f"rs-{case.name}-{number}"


def node(case: Case, number: int) -> Manifest:
    name = node_name(case, number)
    allocatable = case.allocatable.get(number, ALLOCATABLE)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {HOSTNAME: name, CASE: case.name, "type": "kwok",
                                    "kubernetes.io/os": "linux"},
                         "annotations": {"kwok.x-k8s.io/node": "fake",
                                         "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {},
            "status": {"allocatable": dict(allocatable), "capacity": dict(allocatable)}}


def pod(case: Case, name: str, resources: Manifest, on: int | None = None) -> Manifest:
    """A pod of the case with the spec part `resources`; bound to node `on` by name if given."""
    made: Manifest = {"terminationGracePeriodSeconds": 0, "nodeSelector": {CASE: case.name},
                      **copy.deepcopy(resources)}
    if on is not None:
        made["nodeName"] = node_name(case, on)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace(case), "labels": {}},
            "spec": made}


Choices = dict[str, tuple[str | None, str | None]]


async def _choices(client: KubeClient) -> Choices:
    """Per case: kube-scheduler's node for the offered pod, and gangsched's."""
    plan = ClusterPlan(nodes=[node(case, n) for case in CASES for n in range(case.nodes)],
                       namespaces=tuple(namespace(case) for case in CASES),
                       objects=[RUNTIME_CLASS])
    slimmer = verdict.Slimmer()
    found: Choices = {}
    async with oracle.mirrors(client) as mirrors:
        await runner.build_cluster(client, mirrors, plan)
        for case in CASES:
            for number, specs in sorted(case.bound.items()):
                for index, resources in enumerate(specs):
                    await runner.prebind(client, mirrors.pods,
                                         pod(case, f"bound-{number}-{index}", resources,
                                             on=number))
        for case in CASES:
            kube, ours, _ = await runner.node_choices(client, mirrors, slimmer,
                                                      pod(case, "offered", case.offered))
            found[case.name] = (kube, ours)
    return found


@pytest.mark.timeout(300)
def test_resources_are_scored_as_kube_scheduler_scores_non_zero_requests(
        scheduler_plane: ControlPlane) -> None:
    for case in CASES:  # each case tells kube-scheduler's scoring from a wrong one
        assert case.others() and case.best not in case.others().values(), case.name
    found = asyncio.run(runner.with_client(scheduler_plane.kubeconfig, _choices))
    print(f"(kube-scheduler, gangsched) per case: {found}")
    assert found == {case.name: (node_name(case, case.best), node_name(case, case.best))
                     for case in CASES}
