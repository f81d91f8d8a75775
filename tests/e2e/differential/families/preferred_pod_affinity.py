"""Preferred inter-pod affinity (InterPodAffinity's score): weighted pod affinity and
anti-affinity terms shaped as the required ones (`pod_affinity.term`), weights 1..100, on
pods offered and on pods bound by name (whose terms score for the pods offered after). The
comparison stays one of feasibility: such pods must be judged as kube-scheduler judges them,
never refused for their preferences."""

from __future__ import annotations

import random

from tests.e2e.differential.families import Base, ClusterPlan, Manifest
from tests.e2e.differential.families.pod_affinity import add_terms, term


class PreferredPodAffinity(Base):
    name = "preferred-pod-affinity"

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        add_terms(rng, pod, "preferredDuringSchedulingIgnoredDuringExecution", lambda: {
            "weight": rng.randint(1, 100), "podAffinityTerm": term(rng, plan)})
