"""ImageLocality's score: gangsched picks the node kube-scheduler picks for images on nodes.

kube-scheduler's ImageLocality (weight 1 in the default profile, no NormalizeScore) reads the
nodes' `status.images`. Its cache keeps, per image NAME (each of an entry's `names`), the size
the first node listing it gave and the set of nodes listing it (`addNodeImageStates`). For a
pod it sums, over its init containers, app containers and image volumes (`volumes[].image.
reference`), each image the node has under the normalized name (`normalizedImageName`:
":latest" appended when the last ":" is not after the last "/", so a registry port is no tag)
scaled by its spread: `int64(float64(size) * float64(NumNodes) / float64(totalNodes))`, where
`totalNodes` counts EVERY node of the scheduler's snapshot (here: every node of every case,
the holder too). The score is `100 * (sum - 23 MiB) / (maxThreshold - 23 MiB)` (Go's int64
division) with the sum clamped to [23 MiB, maxThreshold], `maxThreshold = 1000 MiB *
(len(initContainers) + len(containers))`: image volumes are summed but not counted there.

Each case is a few KWOK nodes of their own, all of 4 cpu / 8Gi, (a nodeSelector on the case
label keeps the offered pod there) in its own namespace; every offered pod requests 500m /
512Mi in all (split evenly over its app containers, each init container as one of them), so
NodeResourcesFit and BalancedAllocation tie on the nodes of a case except in `threshold`, the
one case with a pod bound beforehand. Nothing else scores differently (no taints, affinities,
spread constraints, claims, owners). One pod per case is offered: judged by gangsched on the
cluster as listed (`differential.verdict`) and bound by the real kube-scheduler
(`runner.node_choices`); both must choose `best`. gangsched is also asked on the same cluster
with every node's `status.images` removed: it must then pick `without_images`, the node the
other scores alone pick (gangsched breaks equal scores by node name: node 0 where they tie),
which differs from `best` in every case but `threshold`, where the image must NOT decide.

totalNodes is 16 (`TOTAL_NODES`, checked against the plan and against the nodes the API
server lists), a power of two, so the spreads below are exact in float64. Sizes in MiB; the
images are large because a node's share of an image on one node is a sixteenth of it. Each
case's `wrong` names the pick of a wrong way of scoring (none of them `best`).

KWOK keeps `status.images` given at node creation: its node stages patch the status with a
strategic merge patch of conditions, addresses, allocatable, capacity, nodeInfo and phase
only (`node-initialize`, `node-heartbeat-with-lease`). The test checks it: the images as
created on every node once Ready, and again after the last offer.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from services.kube.client import KubeClient
from tests.cluster.fixture import ControlPlane
from tests.e2e.differential import oracle, runner, verdict
from tests.e2e.differential.families import HOSTNAME, ClusterPlan, Manifest
from tests.e2e.differential.oracle import Mirrors

pytestmark = pytest.mark.e2e

CASE = "diff.gangsched.io/case"
MIB = 1024 * 1024
MIN_THRESHOLD = 23 * MIB
MAX_CONTAINER_THRESHOLD = 1000 * MIB
TOTAL_NODES = 16
ALLOCATABLE = {"cpu": "4", "memory": "8Gi", "pods": "110"}
CPU_MILLIS, MEMORY_MIB = 500, 512
"""What every offered pod requests in all."""
REGISTRY = "registry.example/ml"
PORTED = "registry.example:5000/ml/base"
"""A repository on a registry with a port, no tag: normalized to `PORTED:latest`."""
DIGEST = "sha256:" + "0123456789abcdef" * 4

Image = tuple[tuple[str, ...], int]
"""A node's `status.images` entry: its names, its size in MiB."""


def image(*names: str, mib: int) -> Image:
    return names, mib


@dataclass(frozen=True)
class Case:
    """`images`: node number → its `status.images`; the offered pod's `containers`,
    `init` containers and image `volumes` (image references); `bound`: node number → the
    cpu/memory requests of a pod bound there beforehand. `scores`: ImageLocality per node,
    by hand; `best` the node both schedulers must choose; `without_images` gangsched's pick
    with no node images; `wrong`: way of scoring → the node it would pick."""

    name: str
    nodes: int
    images: dict[int, list[Image]]
    containers: tuple[str, ...]
    scores: tuple[int, ...]
    best: int
    without_images: int
    wrong: dict[str, int]
    init: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()
    bound: dict[int, dict[str, str]] = field(default_factory=dict)


CASES = [
    # One container, trainer:v1 (also listed by digest) on n1 alone, 4096: 4096 * 1/16 = 256
    # -> 100 * (256 - 23) // (1000 - 23) = 23300 // 977 = 23. n0 holds an image the pod does
    # not use (8192: were every image of a node counted, n0 512 -> 50 would win).
    # best n1 by 23; without images a tie, n0.
    Case("single", 2,
         {0: [image(f"{REGISTRY}/other:v1", mib=8192)],
          1: [image(f"{REGISTRY}/trainer:v1", f"{REGISTRY}/trainer@{DIGEST}", mib=4096)]},
         containers=(f"{REGISTRY}/trainer:v1",), scores=(0, 23), best=1, without_images=0,
         wrong={"any_image": 0}),
    # The pod names `registry.example:5000/ml/base`, no tag: ImageLocality looks up
    # `...base:latest`, which n2 has (4096 -> 23). n1 has the repository under another tag and
    # by digest only (4096): no match, 0. best n2 by 23; matched by repository n1 and n2 tie
    # at 23 (n1 by name); a ":" anywhere taken for a tag (no ":latest" appended): no match
    # anywhere, n0.
    Case("normalized", 3,
         {1: [image(f"{PORTED}:v2", f"{PORTED}@{DIGEST}", mib=4096)],
          2: [image(f"{PORTED}:latest", mib=4096)]},
         containers=(PORTED,), scores=(0, 0, 23), best=2, without_images=0,
         wrong={"by_repository": 1, "port_as_tag": 0}),
    # An init container (image I, 24000) and two app containers (A1 8000, on n1 and n2: spread
    # 2/16; A2 17600): three containers, maxThreshold 3000. Scaled: I 1500, A1 1000, A2 1100.
    #   n1 A1 + A2  2100 -> 100 * 2077 // 2977 = 69
    #   n2 I + A1   2500 -> 100 * 2477 // 2977 = 83
    # best n2 by 14. The init container not summed: n1 69, n2 1000 -> 32 (n1). Only app
    # containers counted (maxThreshold 2000): both clamped to 100, n1 by name.
    Case("containers", 3,
         {1: [image(f"{REGISTRY}/app-one:v1", mib=8000),
              image(f"{REGISTRY}/app-two:v1", mib=17600)],
          2: [image(f"{REGISTRY}/init:v1", mib=24000),
              image(f"{REGISTRY}/app-one:v1", mib=8000)]},
         containers=(f"{REGISTRY}/app-one:v1", f"{REGISTRY}/app-two:v1"),
         init=(f"{REGISTRY}/init:v1",), scores=(0, 69, 83), best=2, without_images=0,
         wrong={"init_not_summed": 1, "app_containers_counted": 1}),
    # Two containers (maxThreshold 2000), images X and Y of 3200 each: X on n1 alone, Y on n2
    # and on the holder node (HOLDER, no pod goes there): 2 nodes of 16.
    #   n1 X  3200 * 1/16 = 200 -> 100 * 177 // 1977 = 8
    #   n2 Y  3200 * 2/16 = 400 -> 100 * 377 // 1977 = 19
    # best n2 by 11: the image on more nodes counts more (a node's share of the image spread
    # over the cluster, kube-scheduler's fix of the "node heating" problem: an image on one
    # node alone gives it little). Unscaled: both 3200, clamped to 100, n1 by name; scaled the
    # other way round (fewer nodes, more score): n1; Y's nodes counted among the feasible
    # nodes only (1, as X's): a tie at 8, n1.
    Case("spread", 3,
         {1: [image(f"{REGISTRY}/x:v1", mib=3200)], 2: [image(f"{REGISTRY}/y:v1", mib=3200)]},
         containers=(f"{REGISTRY}/x:v1", f"{REGISTRY}/y:v1"), scores=(0, 8, 19), best=2,
         without_images=0,
         wrong={"unscaled": 1, "fewer_nodes_more": 1, "feasible_holders_only": 1}),
    # The image T (352) on n0 alone: 352 * 1/16 = 22 < 23, clamped: 0 on both nodes. A pod
    # of 40m/16Mi bound on n0 makes resources prefer n1 by 1 (offered 500m/512Mi, 4 cpu, 8Gi):
    #   n0 540m/528Mi -> 86, 93 -> Fit 89; balance .01/.00195 -> 99, .135/.06445 -> 96:
    #      50 + (50 + 96 - 99) // 2 = 73; 162
    #   n1 500m/512Mi -> 87, 93 -> Fit 90; balance 100, .125/.0625 -> 96: 73;            163
    # best n1 by 1 = without images. Unscaled (352 -> 33), without the 23 MiB floor
    # (100 * 22 // 1000 = 2), and with totalNodes the 2 feasible nodes instead of all 16
    # (352 / 2 = 176 -> 15): n0.
    Case("threshold", 2, {0: [image(f"{REGISTRY}/tool:v1", mib=352)]},
         containers=(f"{REGISTRY}/tool:v1",), scores=(0, 0), best=1, without_images=1,
         wrong={"unscaled": 0, "unfloored": 0, "feasible_total": 0},
         bound={0: {"cpu": "40m", "memory": "16Mi"}}),
    # One container (server:v1, on n0, 4096 -> 23) and an image volume (weights:v3, on n1,
    # 8192 -> 512 -> 100 * 489 // 977 = 50); maxThreshold 1000 (volumes are not containers).
    # best n1 by 27; image volumes not summed: n0.
    Case("image-volume", 2,
         {0: [image(f"{REGISTRY}/server:v1", mib=4096)],
          1: [image(f"{REGISTRY}/weights:v3", mib=8192)]},
         containers=(f"{REGISTRY}/server:v1",), volumes=(f"{REGISTRY}/weights:v3",),
         scores=(23, 50), best=1, without_images=0, wrong={"volumes_not_summed": 0}),
]

HOLDER = "il-spread-holder"
"""The node that gives the `spread` case's image Y its second node (case label
`spread-holder`: no offered pod selects it)."""
HOLDER_IMAGES = [image(f"{REGISTRY}/y:v1", mib=3200)]


def namespace(case: Case) -> str:
    return f"il-{case.name}"


def node_name(case: Case, number: int) -> str:
    return f"il-{case.name}-{number}"


def images_status(images: list[Image]) -> list[Manifest]:
    return [{"names": list(names), "sizeBytes": mib * MIB} for names, mib in images]


def node(name: str, case_label: str, images: list[Image]) -> Manifest:
    status: Manifest = {"allocatable": dict(ALLOCATABLE), "capacity": dict(ALLOCATABLE)}
    if images:
        status["images"] = images_status(images)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {HOSTNAME: name, CASE: case_label, "type": "kwok",
                                    "kubernetes.io/os": "linux"},
                         "annotations": {"kwok.x-k8s.io/node": "fake",
                                         "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {},
            "status": status}


def plan() -> ClusterPlan:
    nodes = [node(node_name(case, n), case.name, case.images.get(n, []))
             for case in CASES for n in range(case.nodes)]
    nodes.append(node(HOLDER, "spread-holder", HOLDER_IMAGES))
    return ClusterPlan(nodes=nodes, namespaces=tuple(namespace(case) for case in CASES))


def _container(name: str, image_ref: str, shares: int) -> Manifest:
    return {"name": name, "image": image_ref, "resources": {"requests": {
        "cpu": f"{CPU_MILLIS // shares}m", "memory": f"{MEMORY_MIB // shares}Mi"}}}


def offered(case: Case) -> Manifest:
    """The case's pod: app containers sharing CPU_MILLIS/MEMORY_MIB, each init container
    requesting one share (below the app containers' sum: nothing added), image volumes."""
    shares = len(case.containers)
    spec: Manifest = {
        "terminationGracePeriodSeconds": 0, "nodeSelector": {CASE: case.name},
        "containers": [_container(f"app-{i}", ref, shares)
                       for i, ref in enumerate(case.containers)]}
    if case.init:
        spec["initContainers"] = [_container(f"init-{i}", ref, shares)
                                  for i, ref in enumerate(case.init)]
    if case.volumes:
        spec["volumes"] = [{"name": f"image-{i}", "image": {"reference": ref}}
                           for i, ref in enumerate(case.volumes)]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "offered", "namespace": namespace(case), "labels": {}},
            "spec": spec}


def bound(case: Case, number: int, requests: dict[str, str]) -> Manifest:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"bound-{number}", "namespace": namespace(case), "labels": {}},
            "spec": {"terminationGracePeriodSeconds": 0, "nodeSelector": {CASE: case.name},
                     "nodeName": node_name(case, number),
                     "containers": [{"name": "main", "image": f"{REGISTRY}/filler:v1",
                                     "resources": {"requests": dict(requests)}}]}}


def normalized(name: str) -> str:
    """`normalizedImageName`."""
    return name if name.rfind(":") > name.rfind("/") else f"{name}:latest"


def image_score(case: Case, number: int, nodes: list[Manifest]) -> int:
    """ImageLocality's score of node `number` of `case` for its offered pod, as
    kube-scheduler computes it from the Node manifests `nodes` (the whole cluster)."""
    sizes: dict[str, int] = {}
    holders: dict[str, set[str]] = {}
    for manifest in nodes:
        for entry in manifest["status"].get("images", []):
            for name in entry["names"]:
                assert sizes.setdefault(name, entry["sizeBytes"]) == entry["sizeBytes"], name
                holders.setdefault(name, set()).add(manifest["metadata"]["name"])
    here = node_name(case, number)
    total = 0
    for ref in (*case.init, *case.containers, *case.volumes):
        name = normalized(ref)
        if here in holders.get(name, set()):
            total += int(float(sizes[name]) * (float(len(holders[name])) / float(len(nodes))))
    most = MAX_CONTAINER_THRESHOLD * (len(case.init) + len(case.containers))
    total = min(max(total, MIN_THRESHOLD), most)
    return 100 * (total - MIN_THRESHOLD) // (most - MIN_THRESHOLD)


def test_hand_computed_scores_follow_from_the_plan() -> None:
    """The premises: 16 nodes; the scores by hand are kube-scheduler's formula on the plan;
    where nothing is bound beforehand (resources tie) `best` is the one top score and node 0
    gangsched's pick without images; in `threshold` no node scores; no wrong pick is `best`."""
    nodes = plan().nodes
    assert len(nodes) == TOTAL_NODES
    for case in CASES:
        scores = tuple(image_score(case, n, nodes) for n in range(case.nodes))
        assert scores == case.scores, case.name
        assert case.wrong and case.best not in case.wrong.values(), case.name
        if case.bound:
            assert set(scores) == {0} and case.without_images == case.best, case.name
        else:
            assert sorted(scores)[-2] < scores[case.best], case.name
            assert case.without_images == 0 != case.best, case.name


Picks = tuple[str | None, str | None, str | None]
"""kube-scheduler's node, gangsched's, gangsched's with no node images."""


def _images_by_node(mirrors: Mirrors) -> dict[str, Any]:
    return {n["metadata"]["name"]: n["status"].get("images")
            for n in mirrors.nodes.objects.values()}


def _without_images(snapshot: verdict.Snapshot) -> verdict.Snapshot:
    nodes = copy.deepcopy(snapshot.nodes)
    for manifest in nodes:
        manifest["status"].pop("images", None)
    return verdict.Snapshot(nodes=nodes, bound=snapshot.bound, storage=snapshot.storage,
                            namespaces=snapshot.namespaces)


async def _choices(client: KubeClient) -> tuple[dict[str, Picks], list[str]]:
    """Per case the picks; and what went wrong with the nodes' images, if anything."""
    cluster = plan()
    planned = {n["metadata"]["name"]: n["status"].get("images") for n in cluster.nodes}
    slimmer, bare_slimmer = verdict.Slimmer(), verdict.Slimmer()
    found: dict[str, Picks] = {}
    problems: list[str] = []
    async with oracle.mirrors(client) as mirrors:
        await runner.build_cluster(client, mirrors, cluster)
        if (seen := _images_by_node(mirrors)) != planned:
            problems.append(f"images once Ready: {seen}")
        for case in CASES:
            for number, requests in sorted(case.bound.items()):
                await runner.prebind(client, mirrors.pods, bound(case, number, requests))
        for case in CASES:
            pod = offered(case)
            admitted = await oracle.create(client, pod, dry_run=True)
            bare = verdict.judge(bare_slimmer, _without_images(runner.observed(mirrors)),
                                 admitted)
            kube, ours, _ = await runner.node_choices(client, mirrors, slimmer, pod)
            found[case.name] = (kube, ours, bare.node)
        if (seen := _images_by_node(mirrors)) != planned:
            problems.append(f"images after the offers: {seen}")
    return found, problems


@pytest.mark.timeout(300)
def test_image_locality_picks_the_node_kube_scheduler_picks(
        scheduler_plane: ControlPlane) -> None:
    found, problems = asyncio.run(runner.with_client(scheduler_plane.kubeconfig, _choices))
    print("(kube-scheduler, gangsched, gangsched without node images) per case: "
          f"{found}")
    assert problems == []
    assert {name: picks[2] for name, picks in found.items()} == {
        case.name: node_name(case, case.without_images) for case in CASES}
    assert {name: picks[:2] for name, picks in found.items()} == {
        case.name: (node_name(case, case.best), node_name(case, case.best)) for case in CASES}
