"""Inter-pod (anti-)affinity in scoring: InterPodAffinity's score over every node.

Layer: planner core (pure; NumPy). Pods counted: every pod bound or reserved on an indexed
node, whichever scheduler bound it (`NodeIndex.pod_users`), and the members of the same trial
placed before. For the incoming pod, every counted pod on a node with labels adds to the
topology pair (key, value) of that node, per term: the incoming pod's preferred affinity terms
it matches (+weight) and preferred anti-affinity terms (-weight); the counted pod's required
affinity terms matching the incoming pod (+`HARD_POD_AFFINITY_WEIGHT`), its preferred affinity
(+weight) and anti-affinity (-weight) terms matching the incoming pod. A node scores the sum
over the pairs it carries; scores are normalized over the nodes that pass every filter
(`feasible`) to 0..100 by (score - min) / (max - min), truncated (all 0 when max == min), and
weighted 2, its weight in kube-scheduler's default profile. Skipped (0 everywhere, nothing
visited) when neither the members nor any counted pod has such terms (`is_active`), and when no
pair got a contribution, as the plugin's PreScore skips. Integer sums, so the order pods are
counted in does not matter; the normalization is correctly rounded IEEE arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from services.contracts.events import PodObserved, WeightedPodAffinityTerm
from services.fit import pod_affinity
from services.fit.pod_affinity import Pair
from services.planner.core.capacity import BoolArray, FloatArray, NodeIndex

WEIGHT = 2
"""InterPodAffinity's score weight in kube-scheduler's default profile."""
HARD_POD_AFFINITY_WEIGHT = 1
"""`hardPodAffinityWeight`, InterPodAffinityArgs' default."""
MAX_NODE_SCORE = 100

Topology = dict[Pair, int]
"""InterPodAffinity's PreScore state (`topologyScore`): topology pair → summed weight."""


def is_active(index: NodeIndex, members: list[PodObserved]) -> bool:
    """Whether the score can differ between rows for any of `members`: some member has
    preferred terms or required affinity (then it adds to the members placed after it), or
    some counted pod has (`NodeIndex.score_users`)."""
    return bool(index.score_users) or any(pod_affinity.is_scored(pod) for pod in members)


def key(pod: PodObserved) -> tuple[object, ...]:
    """What the score reads of a pod as the incoming one."""
    return (pod.namespace, tuple(sorted(pod.labels.items())), pod.preferred_pod_affinity,
            pod.preferred_pod_anti_affinity)


def add(topology: Topology, pod: PodObserved, other: PodObserved,
        node_labels: Mapping[str, str], namespaces: pod_affinity.Namespaces) -> None:
    """Count pod `other`, on a node with `node_labels`, in `pod`'s `topology` (`namespaces`:
    what a term's `namespaceSelector` reads).

    Source: as InterPodAffinity's `processExistingPod` (a node without labels adds nothing;
    a term adds only when the node carries its topology key).
    """
    if not node_labels:
        return
    _terms(topology, pod.preferred_pod_affinity, other, node_labels, 1, namespaces)
    _terms(topology, pod.preferred_pod_anti_affinity, other, node_labels, -1, namespaces)
    for term in other.pod_affinity:
        if pod_affinity.term_matches(term, pod, namespaces):
            _add(topology, node_labels, term.topology_key, HARD_POD_AFFINITY_WEIGHT)
    _terms(topology, other.preferred_pod_affinity, pod, node_labels, 1, namespaces)
    _terms(topology, other.preferred_pod_anti_affinity, pod, node_labels, -1, namespaces)


def _terms(topology: Topology, terms: tuple[WeightedPodAffinityTerm, ...], pod: PodObserved,
           node_labels: Mapping[str, str], sign: int, namespaces: pod_affinity.Namespaces,
           ) -> None:
    for weighted in terms:
        if pod_affinity.term_matches(weighted.term, pod, namespaces):
            _add(topology, node_labels, weighted.term.topology_key, sign * weighted.weight)


def _add(topology: Topology, node_labels: Mapping[str, str], label: str, amount: int) -> None:
    value = node_labels.get(label)
    if value is not None:
        pair = (label, value)
        topology[pair] = topology.get(pair, 0) + amount


def topology(index: NodeIndex, pod: PodObserved) -> Topology:
    """`pod`'s topology scores over the pods on the index (InterPodAffinity's PreScore).

    Visited: the counted pods with terms of their own (`score_users`) and, when `pod` has
    preferred terms, those `index.lookup` names as candidates for them (the others cannot
    match them).
    """
    result: Topology = {}
    users = index.pod_users
    visited: set[str] = set(index.score_users)
    if pod_affinity.has_preferred(pod):
        wanted = index.lookup.matching(
            weighted.term for weighted in (*pod.preferred_pod_affinity,
                                           *pod.preferred_pod_anti_affinity))
        visited = set(users) if wanted is None else visited | wanted
    for uid in visited:
        row, other, _ = users[uid]
        if other.uid != pod.uid:
            add(result, pod, other, index.nodes[row].labels, index.namespaces)
    return result


def scores(index: NodeIndex, counted: Topology, feasible: BoolArray) -> FloatArray:
    """The weighted, normalized score of every row (0 where not `feasible`).

    Shapes: one entry per row; whole numbers 0..`WEIGHT * MAX_NODE_SCORE`.
    Source: as InterPodAffinity's Score (the sum of the pairs the node carries) and
    NormalizeScore (`int64(100 * (score - min) / (max - min))` over the filtered nodes).
    """
    result: FloatArray = np.zeros(len(feasible), dtype=np.float64)
    if not counted or not feasible.any():
        return result
    raw = np.zeros(len(feasible), dtype=np.int64)
    for (label, value), amount in counted.items():
        rows = index.domain_rows(label, value)
        if rows is not None and amount:
            raw[rows] += amount
    low, high = int(raw[feasible].min()), int(raw[feasible].max())
    if high == low:
        return result
    normalized = np.trunc(float(MAX_NODE_SCORE) * ((raw - low).astype(np.float64)
                                                   / float(high - low)))
    result[feasible] = WEIGHT * normalized[feasible]
    return result


class Scorer:
    """The score for the members of one placement trial, placed one by one.

    Topology scores are made per `key` on first need from the index (which holds the members
    the trial placed so far) and kept current by `placed` for every member placed after.
    """

    def __init__(self, index: NodeIndex) -> None:
        self.index = index
        self._counted: dict[tuple[object, ...], tuple[PodObserved, Topology]] = {}

    def scores(self, pod: PodObserved, feasible: BoolArray) -> FloatArray:
        """Per row, `pod`'s InterPodAffinity score now among the `feasible` rows."""
        entry = self._counted.get(key(pod))
        if entry is None:
            entry = self._counted[key(pod)] = (pod, topology(self.index, pod))
        return scores(self.index, entry[1], feasible)

    def placed(self, pod: PodObserved, row: int) -> None:
        """`pod` was just placed on `row` (and recorded on the index)."""
        labels = self.index.nodes[row].labels
        for incoming, counted in self._counted.values():
            add(counted, incoming, pod, labels, self.index.namespaces)
