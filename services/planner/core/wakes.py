"""Waking backed-off gangs whose pod affinity or topology spread a counted pod may now let pass.

Layer: planner core (pure). kube-scheduler's InterPodAffinity and PodTopologySpread register
assigned-Pod add and label-update events with a queueing hint (`isSchedulableAfterPodChange`)
that moves an unschedulable pod back to the active queue (through its backoff, at most 10 s)
when the changed pod matches one of its required affinity terms (or, relabelled, no longer
matches an anti-affinity term it matched) or the selector of one of its spread constraints in
its namespace. Here the changes since the last round (`PlannerState.counted_changes`: pods
newly counted on a node, bound or reserved, and counted pods relabelled) are matched at the
start of each round against the pending members of every backed-off gang found unschedulable;
a gang one may matter to is woken (`GroupState.woken_ms`), so that it retries early as when
capacity frees (`backoff.early_retry_at_ms`, 1 s doubling to 10 s). Gangs whose pending members
have no required pod (anti-)affinity and no DoNotSchedule constraint are never looked at: pod
arrivals do not wake them. Coarser than kube-scheduler in one way, bounded by the early-retry
backoff: the node the pod is counted on is not checked for the constraints' topology keys.
A deleted pod frees capacity (`capacity_freed_ms`), which wakes every unschedulable gang
already, as the anti-affinity hint for a deleted pod does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from services.contracts.events import PodAffinityTerm, PodObserved
from services.fit import pod_affinity, topology_spread
from services.fit.topology_spread import Spread
from services.planner.core import backoff
from services.planner.core.config import PlannerConfig
from services.planner.core.indexes import Derived
from services.planner.core.state import PlannerState

Watch = tuple[str, tuple[PodAffinityTerm, ...], tuple[PodAffinityTerm, ...], tuple[Spread, ...]]
"""What a pending member's wake depends on: its namespace, required affinity and anti-affinity
terms, and DoNotSchedule constraints (with `matchLabelKeys` merged, `topology_spread.spreads`)."""
Changed = tuple[PodObserved, Mapping[str, str] | None]
"""A changed counted pod as it is now, and its labels before (None: newly counted)."""


def watch(pod: PodObserved) -> Watch | None:
    """What may make a change to a counted pod matter to pending `pod`, or None when no change
    can (no required pod (anti-)affinity, no DoNotSchedule constraint)."""
    if not (pod.pod_affinity or pod.pod_anti_affinity or topology_spread.is_spread(pod)):
        return None
    return (pod.namespace, pod.pod_affinity, pod.pod_anti_affinity,
            topology_spread.spreads(pod))


def may_matter(wanted: Watch, other: PodObserved, was: Mapping[str, str] | None) -> bool:
    """Whether counted pod `other`, newly counted (`was` None) or relabelled from `was`, may let
    a pending pod with `wanted` pass: it matches a required affinity term; relabelled, it no
    longer matches an anti-affinity term it matched; in the pod's namespace, it matches (or
    matched) a DoNotSchedule constraint's selector. As the queueing hints of InterPodAffinity
    and PodTopologySpread (module docstring)."""
    namespace, affinity, anti_affinity, spreads = wanted
    if any(pod_affinity.term_matches(term, other) for term in affinity):
        return True
    if was is not None and any(
            pod_affinity.term_matches_labels(term, other.namespace, was)
            and not pod_affinity.term_matches(term, other) for term in anti_affinity):
        return True
    if other.namespace != namespace:
        return False
    return any(topology_spread.is_counted(spread, namespace, other)
               or (was is not None and bool(spread.selector)
                   and pod_affinity.selector_matches(spread.selector, was))
               for spread in spreads)


def wake(state: PlannerState, current: Derived, config: PlannerConfig) -> list[str]:
    """Wake the backed-off gangs found unschedulable that a change in `state.counted_changes`
    may matter to (`may_matter` for any pending member): set their `woken_ms` to `now_ms`;
    then empty the changes. The keys woken, sorted (a round must look at them again:
    `Derived.asleep` no longer holds).

    Cost: nothing when no change is recorded; else one pass over the groups with pending
    members and, for the gangs that watch, distinct member constraints x the changed pods in
    the namespaces they read.
    """
    changes = state.counted_changes
    if not changes:
        return []
    state.counted_changes = []
    changed: dict[str, list[Changed]] = {}
    for change in changes:
        other = state.pods.get(change.uid)
        if other is not None and change.uid in state.charges:  # still counted
            changed.setdefault(other.namespace, []).append((other, change.was))
    woken = []
    for key, uids in current.pending.items():
        group = state.groups.get(key)
        if (not changed or group is None or not group.may_retry_early
                or not backoff.is_backed_off(group, state.now_ms, config)):
            continue
        watches = {w for uid in uids if (w := watch(state.pods[uid])) is not None}
        if any(may_matter(w, other, was) for w in watches
               for other, was in _read_by(w, changed)):
            group.woken_ms = state.now_ms
            woken.append(key)
    return sorted(woken)



def _read_by(wanted: Watch, changed: dict[str, list[Changed]]) -> Iterator[Changed]:
    """The changed pods, by namespace, in the namespaces a watch's terms and constraints
    read (every one for a term over all namespaces)."""
    namespace, affinity, anti_affinity, _ = wanted
    terms = (*affinity, *anti_affinity)
    if any(term.all_namespaces for term in terms):
        names: Iterable[str] = changed
    else:
        names = {namespace}.union(*(term.namespaces for term in terms))
    for name in names:
        yield from changed.get(name, ())
