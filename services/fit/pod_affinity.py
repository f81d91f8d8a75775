"""Required inter-pod affinity and anti-affinity: the rules of kube-scheduler's InterPodAffinity.

Layer: fit (pure; shared by the planner and its tests). `Counts` is InterPodAffinity's
pre-filter state for one incoming pod: topology pair (node label key, value) → how many pods on
nodes with that label match; `inter_pod_affinity` is its filter on one node. The planner
evaluates the same rules over every node at once (`planner.core.affinity`); both must agree.
A term's `namespaceSelector` is matched against the labels of a pod's Namespace, from the
`Namespaces` the caller holds (`NamespaceObserved` by name; a namespace not held has no
labels, as kube-scheduler's `GetNamespaceLabelsSnapshot` reads one its lister lacks).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from services.contracts.events import (
    NamespaceObserved,
    NodeSelectorRequirement,
    PodAffinityTerm,
    PodObserved,
)
from services.fit import filters, reasons

Pair = tuple[str, str]
"""A topology pair: a node label key and its value."""
Namespaces = Mapping[str, NamespaceObserved]
"""The Namespaces known, by name (what a `namespaceSelector` reads: their labels)."""


def selector_matches(selector: tuple[NodeSelectorRequirement, ...] | None,
                     labels: Mapping[str, str]) -> bool:
    """A pod label selector: None matches nothing, () everything, else every requirement.

    Source: as `metav1.LabelSelectorAsSelector` (nil: `labels.Nothing()`, empty:
    `labels.Everything()`; In, NotIn, Exists, DoesNotExist as `labels.Requirement`).
    """
    if selector is None:
        return False
    return all(filters.requirement_matches(requirement, labels) for requirement in selector)


def term_matches(term: PodAffinityTerm, pod: PodObserved, namespaces: Namespaces) -> bool:
    """Whether `pod` is in the term's namespaces and matches its label selector.

    Source: as `framework.AffinityTerm.Matches`: the namespaces the term names (resolved by
    the watcher) or its `namespaceSelector` matching the labels of the pod's Namespace.
    """
    return term_matches_labels(term, pod.namespace, pod.labels, namespaces)


def term_matches_labels(term: PodAffinityTerm, namespace: str, labels: Mapping[str, str],
                        namespaces: Namespaces) -> bool:
    """`term_matches` for a pod in `namespace` with `labels` (e.g. its labels before a change)."""
    if not in_namespaces(term, namespace, namespaces):
        return False
    return selector_matches(term.label_selector, labels)


def in_namespaces(term: PodAffinityTerm, namespace: str, namespaces: Namespaces) -> bool:
    """Whether a pod in `namespace` is in the term's namespaces: all, named, or selected by
    the term's `namespaceSelector` from the Namespace's labels (none when not held)."""
    if term.all_namespaces or namespace in term.namespaces:
        return True
    if term.namespace_selector is None:
        return False
    held = namespaces.get(namespace)
    return selector_matches(term.namespace_selector, held.labels if held is not None else {})


def matches_all(terms: tuple[PodAffinityTerm, ...], pod: PodObserved,
                namespaces: Namespaces) -> bool:
    """Whether `pod` matches every term (False for no terms), as `podMatchesAllAffinityTerms`."""
    return matches_all_labels(terms, pod.namespace, pod.labels, namespaces)


def matches_all_labels(terms: tuple[PodAffinityTerm, ...], namespace: str,
                       labels: Mapping[str, str], namespaces: Namespaces) -> bool:
    """`matches_all` for a pod in `namespace` with `labels` (e.g. its labels before a change)."""
    return bool(terms) and all(term_matches_labels(term, namespace, labels, namespaces)
                               for term in terms)


def is_involved(pod: PodObserved) -> bool:
    """Whether the pod has required inter-pod terms of its own."""
    return bool(pod.pod_affinity or pod.pod_anti_affinity)


def has_preferred(pod: PodObserved) -> bool:
    """Whether the pod has preferred (weighted) inter-pod terms of its own."""
    return bool(pod.preferred_pod_affinity or pod.preferred_pod_anti_affinity)


def is_scored(pod: PodObserved) -> bool:
    """Whether the pod, once bound, adds to other pods' InterPodAffinity score: it has
    preferred terms or required affinity terms (those count with hardPodAffinityWeight)."""
    return bool(pod.pod_affinity) or has_preferred(pod)


class Counts:
    """InterPodAffinity's pre-filter state for the incoming pod `pod`.

    Shapes: `affinity[pair]` pods matching all of `pod`'s affinity terms, counted once per term
    on the pair of the term's key; `anti[pair]` pods matching each of its anti-affinity terms;
    `existing_anti[pair]` pods whose own anti-affinity terms match `pod`. No entry is zero.
    Source: `preFilterState` (affinityCounts, antiAffinityCounts, existingAntiAffinityCounts).
    """

    def __init__(self, pod: PodObserved, namespaces: Namespaces) -> None:
        self.pod = pod
        self.namespaces = namespaces
        self.affinity: Counter[Pair] = Counter()
        self.anti: Counter[Pair] = Counter()
        self.existing_anti: Counter[Pair] = Counter()

    def copy(self) -> Counts:
        other = Counts(self.pod, self.namespaces)
        other.affinity = self.affinity.copy()
        other.anti = self.anti.copy()
        other.existing_anti = self.existing_anti.copy()
        return other

    def add(self, other: PodObserved, node_labels: Mapping[str, str], sign: int = 1) -> None:
        """Count (`sign` 1) or uncount (-1) pod `other` on a node with `node_labels`."""
        pod, namespaces = self.pod, self.namespaces
        if pod.pod_affinity and matches_all(pod.pod_affinity, other, namespaces):
            for term in pod.pod_affinity:
                _update(self.affinity, node_labels, term.topology_key, sign)
        for term in pod.pod_anti_affinity:
            if term_matches(term, other, namespaces):
                _update(self.anti, node_labels, term.topology_key, sign)
        for term in other.pod_anti_affinity:
            if term_matches(term, pod, namespaces):
                _update(self.existing_anti, node_labels, term.topology_key, sign)

    def pairs(self) -> set[Pair]:
        """Every pair with a count (what makes nodes differ for this pod)."""
        return set(self.affinity) | set(self.anti) | set(self.existing_anti)


def _update(counts: Counter[Pair], node_labels: Mapping[str, str], key: str, sign: int) -> None:
    value = node_labels.get(key)
    if value is None:
        return
    pair = (key, value)
    counts[pair] += sign
    if counts[pair] == 0:
        del counts[pair]


def satisfies_affinity(counts: Counts, node_labels: Mapping[str, str]) -> bool:
    """Every affinity term's key is on the node and some matching pod is in its domain; or no
    pod matches anywhere yet and the pod matches its own terms (the first of a self-affine
    group). Source: `satisfyPodAffinity`."""
    pods_exist = True
    for term in counts.pod.pod_affinity:
        value = node_labels.get(term.topology_key)
        if value is None:
            return False
        if counts.affinity[(term.topology_key, value)] <= 0:
            pods_exist = False
    if pods_exist:
        return True
    return not counts.affinity and matches_all(counts.pod.pod_affinity, counts.pod,
                                               counts.namespaces)


def satisfies_anti_affinity(counts: Counts, node_labels: Mapping[str, str]) -> bool:
    """No pod matching an anti-affinity term is in the node's domain of that term's key (a node
    without the key passes). Source: `satisfyPodAntiAffinity`."""
    for term in counts.pod.pod_anti_affinity:
        value = node_labels.get(term.topology_key)
        if value is not None and counts.anti[(term.topology_key, value)] > 0:
            return False
    return True


def satisfies_existing_anti_affinity(counts: Counts, node_labels: Mapping[str, str]) -> bool:
    """No label of the node is a pair where an existing pod's anti-affinity matches the pod.
    Source: `satisfyExistingPodsAntiAffinity`."""
    return not any(counts.existing_anti[pair] > 0 for pair in node_labels.items())


def inter_pod_affinity(counts: Counts, node_labels: Mapping[str, str]) -> str | None:
    """None when the node passes InterPodAffinity's filter for `counts.pod`, else the reason.

    Source: as InterPodAffinity's Filter: affinity, then anti-affinity, then the existing pods'
    anti-affinity (symmetry), each with its plugin's reason.
    """
    if not satisfies_affinity(counts, node_labels):
        return reasons.POD_AFFINITY_MISMATCH
    if not satisfies_anti_affinity(counts, node_labels):
        return reasons.POD_ANTI_AFFINITY_MISMATCH
    if not satisfies_existing_anti_affinity(counts, node_labels):
        return reasons.EXISTING_ANTI_AFFINITY_MISMATCH
    return None
