"""Which counted pods can matter to an incoming pod's inter-pod (anti-)affinity: an inverted
index by label, so InterPodAffinity's pre-filter counts need not visit every pod.

Layer: planner core (pure). `NodeIndex.set_pod` keeps it in step with `pod_users`. A term's
*anchors* are the label pairs of its most selective `In` requirement: a pod matches the term
only if it carries one of them, so the pods under a term's anchors are a superset of those it
matches (`services.fit.pod_affinity.term_matches` still decides). A term with no `In`
requirement has no anchors and makes the lookup give up (the caller visits every pod); a term
whose selector is absent matches no pod and needs none. Counting over the candidates gives the
same counts as over every pod: the others cannot match.
"""

from __future__ import annotations

from collections.abc import Iterable

from services.contracts.events import NodeSelectorRequirement, PodAffinityTerm, PodObserved

Pair = tuple[str, str]
"""A label: key and value."""
Selector = tuple[NodeSelectorRequirement, ...] | None
"""A pod label selector as the events carry it (None: matches no pod; (): every pod)."""


def anchors(term: PodAffinityTerm) -> tuple[Pair, ...] | None:
    """The label pairs one of which a pod matching `term` must carry (`selector_anchors`)."""
    return selector_anchors(term.label_selector)


def selector_anchors(selector: Selector) -> tuple[Pair, ...] | None:
    """The label pairs one of which a pod matching `selector` must carry; None when the
    selector constrains no label to a set of values (empty, or only NotIn/Exists/...)."""
    if selector is None:
        return ()  # matches no pod
    ins = [requirement for requirement in selector if requirement.operator == "In"]
    if not ins:
        return None
    best = min(ins, key=lambda requirement: (len(requirement.values), requirement.key))
    return tuple((best.key, value) for value in best.values)


class PodLookup:
    """Counted pods by label, and pods with anti-affinity terms by their terms' anchors.

    Shapes: `by_label[(key, value)]` the uids of counted pods carrying that label;
    `anti_by_anchor[pair]` the uids of counted pods one of whose anti-affinity terms is anchored
    on `pair`; `anti_unanchored` those with a term without anchors.
    """

    def __init__(self) -> None:
        self.by_label: dict[Pair, set[str]] = {}
        self.anti_by_anchor: dict[Pair, set[str]] = {}
        self.anti_unanchored: set[str] = set()

    def add(self, uid: str, pod: PodObserved) -> None:
        """Index a counted pod."""
        for pair in pod.labels.items():
            self.by_label.setdefault(pair, set()).add(uid)
        for term in pod.pod_anti_affinity:
            pairs = anchors(term)
            if pairs is None:
                self.anti_unanchored.add(uid)
            for pair in pairs or ():
                self.anti_by_anchor.setdefault(pair, set()).add(uid)

    def remove(self, uid: str, pod: PodObserved) -> None:
        """Forget a counted pod (`pod`: the object it was indexed with)."""
        for pair in pod.labels.items():
            _discard(self.by_label, pair, uid)
        for term in pod.pod_anti_affinity:
            for pair in anchors(term) or ():
                _discard(self.anti_by_anchor, pair, uid)
        self.anti_unanchored.discard(uid)

    def matching(self, terms: Iterable[PodAffinityTerm]) -> set[str] | None:
        """Uids of every counted pod that may match one of `terms`; None: any pod may."""
        return self.selected(term.label_selector for term in terms)

    def selected(self, selectors: Iterable[Selector]) -> set[str] | None:
        """Uids of every counted pod that may match one of `selectors`; None: any pod may."""
        found: set[str] = set()
        for selector in selectors:
            pairs = selector_anchors(selector)
            if pairs is None:
                return None
            for pair in pairs:
                found |= self.by_label.get(pair, set())
        return found

    def anti_matching(self, pod: PodObserved) -> set[str]:
        """Uids of every counted pod whose anti-affinity terms may match `pod`."""
        found = set(self.anti_unanchored)
        for pair in pod.labels.items():
            found |= self.anti_by_anchor.get(pair, set())
        return found


def _discard(table: dict[Pair, set[str]], pair: Pair, uid: str) -> None:
    uids = table.get(pair)
    if uids is not None:
        uids.discard(uid)
        if not uids:
            del table[pair]
