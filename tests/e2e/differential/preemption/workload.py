"""The seeded preemption workload: KWOK nodes filled with lower-priority pods, budgets over some
of them, and high-priority preemptors to offer one at a time.

Every node (the differential generator's, without families: 8 cpu, 16Gi) is filled with
fillers of random requests and PriorityClasses (none, low, mid, and the preemptors' own
priority: equal priority pods are never victims), bound by `spec.nodeName` or by the default
scheduler (pinned to the node by a hostname nodeSelector), about half of them labelled for one
of a few PodDisruptionBudgets (`minAvailable` such that some allow a disruption and some do
not). Requests vary in cpu and memory, so either may be what a preemptor lacks. Preemptors
ask for 1 to 6 cpu and 0.5 to 12 GiB (some for more cpu than a node has: nothing helps them),
at a high or top priority, some with `preemptionPolicy: Never`, some at mid or low priority
(they may evict only the few pods below them, often too few); the first four (`FIXED`) cover
every outcome but preemption whatever the seed. All pods have `terminationGracePeriodSeconds:
0`, so KWOK deletes victims at once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.differential.families import HOSTNAME
from tests.e2e.differential.families.requests import IMAGE
from tests.e2e.differential.generator import NAMESPACES, RUN_LABEL, plan_cluster, rng_for

Manifest = dict[str, Any]
NODE_MILLI_CPU = 8000
NODE_MEMORY_MI = 16 * 1024
BUDGET_LABEL = "diff.gangsched.io/budget"
BUDGETS = ("b0", "b1", "b2")
HIGH = 1000
CLASSES: dict[str, tuple[int, str]] = {
    "diff-low": (10, "PreemptLowerPriority"), "diff-mid": (50, "PreemptLowerPriority"),
    "diff-high": (HIGH, "PreemptLowerPriority"), "diff-top": (2000, "PreemptLowerPriority"),
    "diff-never": (HIGH, "Never")}
"""PriorityClass name → (value, preemptionPolicy)."""
FILLER_CLASSES = (None, "diff-low", "diff-low", "diff-mid", "diff-mid", "diff-high")
PREEMPTOR_CLASSES = ("diff-high",) * 6 + ("diff-top", "diff-top", "diff-never", "diff-mid",
                                          "diff-low")
FILLER_MILLI_CPU = (500, 1000, 1000, 1500, 2000, 3000)
PREEMPTOR_MILLI_CPU = (1000, 2000, 3000, 3000, 4000, 5000, 6000, 9000)
FILLER_MEMORY_MI = (512, 1024, 1024, 2048, 4096)
PREEMPTOR_MEMORY_MI = (512, 1024, 2048, 4096, 8192, 12288)
PREFIX = "pre"
FIXED: tuple[tuple[int, int, str | None], ...] = (
    (6000, 1024, None), (6000, 1024, "diff-never"), (9000, 1024, "diff-high"),
    (1000, 512, "diff-high"))
"""The first preemptors, whatever the seed (cpu in millicores, memory in MiB, class): one at
priority 0, with no pod below it and no node with 6 cpu free; one that may not preempt; one
larger than any node; one that fits as it is (the first node keeps 1 cpu free at least). The
rest are random."""


@dataclass
class Workload:
    """The cluster objects (PriorityClasses, budgets), the Node manifests, the fillers (each
    with its node in `spec.nodeName`; `by_scheduler` names those to leave to the default
    scheduler) and the preemptors, in offer order."""

    objects: list[Manifest]
    nodes: list[Manifest]
    fillers: list[Manifest]
    preemptors: list[Manifest]
    by_scheduler: set[str] = field(default_factory=set)


def _pod(name: str, namespace: str, seed: int, milli_cpu: int, memory_mi: int,
         class_name: str | None, labels: dict[str, str]) -> Manifest:
    spec: Manifest = {"terminationGracePeriodSeconds": 0, "containers": [{
        "name": "main", "image": IMAGE,
        "resources": {"requests": {"cpu": f"{milli_cpu}m", "memory": f"{memory_mi}Mi"}}}]}
    if class_name is not None:
        spec["priorityClassName"] = class_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {**labels, RUN_LABEL: str(seed)}},
            "spec": spec}


def _classes() -> list[Manifest]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": name}, "value": value, "preemptionPolicy": policy}
            for name, (value, policy) in sorted(CLASSES.items())]


def _fill(seed: int, node: str, rng: random.Random, first_node: str) -> list[Manifest]:
    """Fillers for `node` up to its cpu or memory (the first node and a fifth of the others
    keep 1 or 2 cpu free)."""
    fillers: list[Manifest] = []
    keeps_room = rng.random() < 0.2 or node == first_node
    room = NODE_MILLI_CPU - (rng.choice((1000, 2000)) if keeps_room else 0)
    memory = NODE_MEMORY_MI
    while room >= min(FILLER_MILLI_CPU) and memory >= min(FILLER_MEMORY_MI):
        milli = rng.choice([size for size in FILLER_MILLI_CPU if size <= room])
        mebi = rng.choice([size for size in FILLER_MEMORY_MI if size <= memory])
        labels = {"app": rng.choice(("web", "db", "batch"))}
        if rng.random() < 0.5:
            labels[BUDGET_LABEL] = rng.choice(BUDGETS)
        pod = _pod(f"{PREFIX}-{node[-2:]}-{len(fillers)}", rng.choice(NAMESPACES), seed, milli,
                   mebi, rng.choice(FILLER_CLASSES), labels)
        pod["spec"]["nodeName"] = node
        fillers.append(pod)
        room -= milli
        memory -= mebi
    return fillers


def _budgets(rng: random.Random, fillers: list[Manifest]) -> list[Manifest]:
    """A budget per (namespace, budget label) that selects some filler: `minAvailable` its
    matching pods less 0, 1 or 2 (disruptions allowed: none, one, two)."""
    matching: dict[tuple[str, str], int] = {}
    for pod in fillers:
        label = pod["metadata"]["labels"].get(BUDGET_LABEL)
        if label is not None:
            key = (pod["metadata"]["namespace"], label)
            matching[key] = matching.get(key, 0) + 1
    return [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": label, "namespace": namespace},
             "spec": {"minAvailable": max(0, count - rng.choice((0, 0, 1, 2))),
                      "selector": {"matchLabels": {BUDGET_LABEL: label}}}}
            for (namespace, label), count in sorted(matching.items())]


def generate(seed: int, nodes: int, preemptors: int) -> Workload:
    """The workload of `seed` (module docstring): `nodes` nodes, `preemptors` preemptors."""
    plan = plan_cluster(seed, nodes, families=[])
    fillers: list[Manifest] = []
    by_scheduler = set()
    for node in plan.names():
        rng = rng_for(seed, "preemption-fill", node)
        for pod in _fill(seed, node, rng, plan.names()[0]):
            if rng.random() < 0.5:
                pod["spec"]["nodeSelector"] = {HOSTNAME: pod["spec"]["nodeName"]}
                by_scheduler.add(pod["metadata"]["name"])
            fillers.append(pod)
    budgets = _budgets(rng_for(seed, "preemption-budgets", ""), fillers)
    offered = []
    for number in range(preemptors):
        rng = rng_for(seed, "preemptor", str(number))
        milli, mebi, class_name = (FIXED[number] if number < len(FIXED) else (
            rng.choice(PREEMPTOR_MILLI_CPU), rng.choice(PREEMPTOR_MEMORY_MI),
            rng.choice(PREEMPTOR_CLASSES)))
        offered.append(_pod(f"{PREFIX}-high-{number:03d}", rng.choice(NAMESPACES), seed, milli,
                            mebi, class_name, {"app": "preemptor"}))
    return Workload([*_classes(), *budgets], plan.nodes, fillers, offered, by_scheduler)
