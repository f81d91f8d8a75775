"""Pod topology spread (PodTopologySpread): one or two constraints on the zone, hostname, rack
or disk-type key (not on every node), DoNotSchedule (a filter) or ScheduleAnyway (a score only:
it must never make gangsched refuse), maxSkew 1-3, some with minDomains, nodeAffinityPolicy and
nodeTaintsPolicy Honor or Ignore and `matchLabelKeys`, selecting pods by `app`/`tier` labels
(often the pod's own app, so it counts itself), or every pod (`{}`), or none (no selector)."""

from __future__ import annotations

import random

from tests.e2e.differential import families
from tests.e2e.differential.families import Base, ClusterPlan, Manifest
from tests.e2e.differential.families.node_selection import DISK

KEYS = (families.ZONE, families.ZONE, families.HOSTNAME, families.HOSTNAME, families.RACK, DISK)
"""Topology keys; some nodes lack DISK (the filter refuses them: missing required label)."""
POLICIES = ("Honor", "Ignore")


class TopologySpread(Base):
    name = "topology-spread"

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        if rng.random() >= 0.35:
            return
        constraints: dict[tuple[str, str], Manifest] = {}  # one per (key, action): validation
        for _ in range(rng.choice([1, 1, 2])):
            constraint = _constraint(rng, pod["metadata"]["labels"]["app"])
            constraints[constraint["topologyKey"], constraint["whenUnsatisfiable"]] = constraint
        pod["spec"]["topologySpreadConstraints"] = list(constraints.values())


def _constraint(rng: random.Random, own_app: str) -> Manifest:
    action = "DoNotSchedule" if rng.random() < 0.65 else "ScheduleAnyway"
    constraint: Manifest = {"maxSkew": rng.choice([1, 1, 2, 3]), "topologyKey": rng.choice(KEYS),
                            "whenUnsatisfiable": action}
    selector = _selector(rng, own_app)
    if selector is not None:
        constraint["labelSelector"] = selector
        if selector and rng.random() < 0.2:  # the API server merges the pod's value in
            constraint["matchLabelKeys"] = [families.TRACK]
    if action == "DoNotSchedule" and rng.random() < 0.45:  # only allowed with DoNotSchedule
        constraint["minDomains"] = rng.randint(2, 8)
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        if rng.random() < 0.4:
            constraint[policy] = rng.choice(POLICIES)
    return constraint


def _selector(rng: random.Random, own_app: str) -> Manifest | None:
    roll = rng.random()
    if roll < 0.04:
        return None  # matches no pod, not even the incoming one
    if roll < 0.08:
        return {}  # counts no pod, but the incoming one matches it
    if roll < 0.55:
        return {"matchLabels": {"app": own_app}}
    if roll < 0.75:
        return {"matchLabels": {"app": rng.choice(families.APP_LABELS)}}
    return families.apps_and_tier(rng)
