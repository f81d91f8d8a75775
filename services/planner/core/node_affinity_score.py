"""Preferred node affinity in scoring: NodeAffinity's score over every node.

Layer: planner core (pure; NumPy). Per node, the sum of the weights (1..100, as the API server
validates them) of the pod's preferred terms (`PodObserved.preferred_affinity`) whose
`preference` matches it, matched as a required term is (`filters.term_matches`: labels for
`matchExpressions`, the node's name for `matchFields`; an empty preference matches nothing, as
kube-scheduler skips it). Scores are normalized over the nodes that pass every filter
(`feasible`) as `DefaultNormalizeScore` does (100 * score // max, integer division; all 0 when
max is 0) and weighted 2, NodeAffinity's weight in kube-scheduler's default profile, against
NodeResourcesFit's 100 per node. The raw sums depend only on the node's labels and name, not
on what is placed, so they are computed once per set of terms and kept on the node index
(vectorised: per requirement, one judgement per distinct label value). Integer arithmetic:
deterministic whatever the order of terms or nodes.
"""

from __future__ import annotations

import numpy as np

from services.contracts.events import NodeSelectorTerm, PodObserved, PreferredSchedulingTerm
from services.fit import filters
from services.planner.core.capacity import (
    PREFERRED_SUMS_KEPT,
    BoolArray,
    FloatArray,
    IntArray,
    NodeIndex,
)

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
        result += term_mask(index, term.preference) * term.weight
    return result


def term_mask(index: NodeIndex, term: NodeSelectorTerm) -> BoolArray:
    """Per row, whether the node matches `term`, as `filters.term_matches` judges one node.

    Cost: each requirement is judged once per distinct value of its label
    (`NodeIndex.label_codes`, plus once for a node without it) or, for `matchFields`, once per
    node it names plus once for every other node, then mapped onto the rows with NumPy: no
    Python pass over every node.
    """
    size = len(index)
    if not term.match_expressions and not term.match_fields:
        return np.zeros(size, dtype=np.bool_)
    mask: BoolArray = np.ones(size, dtype=np.bool_)
    for requirement in term.match_expressions:
        key = requirement.key
        values, codes = index.label_codes(key)
        hits = np.array([filters.requirement_matches(requirement, {key: value})
                         for value in values] + [filters.requirement_matches(requirement, {})],
                        dtype=np.bool_)
        mask &= hits[codes]
    for requirement in term.match_fields:
        # a name longer than every value equals none of them: the verdict of every node unnamed
        unnamed = "/" * (1 + max(map(len, requirement.values), default=0))
        fields: BoolArray = np.full(size, filters.field_matches(requirement, unnamed),
                                    dtype=np.bool_)
        for name in requirement.values:
            row = index.row.get(name)
            if row is not None:
                fields[row] = filters.field_matches(requirement, name)
        mask &= fields
    return mask


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
    """The score for the members of one placement trial, placed one by one: the raw sums of
    each set of terms are made on first need and kept on the index (`preferred_sums`), so the
    trials of a plan (domains, searches, passes) and the plans after share them until a node's
    labels change."""

    def __init__(self, index: NodeIndex) -> None:
        self.index = index

    def scores(self, pod: PodObserved, feasible: BoolArray) -> FloatArray:
        """Per row, `pod`'s NodeAffinity score among the `feasible` rows (see `scores`)."""
        kept = self.index.preferred_sums
        counted = kept.get(pod.preferred_affinity)
        if counted is None:
            if len(kept) >= PREFERRED_SUMS_KEPT:
                kept.clear()
            counted = kept[pod.preferred_affinity] = raw(self.index, pod.preferred_affinity)
        return scores(counted, feasible)
