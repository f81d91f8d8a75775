"""Pods bound by `spec.nodeName` (NodeName): created already bound, so no scheduler judges
them; they shape the state both schedulers see (requests, host ports, anti-affinity on nodes
they may over-commit). Only nodes without NoExecute taints take them, so none is evicted."""

from __future__ import annotations

import random

from tests.e2e.differential.families import (
    PREBOUND_LABEL,
    Base,
    ClusterPlan,
    Manifest,
    calm_nodes,
)


class Prebound(Base):
    name = "node-name"

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        if rng.random() >= 0.04:
            return
        pod["spec"]["nodeName"] = rng.choice(calm_nodes(plan))
        pod["metadata"]["labels"][PREBOUND_LABEL] = "true"
