"""Pods bound by `spec.nodeName` (NodeName): created already bound, so no scheduler judges
them; they shape the state both schedulers see (requests, host ports, anti-affinity on nodes
they may over-commit). Only nodes without NoExecute taints take them, so none is evicted."""

from __future__ import annotations

import random

from tests.e2e.differential.families import (
    FINISHED_LABEL,
    PREBOUND_LABEL,
    Base,
    ClusterPlan,
    Manifest,
    calm_nodes,
)


class Prebound(Base):
    """Binds a share of the pods by name; `finishes`: labels them to be marked Succeeded."""

    name = "node-name"
    finishes = False

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        labels = pod["metadata"]["labels"]
        if rng.random() >= 0.04 or PREBOUND_LABEL in labels:
            return
        pod["spec"]["nodeName"] = rng.choice(calm_nodes(plan))
        labels[PREBOUND_LABEL] = "true"
        if self.finishes:
            pod["spec"]["restartPolicy"] = "Never"
            labels[FINISHED_LABEL] = "true"
