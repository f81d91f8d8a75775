"""Preferred node affinity in scoring: NodeAffinity's score over every node.

Layer: planner core (pure; NumPy). Per node, the sum of the weights (1..100, as the API server
validates them) of the pod's preferred terms (`PodObserved.preferred_affinity`) whose
`preference` matches it, matched as a required term is (`filters.term_matches`: labels for
`matchExpressions`, the node's name for `matchFields`; an empty preference matches nothing, as
kube-scheduler skips it). Scores are normalized over the nodes that pass every filter
(`feasible`) as `DefaultNormalizeScore` does (100 * score // max, integer division; all 0 when
max is 0) and weighted 2, NodeAffinity's weight in kube-scheduler's default profile, against
NodeResourcesFit's 100 per node. The raw sums depend only on the node's labels and name, not
on what is placed, so a trial computes them once per set of terms. Integer arithmetic:
deterministic whatever the order of terms or nodes.
"""

from __future__ import annotations

import numpy as np

from services.contracts.events import PodObserved, PreferredSchedulingTerm
from services.fit import filters
from services.planner.core.capacity import BoolArray, FloatArray, IntArray, NodeIndex

WEIGHT = 2
"""NodeAffinity's score weight in kube-scheduler's default profile."""
MAX_NODE_SCORE = 100

Terms = tuple[PreferredSchedulingTerm, ...]


def is_active(members: list[PodObserved]) -> bool:
    """Whether some member has preferred node-affinity terms (else NodeAffinity's PreScore
    skips and every node scores 0)."""
    return any(pod.preferred_affinity for pod in members)


def raw(index: NodeIndex, terms: Terms) -> IntArray:
    """Per row, the sum of the weights of the `terms` whose preference the node matches.

    Shapes: one entry per row; whole numbers 0..100 * len(terms).
    Source: as NodeAffinity's Score (`PreferredSchedulingTerms.Score`).
    """
    result: IntArray = np.zeros(len(index), dtype=np.int64)
    for term in terms:
        matches = [filters.term_matches(term.preference, node.labels, node.name)
                   for node in index.nodes]
        result += np.array(matches, dtype=np.bool_) * term.weight
    return result


def scores(counted: IntArray, feasible: BoolArray) -> FloatArray:
    """The weighted, normalized score of every row (0 where not `feasible`), from the raw sums
    `counted` (`raw`).

    Shapes: one entry per row; whole numbers 0..`WEIGHT * MAX_NODE_SCORE`.
    Source: as NodeAffinity's NormalizeScore (`DefaultNormalizeScore(MaxNodeScore, false)`:
    `MaxNodeScore * score / max` in int64 over the filtered nodes, unchanged (0) when max is 0).
    """
    result: FloatArray = np.zeros(len(feasible), dtype=np.float64)
    if not feasible.any():
        return result
    high = int(counted[feasible].max())
    if high == 0:
        return result
    result[feasible] = WEIGHT * (MAX_NODE_SCORE * counted[feasible] // high)
    return result


class Scorer:
    """The score for the members of one placement trial, placed one by one: raw sums made per
    set of terms on first need (they do not change as members are placed)."""

    def __init__(self, index: NodeIndex) -> None:
        self.index = index
        self._counted: dict[Terms, IntArray] = {}

    def scores(self, pod: PodObserved, feasible: BoolArray) -> FloatArray:
        """Per row, `pod`'s NodeAffinity score among the `feasible` rows (see `scores`)."""
        counted = self._counted.get(pod.preferred_affinity)
        if counted is None:
            counted = self._counted[pod.preferred_affinity] = raw(self.index,
                                                                   pod.preferred_affinity)
        return scores(counted, feasible)
