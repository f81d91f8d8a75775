"""The seeded workload: KWOK Nodes over zones and racks, then non-gang pods, shaped by families.

Every random choice comes from a `random.Random` seeded by (seed, family, item), so one seed
always gives the same cluster and pods, and a new family leaves the others' choices alone.
Pods are left to the default scheduler (no `schedulerName`) at priority 0, so kube-scheduler
never preempts.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator, Sequence

from tests.e2e.differential.families import (
    APP_LABELS,
    HOSTNAME,
    RACK,
    TIERS,
    TRACK,
    TRACKS,
    ZONE,
    ClusterPlan,
    Family,
    Manifest,
    all_families,
)
from tests.e2e.differential.families.requests import IMAGE

ZONES = ("zone-a", "zone-b", "zone-c")
RACKS_PER_ZONE = 2
NAMESPACES = ("diff-a", "diff-b", "diff-c")
NAMESPACE_LABELS = {"diff-a": {"team": "ml", "env": "prod"},
                    "diff-b": {"team": "web", "env": "prod"}, "diff-c": {"team": "ml"}}
"""What a `namespaceSelector` matches (besides the API server's `kubernetes.io/metadata.name`)."""
RUN_LABEL = "diff.gangsched.io/run"


def rng_for(seed: int, family: str, item: str) -> random.Random:
    """The random generator of one family for one item (str seeds hash stably)."""
    return random.Random(f"{seed}/{family}/{item}")


def plan_cluster(seed: int, nodes: int = 24,
                 families: Sequence[Family] | None = None) -> ClusterPlan:
    """The Node manifests (`diff-node-00`...) and the objects the families need."""
    chosen = all_families() if families is None else list(families)
    manifests = []
    for number in range(nodes):
        name = f"diff-node-{number:02d}"
        zone = ZONES[number % len(ZONES)]
        rack = f"{zone}-r{(number // len(ZONES)) % RACKS_PER_ZONE}"
        node: Manifest = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {HOSTNAME: name, ZONE: zone, RACK: rack, "type": "kwok",
                                    "kubernetes.io/os": "linux"},
                         "annotations": {"kwok.x-k8s.io/node": "fake",
                                         "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
        for family in chosen:
            family.shape_node(rng_for(seed, family.name, name), node)
        manifests.append(node)
    plan = ClusterPlan(nodes=manifests, namespaces=NAMESPACES, namespace_labels=NAMESPACE_LABELS)
    for family in chosen:
        plan.objects.extend(family.objects(rng_for(seed, family.name, ""), plan))
    return plan


def generate_pods(seed: int, plan: ClusterPlan, count: int,
                  families: Sequence[Family] | None = None) -> Iterator[Manifest]:
    """`count` Pod manifests `p-0000`..., each shaped by every family in order."""
    chosen = all_families() if families is None else list(families)
    for number in range(count):
        name = f"p-{number:04d}"
        base = rng_for(seed, "base", name)
        pod: Manifest = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": base.choice(NAMESPACES),
                         "labels": {"app": base.choice(APP_LABELS),
                                    "tier": base.choice(TIERS), TRACK: base.choice(TRACKS),
                                    RUN_LABEL: str(seed)}},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": IMAGE}]}}
        for family in chosen:
            family.shape_pod(rng_for(seed, family.name, name), pod, plan)
        yield copy.deepcopy(pod)
