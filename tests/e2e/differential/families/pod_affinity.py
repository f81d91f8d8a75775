"""Inter-pod affinity (InterPodAffinity): required pod affinity and anti-affinity terms on the
hostname, zone, rack or disk-type key (not on every node), selecting pods by `app`/`tier`
labels, or every pod (`{}`), or none (no selector), in the pod's own namespace,
named namespaces, all (`namespaceSelector: {}`), or those a non-empty `namespaceSelector`
selects by their labels (some with named namespaces besides), some with `matchLabelKeys` or
`mismatchLabelKeys`; existing pods' anti-affinity counts too."""

from __future__ import annotations

import random
from collections.abc import Callable

from tests.e2e.differential.families import (
    APP_LABELS,
    HOSTNAME,
    RACK,
    TRACK,
    ZONE,
    Base,
    ClusterPlan,
    Manifest,
    affinity,
    apps_and_tier,
)
from tests.e2e.differential.families.node_selection import DISK

KEYS = (HOSTNAME, HOSTNAME, ZONE, RACK, DISK)
"""Topology keys; some nodes lack DISK (anti-affinity passes them, affinity does not)."""


class PodAffinity(Base):
    name = "pod-affinity"

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        add_terms(rng, pod, "requiredDuringSchedulingIgnoredDuringExecution",
                  lambda: term(rng, plan))


def add_terms(rng: random.Random, pod: Manifest, field: str,
              make: Callable[[], Manifest]) -> None:
    """To 30% of pods, one or two terms (`make`) under `field` of pod anti-affinity (15%),
    pod affinity (15%) or both (4%)."""
    roll = rng.random()
    if roll >= 0.3:
        return
    kinds = ["podAntiAffinity"] if roll < 0.15 else ["podAffinity"]
    if roll < 0.04:
        kinds = ["podAffinity", "podAntiAffinity"]
    for kind in kinds:
        affinity(pod).setdefault(kind, {})[field] = [
            make() for _ in range(rng.choice([1, 1, 2]))]


def term(rng: random.Random, plan: ClusterPlan) -> Manifest:
    """One pod (anti-)affinity term (module docstring)."""
    roll = rng.random()
    selector: Manifest | None
    if roll < 0.05:
        selector = None  # no labelSelector: matches no pod
    elif roll < 0.1:
        selector = {}  # an empty one: matches every pod
    elif roll < 0.6:
        selector = {"matchLabels": {"app": rng.choice(APP_LABELS)}}
    else:
        selector = apps_and_tier(rng)
    term: Manifest = {"topologyKey": rng.choice(KEYS)}
    if selector is not None:
        term["labelSelector"] = selector
    if selector and rng.random() < 0.15:  # the API server merges the pod's own label values in
        term[rng.choice(["matchLabelKeys", "mismatchLabelKeys"])] = [TRACK]
    roll = rng.random()
    if roll < 0.25:
        term["namespaces"] = rng.sample(plan.namespaces, rng.choice([1, 2]))
    elif roll < 0.4:
        term["namespaceSelector"] = {}
    elif roll < 0.45:  # both: the union, i.e. every namespace
        term["namespaces"] = [rng.choice(plan.namespaces)]
        term["namespaceSelector"] = {}
    elif roll < 0.6:  # the namespaces whose labels match (and, some, a named one besides)
        term["namespaceSelector"] = namespace_selector(rng)
        if rng.random() < 0.3:
            term["namespaces"] = [rng.choice(plan.namespaces)]
    return term


def namespace_selector(rng: random.Random) -> Manifest:
    """A non-empty namespaceSelector over the generator's namespace labels (`team`, `env`) and
    the API server's own `kubernetes.io/metadata.name`, one no empty label set matches: with
    `NotIn` or `DoesNotExist` kube-scheduler 1.36 counts every namespace for the incoming
    pod's terms, where gangsched counts those selected (docs/design-notes.md,
    "InterPodAffinity, the required part"; tests/unit/planner/test_namespace_selector.py)."""
    roll = rng.random()
    if roll < 0.4:
        return {"matchLabels": {"team": rng.choice(["ml", "web", "none"])}}
    if roll < 0.55:
        return {"matchLabels": {"kubernetes.io/metadata.name": rng.choice(["diff-a", "diff-c"])}}
    operator = rng.choice(["In", "Exists"])
    expression: Manifest = {"key": rng.choice(["team", "env"]), "operator": operator}
    if operator == "In":
        expression["values"] = rng.sample(["ml", "web", "prod"], rng.choice([1, 2]))
    return {"matchExpressions": [expression]}
