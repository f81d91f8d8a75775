"""Preferred node affinity (NodeAffinity's score): one to three weighted terms (weights
1..100) whose `preference` is shaped as a required term (`node_selection.selector_term`:
matchExpressions with every operator, matchFields on `metadata.name`). The comparison stays
one of feasibility: such pods must be judged as kube-scheduler judges them, never refused for
their preferences (which node wins is tests/e2e/test_node_affinity_score.py's)."""

from __future__ import annotations

import random

from tests.e2e.differential.families import Base, ClusterPlan, Manifest, affinity
from tests.e2e.differential.families.node_selection import selector_term


class PreferredNodeAffinity(Base):
    name = "preferred-node-affinity"

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        if rng.random() < 0.25:
            terms = [{"weight": rng.randint(1, 100), "preference": selector_term(rng, plan)}
                     for _ in range(rng.choice([1, 2, 3]))]
            node_affinity = affinity(pod).setdefault("nodeAffinity", {})
            node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = terms
