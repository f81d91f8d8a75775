"""Node selection (NodeAffinity): node labels `disktype` and a numeric generation; pods with a
`nodeSelector`, or required node affinity with matchExpressions (In, NotIn, Exists,
DoesNotExist, Gt, Lt) and matchFields on `metadata.name`, over one or two ORed terms."""

from __future__ import annotations

import random

from tests.e2e.differential.families import (
    HOSTNAME,
    ZONE,
    Base,
    ClusterPlan,
    Manifest,
    affinity,
)

DISK = "diff.gangsched.io/disktype"
GENERATION = "diff.gangsched.io/generation"


class NodeSelection(Base):
    name = "node-selection"

    def shape_node(self, rng: random.Random, node: Manifest) -> None:
        labels = node["metadata"]["labels"]
        if rng.random() < 0.7:
            labels[DISK] = rng.choice(["ssd", "hdd"])
        roll = rng.random()
        if roll < 0.75:
            labels[GENERATION] = str(rng.randint(1, 6))
        elif roll < 0.85:  # Gt and Lt never match a label that is not an integer
            labels[GENERATION] = rng.choice(["v2", "2.5", "07"])

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        roll = rng.random()
        if roll < 0.12:
            key = rng.choice([ZONE, DISK])
            pod["spec"]["nodeSelector"] = {key: rng.choice(plan.label_values(key))}
        elif roll < 0.35:
            terms = [selector_term(rng, plan) for _ in range(rng.choice([1, 1, 2]))]
            affinity(pod)["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def selector_term(rng: random.Random, plan: ClusterPlan) -> Manifest:
    """One node selector term: expressions, fields, or both (also a preferred term's
    `preference`)."""
    term: Manifest = {}
    roll = rng.random()
    if roll < 0.75:
        term["matchExpressions"] = [_expression(rng, plan) for _ in range(rng.choice([1, 2]))]
    if roll >= 0.6:
        names = [*plan.names(), "diff-node-absent"]  # a name no node has: none is kept
        field = {"key": "metadata.name", "operator": rng.choice(["In", "In", "NotIn"]),
                 "values": [rng.choice(names)]}
        term["matchFields"] = [field]
        if rng.random() < 0.25:  # two names ANDed: a conflict when both are In
            term["matchFields"].append({"key": "metadata.name", "operator": "In",
                                        "values": [rng.choice(names)]})
    return term


def _expression(rng: random.Random, plan: ClusterPlan) -> Manifest:
    kind = rng.choice(["zone", "disk", "generation", "generation", "hostname"])
    if kind == "zone":
        zones = plan.label_values(ZONE)
        return {"key": ZONE, "operator": rng.choice(["In", "NotIn"]),
                "values": rng.sample(zones, rng.choice([1, 2]))}
    if kind == "disk":
        operator = rng.choice(["In", "Exists", "DoesNotExist"])
        values = ["ssd"] if operator == "In" else []
        return {"key": DISK, "operator": operator, **({"values": values} if values else {})}
    if kind == "generation":
        return {"key": GENERATION, "operator": rng.choice(["Gt", "Lt"]),
                "values": [str(rng.randint(1, 5))]}
    return {"key": HOSTNAME, "operator": rng.choice(["In", "NotIn"]),
            "values": rng.sample(plan.names(), 3)}
