"""Pod topology spread: the rules of kube-scheduler's PodTopologySpread filter, for one node.

Layer: fit (pure; shared by the planner and its tests). `spreads` resolves a pod's constraints
as the plugin does (`filterTopologySpreadConstraints`); `Counts` is its pre-filter state for one
incoming pod: per constraint, topology value → how many pods there match; `topology_spread`
is its Filter on one node. The planner evaluates the same rules over every node at once
(`planner.core.spread`); both must agree. Only a pod's own constraints count (unlike
InterPodAffinity there is no symmetry: other pods' constraints never reject it). The cluster's
default constraints (`PodTopologySpreadArgs.defaultConstraints`, which need Services and
ReplicaSets) are not applied: see docs/design-notes.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from services.contracts.events import NodeObserved, NodeSelectorRequirement, PodObserved
from services.fit import filters, reasons
from services.fit.pod_affinity import selector_matches

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
NO_MINIMUM = (1 << 31) - 1
"""The global minimum when no domain is eligible and minDomains is below 1 (`math.MaxInt32`,
as the plugin's empty critical paths; validation keeps minDomains >= 1, so never reached)."""

Selector = tuple[NodeSelectorRequirement, ...] | None


class Spread(msgspec.Struct, frozen=True, gc=False):
    """One constraint as the plugin reads it (`topologySpreadConstraint`).

    `selector` with `matchLabelKeys` merged in (the incoming pod's values, `In`); the policies
    as booleans (True: Honor). Units: `max_skew` pods; `min_domains` domains.
    """

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int
    honors_affinity: bool
    honors_taints: bool


def merged_selector(selector: Selector, keys: tuple[str, ...],
                    labels: Mapping[str, str]) -> Selector:
    """`selector` ANDed with `key In (labels[key])` for every key of `keys` the pod has.

    Source: as `mergeLabelSetWithSelector`: a selector matching nothing (None) stays so; an
    empty one becomes just the keys' requirements; keys the pod lacks are skipped.
    """
    extra = tuple(NodeSelectorRequirement(key=key, operator="In", values=(labels[key],))
                  for key in keys if key in labels)
    if selector is None or not extra:
        return selector
    return extra + selector


def spreads(pod: PodObserved, action: str = DO_NOT_SCHEDULE) -> tuple[Spread, ...]:
    """The pod's constraints whose `whenUnsatisfiable` is `action`, in spec order, resolved.

    Source: as `filterTopologySpreadConstraints` with NodeInclusionPolicyInPodTopologySpread
    and MatchLabelKeysInPodTopologySpread on (both default in Kubernetes 1.36).
    """
    return tuple(
        Spread(max_skew=c.max_skew, topology_key=c.topology_key,
               selector=merged_selector(c.label_selector, c.match_label_keys, pod.labels),
               min_domains=c.min_domains, honors_affinity=c.node_affinity_policy == HONOR,
               honors_taints=c.node_taints_policy == HONOR)
        for c in pod.topology_spread if c.when_unsatisfiable == action)


def is_spread(pod: PodObserved) -> bool:
    """Whether the pod has a DoNotSchedule constraint (the filter can reject a node for it)."""
    return any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in pod.topology_spread)


def is_counted(spread: Spread, namespace: str, other: PodObserved) -> bool:
    """Whether pod `other` on an eligible node counts for `spread` of a pod in `namespace`.

    Source: as `countPodsMatchSelector`: same namespace, not terminating, matching the
    selector; an empty selector counts no pod at all.
    """
    return (other.namespace == namespace and not other.is_deleting and bool(spread.selector)
            and selector_matches(spread.selector, other.labels))


def self_match(spread: Spread, pod: PodObserved) -> int:
    """1 when the incoming pod matches its own constraint's selector (an empty one matches),
    else 0: what it would add to the domain it goes to. Source: Filter's `selfMatchNum`."""
    return 1 if selector_matches(spread.selector, pod.labels) else 0


def has_keys(spread_list: tuple[Spread, ...], labels: Mapping[str, str]) -> bool:
    """Whether the node carries the topology key of every constraint.

    Source: `nodeLabelsMatchSpreadConstraints`.
    """
    return all(spread.topology_key in labels for spread in spread_list)


def includes(spread: Spread, pod: PodObserved, node: NodeObserved) -> bool:
    """Whether the node passes the constraint's node inclusion policies for `pod`: with
    nodeAffinityPolicy Honor its nodeSelector and required node affinity, with nodeTaintsPolicy
    Honor no untolerated NoSchedule/NoExecute taint. Source: `matchNodeInclusionPolicies`."""
    if spread.honors_affinity and filters.node_affinity(pod, node) is not None:
        return False
    return not (spread.honors_taints and filters.taint_toleration(pod, node) is not None)


class Counts:
    """PodTopologySpread's pre-filter state for the incoming pod `pod` (DoNotSchedule).

    Shapes: `spreads[i]` the constraints; `domains[i][value]` pods counted in the domain of
    topology value `value`, with an entry (maybe 0) for every eligible domain: a value of a
    node that has every constraint's key and passes constraint `i`'s inclusion policies.
    Source: `preFilterState.TpValueToMatchNum` (`calPreFilterState`, `updateWithPod`).
    """

    def __init__(self, pod: PodObserved, nodes: Iterable[NodeObserved]) -> None:
        self.pod = pod
        self.spreads = spreads(pod)
        self.domains: list[dict[str, int]] = [{} for _ in self.spreads]
        for node in nodes:
            for i, spread in enumerate(self.spreads):
                if self.is_eligible(i, node):
                    self.domains[i].setdefault(node.labels[spread.topology_key], 0)

    def is_eligible(self, i: int, node: NodeObserved) -> bool:
        """Whether pods on `node` count for constraint `i` (its domain is one of the set)."""
        return has_keys(self.spreads, node.labels) and includes(self.spreads[i], self.pod, node)

    def add(self, other: PodObserved, node: NodeObserved, sign: int = 1) -> None:
        """Count (`sign` 1) or uncount (-1) pod `other` on `node` (an indexed node)."""
        for i, spread in enumerate(self.spreads):
            if self.is_eligible(i, node) and is_counted(spread, self.pod.namespace, other):
                value = node.labels[spread.topology_key]
                self.domains[i][value] = self.domains[i].get(value, 0) + sign

    def min_match(self, i: int) -> int:
        """The global minimum of constraint `i`: the fewest pods in an eligible domain, or 0
        while there are fewer eligible domains than `minDomains`. Source: `minMatchNum`."""
        counts = self.domains[i]
        if len(counts) < self.spreads[i].min_domains:
            return 0
        return min(counts.values(), default=NO_MINIMUM)


def topology_spread(counts: Counts, node_labels: Mapping[str, str]) -> str | None:
    """None when the node passes PodTopologySpread's filter for `counts.pod`, else the reason.

    Source: as Filter: constraints in order; a node without the constraint's key is refused
    (missing required label); else the skew, pods in the node's domain plus the pod itself if
    it matches, minus the global minimum, must not exceed `maxSkew`.
    """
    for i, spread in enumerate(counts.spreads):
        value = node_labels.get(spread.topology_key)
        if value is None:
            return reasons.SPREAD_MISSING_LABEL
        skew = (counts.domains[i].get(value, 0) + self_match(spread, counts.pod)
                - counts.min_match(i))
        if skew > spread.max_skew:
            return reasons.SPREAD_CONSTRAINTS_MISMATCH
    return None
