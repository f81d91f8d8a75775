"""Finished pods: bound by name like `node_name`'s, then marked Succeeded by the run. Neither
scheduler may count them any more (kube-scheduler's pod informer drops terminal pods): not
their requests, host ports, or inter-pod anti-affinity."""

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


class Finished(Base):
    name = "finished"

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        if rng.random() >= 0.04 or PREBOUND_LABEL in pod["metadata"]["labels"]:
            return
        pod["spec"]["nodeName"] = rng.choice(calm_nodes(plan))
        pod["spec"]["restartPolicy"] = "Never"
        pod["metadata"]["labels"][PREBOUND_LABEL] = "true"
        pod["metadata"]["labels"][FINISHED_LABEL] = "true"
