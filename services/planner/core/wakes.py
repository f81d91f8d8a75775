"""Waking backed-off gangs whose pod affinity or topology spread a counted pod may now let pass.

Layer: planner core (pure). kube-scheduler's InterPodAffinity and PodTopologySpread register
assigned-Pod add and label-update events with a queueing hint (`isSchedulableAfterPodChange`)
that moves an unschedulable pod back to the active queue (through its backoff, at most 10 s):
InterPodAffinity when the pod added matches all of its required affinity terms
(`podMatchesAllAffinityTerms`, as the filter counts only such pods, `Counts.add`), or a pod
relabelled did not match them all and now does; PodTopologySpread, in its namespace, when the
pod added matches one of its DoNotSchedule constraints' selectors, or a relabel changes
whether one does. Here each change to a counted pod (`PlannerState.counted_changes`: pods
newly counted on a node, bound or reserved, and counted pods relabelled, each with the labels
it left, `CountedChange`) is judged the same way at the start of the next round against the
pending members of every backed-off gang found unschedulable; a gang one may matter to is
woken (`GroupState.woken_at`, the change's moment), so that it retries early, once, as when
capacity frees (`backoff.early_retry_at_ms`, 1 s doubling to 10 s). A relabel that takes a
pod out of one of a member's anti-affinity terms wakes too (judged per term, coarser than the
hint's all terms). Gangs whose pending members have no required pod (anti-)affinity and no
DoNotSchedule constraint are never looked at: pod arrivals do not wake them. Coarser than
kube-scheduler in one way, bounded by the early-retry backoff: the node the pod is counted on
is not checked for the constraints' topology keys. A deleted pod frees capacity
(`capacity_freed_at`), which wakes every unschedulable gang already, as the anti-affinity hint
for a deleted pod does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from services.contracts.events import PodAffinityTerm, PodObserved
from services.fit import pod_affinity, topology_spread
from services.fit.topology_spread import Spread
from services.planner.core import backoff
from services.planner.core.config import PlannerConfig
from services.planner.core.indexes import Derived
from services.planner.core.pod_lookup import Pair, Selector, selector_anchors
from services.planner.core.state import CountedChange, PlannerState, next_moment

Watch = tuple[str, tuple[PodAffinityTerm, ...], tuple[PodAffinityTerm, ...], tuple[Spread, ...]]
"""What a pending member's wake depends on: its namespace, required affinity and anti-affinity
terms, and DoNotSchedule constraints (with `matchLabelKeys` merged, `topology_spread.spreads`)."""


def watch(pod: PodObserved) -> Watch | None:
    """What may make a change to a counted pod matter to pending `pod`, or None when no change
    can (no required pod (anti-)affinity, no DoNotSchedule constraint)."""
    if not (pod.pod_affinity or pod.pod_anti_affinity or topology_spread.is_spread(pod)):
        return None
    return (pod.namespace, pod.pod_affinity, pod.pod_anti_affinity,
            topology_spread.spreads(pod))


def may_matter(wanted: Watch, namespace: str, labels: Mapping[str, str],
               was: Mapping[str, str] | None, namespaces: pod_affinity.Namespaces) -> bool:
    """Whether a pod in `namespace` with `labels`, newly counted on a node (`was` None) or
    relabelled from `was`, may let a pending pod with `wanted` pass, as the queueing hints of
    InterPodAffinity and PodTopologySpread judge it (module docstring): it matches all the
    required affinity terms (and, relabelled, did not before); relabelled, it left an
    anti-affinity term; in the pod's namespace, it matches a DoNotSchedule constraint's
    selector (an empty one counts no pod) or, relabelled, matches one it did not or the other
    way round. `namespaces`: the Namespaces a term's `namespaceSelector` reads (one not held:
    no labels)."""
    own, affinity, anti_affinity, spreads = wanted
    if pod_affinity.matches_all_labels(affinity, namespace, labels, namespaces) and (
            was is None
            or not pod_affinity.matches_all_labels(affinity, namespace, was, namespaces)):
        return True
    if was is not None and any(
            pod_affinity.term_matches_labels(term, namespace, was, namespaces)
            and not pod_affinity.term_matches_labels(term, namespace, labels, namespaces)
            for term in anti_affinity):
        return True
    if namespace != own:
        return False
    if was is None:
        return any(bool(spread.selector) and pod_affinity.selector_matches(spread.selector, labels)
                   for spread in spreads)
    return any(pod_affinity.selector_matches(spread.selector, was)
               != pod_affinity.selector_matches(spread.selector, labels) for spread in spreads)


class Changes:
    """Changes to counted pods looked up by label, so that matching a gang costs what its
    selectors may match, not every change (as `pod_lookup` does for the filter).

    Shapes: `changes` in the order they happened; `by_namespace[ns]` their
    indexes in `changes`; `now[(ns, label)]` the indexes of those carrying `label` as they
    left it, `before[(ns, label)]` of the relabelled ones that carried it before.
    """

    def __init__(self, changes: list[CountedChange], namespaces: pod_affinity.Namespaces,
                 ) -> None:
        self.changes = changes
        self.namespaces = namespaces
        self.by_namespace: dict[str, list[int]] = {}
        self.now: dict[tuple[str, Pair], list[int]] = {}
        self.before: dict[tuple[str, Pair], list[int]] = {}
        for i, change in enumerate(changes):
            self.by_namespace.setdefault(change.namespace, []).append(i)
            for pair in change.labels.items():
                self.now.setdefault((change.namespace, pair), []).append(i)
            for pair in (change.was or {}).items():
                self.before.setdefault((change.namespace, pair), []).append(i)

    def selected(self, selector: Selector, namespaces: Iterable[str] | None,
                 before: bool) -> Iterator[int]:
        """Indexes of the changes in `namespaces` (None: all) that may match `selector` with
        their labels now (`before`: relabelled ones, with their labels before); a superset."""
        names = self.by_namespace if namespaces is None else namespaces
        pairs = selector_anchors(selector)
        table = self.before if before else self.now
        for name in names:
            if pairs is None:
                yield from (i for i in self.by_namespace.get(name, ())
                            if not before or self.changes[i].was is not None)
                continue
            for pair in pairs:
                yield from table.get((name, pair), ())

    def candidates(self, wanted: Watch) -> set[int]:
        """Indexes of the changes that may matter to `wanted` (`may_matter` decides): a pod
        matching all affinity terms matches the first one (its most selective would do as
        well), so one term's lookup is enough."""
        own, affinity, anti_affinity, spreads = wanted
        found: set[int] = set()
        if affinity:
            term = affinity[0]
            found.update(self.selected(term.label_selector, _namespaces(term), before=False))
        for term in anti_affinity:
            found.update(self.selected(term.label_selector, _namespaces(term), before=True))
        for spread in spreads:
            if spread.selector:
                found.update(self.selected(spread.selector, (own,), before=False))
                found.update(self.selected(spread.selector, (own,), before=True))
        return found

    def latest(self, wanted: Watch, after: int) -> int:
        """The moment of the latest change after moment `after` that may matter to `wanted`
        (`may_matter`), or `after` when none does."""
        changes = self.changes
        for i in sorted(self.candidates(wanted), key=lambda i: changes[i].at, reverse=True):
            change = changes[i]
            if change.at <= after:
                break
            if may_matter(wanted, change.namespace, change.labels, change.was, self.namespaces):
                return change.at
        return after


def _read_now(state: PlannerState, change: CountedChange) -> CountedChange:
    """A change a snapshot of core revision 32 or before holds (no namespace nor labels), with
    the pod's as they are now (as those revisions judged it; a pod gone matches nothing), at
    the moment now: after every attempt those revisions' rounds made."""
    pod = state.pods.get(change.uid)
    namespace, labels = (pod.namespace, pod.labels) if pod is not None else ("", {})
    return CountedChange(change.uid, change.was, next_moment(state), namespace, dict(labels))


def _namespaces(term: PodAffinityTerm) -> Iterable[str] | None:
    """The namespaces a counted pod must be in to match `term`; None: any may (a selector's
    match depends on Namespace labels, judged by `may_matter`)."""
    if term.all_namespaces or term.namespace_selector is not None:
        return None
    return term.namespaces


def wake(state: PlannerState, current: Derived, config: PlannerConfig) -> list[str]:
    """Wake the backed-off gangs found unschedulable that a change in `state.counted_changes`
    after their last attempt may matter to (`may_matter` for any pending member): set their
    `woken_at` to the latest such change's moment; then empty the changes. The keys woken,
    sorted (a round must look at them again: `Derived.asleep` no longer holds).

    Cost: nothing when no change is recorded; else one pass over the groups with pending
    members and, for the gangs that watch, per distinct member constraint, label lookups and
    the changes they find (`Changes`).
    """
    changes = state.counted_changes
    if not changes:
        return []
    state.counted_changes = []
    changed = Changes([change if change.namespace else _read_now(state, change)
                       for change in changes], state.namespaces)
    woken = []
    for key, uids in current.pending.items():
        group = state.groups.get(key)
        if (group is None or not group.may_retry_early
                or not backoff.is_backed_off(group, state.now_ms, config)):
            continue
        watches = {w for uid in uids if (w := watch(state.pods[uid])) is not None}
        seen = max(group.woken_at, group.last_attempt_at)
        latest = max((changed.latest(w, seen) for w in watches), default=seen)
        if latest > seen:
            group.woken_at = latest
            woken.append(key)
    return sorted(woken)
