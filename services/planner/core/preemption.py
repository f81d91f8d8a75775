"""Whole-gang preemption: which lower-priority pods to evict so a gang that cannot be placed fits.

Layer: planner core (pure; NumPy). Mirrors kube-scheduler's DefaultPreemption
(`pkg/scheduler/framework/preemption`, `plugins/defaultpreemption`) for a whole gang rather than
one pod on one node:

- Eligibility (`PodEligibleToPreemptOthers`): a member with `preemptionPolicy: Never` keeps its
  gang from preempting; a gang whose capacity is already nominated (its victims still leaving)
  does not preempt again until the nomination lapses (`nominations`).
- Victims: bound pods of strictly lower priority on nodes where some pending member passes its
  non-resource filters; by default only gangsched's own pods
  (`PlannerConfig.preempt_other_schedulers`; docs/design-notes.md "Preemption" says why). A
  gang is a victim only whole: every member it has bound goes, never a part that would leave
  it below minMember, and only when every one of them has a lower priority, none of its
  members is reserved by a placement in flight, and it runs: a gang holding fewer than
  minMember (bound, plus Succeeded once it ran) is completing and goes first (a stranded
  gang, `quorum.is_stranded`), so it is no victim.
- Never futile: with every candidate victim removed the preemptor's quorum must fit (the same
  `placement.place` search as placing, victims' capacity, host ports and pod counts given
  back), or nothing is evicted. Then, as `SelectVictimsOnNode`, victims are reprieved one unit
  at a time, keeping each whose return still lets the quorum fit: first those whose eviction
  would violate a PodDisruptionBudget (`filterPodsWithPDBViolation`: the budgets' allowed
  disruptions taken by the units in `MoreImportantPod` order, so a unit violates when more
  important ones used them up), then the others, each by `MoreImportantPod` (highest
  priority, then earliest `status.startTime`), then largest first.
- Candidate sets: that reprieve over every unit at once (a gang may need several nodes), and
  one without regard to budgets, highest priority then smallest first (fewest victims left;
  the choice counts each set's violations, so it wins only with no more of them); per node,
  as kube-scheduler dry-runs each node, both reprieves over the units bound there alone (at
  most `MAX_NODE_TRIALS` nodes); and every single unit that suffices alone.
- Many candidates: at most `MAX_UNITS` units are weighed so (whole nodes' worth, cheapest
  nodes first); a gang those are not enough for is weighed against every unit, reprieved in
  a bounded number of trials (`_weigh_many`), and told "not helpful" only when it would not
  fit with every unit it may evict gone.
- Choice (`pickOneNodeForPreemption`, over those sets rather than nodes): prefer fewest PDB
  violations (counted on the set itself), then the lowest highest victim priority, fewest
  victims, least preempted capacity (requests as shares of the nodes' allocatable), then the
  victims' names.

Every order comes from explicit sort keys, so the same state gives the same victims.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from services.contracts import ids
from services.contracts.events import DisruptionBudgetObserved, PodObserved
from services.fit.pod_affinity import selector_matches
from services.planner.core import pods, quorum
from services.planner.core.capacity import BoolArray, NodeIndex
from services.planner.core.config import PlannerConfig
from services.planner.core.indexes import Derived
from services.planner.core.state import PlannerState

NEVER = "Never"
"""`spec.preemptionPolicy` of a pod that never preempts."""
MAX_UNITS = 128
"""Most units weighed for one preemption, whole nodes' worth, lowest-priority nodes first: each
costs a placement trial in the reprieve (kube-scheduler likewise bounds its candidate nodes)."""
MAX_NODE_TRIALS = 100
"""Most nodes whose units are weighed alone, reprieved as on that node only (kube-scheduler's
`MinCandidateNodesAbsolute`; it tries every node of a smaller cluster)."""
MAX_SINGLE_TRIALS = 64
"""Most single units tried alone as a cheaper choice than the reprieved set (cheapest first)."""
NOT_STARTED = 2**63
"""The start time (ms) of a unit none of whose pods has started: after every real one."""
SHARE_SCALE = 1_000_000
"""A request's share of a node's allocatable, in millionths (integer, so sums are exact)."""

Assigned = list[tuple[PodObserved, int]]
"""The preemptor's members with the node row each would take."""
Fits = Callable[[], Assigned | None]
"""Places the preemptor on the index as it is now and gives it back: its rows, or None."""


@dataclass
class Unit:
    """Pods evicted together: a gang's bound members, or one pod.

    Shapes: `key` the group key (`ids.GroupKey`), or `pod/<uid>` for a pod of another
    scheduler; `members` (uid, row, pod) sorted by namespace/name; `group` the victims'
    group key ("" for another scheduler's pod). Units: `share` millionths of allocatable.
    """

    key: str
    group: str
    members: list[tuple[str, int, PodObserved]]
    priority: int = 0
    share: int = 0
    violates: bool = False
    start: int = NOT_STARTED


@dataclass
class Choice:
    """The victims chosen and where the preemptor's members go once they have left.

    Shapes: `units` the evicted units, sorted by key; `assigned` the preemptor's members with
    their node rows; `cost` what the choice is ranked by (its first entry the victims whose
    eviction violates a PodDisruptionBudget).
    """

    units: list[Unit]
    assigned: Assigned
    cost: tuple[object, ...] = field(default=())


@dataclass
class Candidates:
    """The units a preemptor may evict, each list sorted by key: `weighed` at most
    `MAX_UNITS` of them, whole nodes' worth, lowest-priority nodes first (`_by_node`), which
    `choose` weighs in full; `every` all of them, which it falls back on when those are not
    enough (a gang needing more victims than the bound)."""

    weighed: list[Unit]
    every: list[Unit]


def may_preempt(pending: list[PodObserved]) -> bool:
    """Whether the gang may preempt at all: no pending member has `preemptionPolicy: Never`
    (`PodEligibleToPreemptOthers`)."""
    return all(pod.preemption_policy != NEVER for pod in pending)


def lowest(current: Derived, config: PlannerConfig) -> int:
    """The lowest priority among bound pods preemption may evict (gangsched's own, or any with
    `preempt_other_schedulers`); `2**31` when there is none (no gang can preempt).

    Source: the charged bound pods counted by priority in `current` (`Derived.priorities`,
    `our_priorities`; built for `config.scheduler_name`), one step per distinct priority."""
    counts = current.priorities if config.preempt_other_schedulers else current.our_priorities
    return min(counts, default=2**31)


def candidates(state: PlannerState, current: Derived, index: NodeIndex, key: str,
               priority: int, pending: list[PodObserved], config: PlannerConfig,
               taken: set[str]) -> Candidates:
    """The units the preemptor `key` of `priority` may evict (module docstring): all of them,
    and those weighed first (`Candidates`).

    Shapes: `taken` uids already evicted for another preemptor (never chosen twice).
    """
    relevant: BoolArray = np.zeros(len(index), dtype=np.bool_)
    for member in pending:
        relevant |= index.static_fit(member).mask
    units: dict[str, Unit] = {}
    blocked: set[str] = set()
    for uid in sorted(state.charges):
        pod = state.pods.get(uid)
        row = index.row.get(state.charges[uid].node)
        if pod is None or row is None:
            continue
        if pods.is_ours(pod, config.scheduler_name):
            group = current.pod_group.get(uid)
            if group is None:
                continue
            pod_class = current.pod_class.get(uid)
            if pod_class == "reserved" or pod.priority >= priority or uid in taken:
                blocked.add(group)  # a gang goes whole or not at all
                continue
            if pod_class != "bound":
                continue  # leaving anyway (deleting) or done
            unit = units.setdefault(group, Unit(group, group, []))
        else:
            if (not config.preempt_other_schedulers or pod.is_deleting
                    or not pods.uses_capacity(pod) or pod.priority >= priority or uid in taken):
                continue
            unit = units.setdefault(f"pod/{uid}", Unit(f"pod/{uid}", "", []))
        unit.members.append((uid, row, pod))
    chosen = []
    for unit_key in sorted(units):
        unit = units[unit_key]
        if unit.group in blocked or unit.group == key or not relevant[[row for _, row, _ in
                                                                        unit.members]].any():
            continue
        group_state = state.groups.get(unit.group)
        if group_state is not None and group_state.in_flight:
            continue
        if _is_stranded(state, current, unit):
            continue  # partly bound: it completes first (`quorum.is_stranded`), never evicted
        unit.members.sort(key=lambda member: (member[2].namespace, member[2].name, member[0]))
        unit.priority = max(pod.priority for _, _, pod in unit.members)
        unit.share = sum(_share(index, row, pod) for _, row, pod in unit.members)
        unit.start = min((pod.start_ms for _, _, pod in unit.members if pod.start_ms is not None),
                         default=NOT_STARTED)
        chosen.append(unit)
    return Candidates(sorted(_by_node(chosen, relevant), key=lambda u: u.key),
                      sorted(chosen, key=lambda u: u.key))


def _is_stranded(state: PlannerState, current: Derived, unit: Unit) -> bool:
    """Whether the unit's gang holds fewer members than minMember (`quorum.is_stranded`): its
    bound members, plus its Succeeded ones once it has run (a gang whose first members finished
    runs on and may be a victim). Read only: `group.has_run` is not updated here."""
    podgroup = state.podgroups.get(unit.group)
    if podgroup is None:
        return False
    group = state.groups.get(unit.group)
    succeeded = sum(1 for uid in current.members.get(unit.group, ())
                    if current.pod_class.get(uid) == "succeeded")
    bound = len(unit.members)
    ran = quorum.has_run(group is not None and group.has_run, bound, succeeded,
                         podgroup.min_member)
    return bound + (succeeded if ran else 0) < podgroup.min_member


def _by_node(units: list[Unit], relevant: BoolArray) -> list[Unit]:
    """At most `MAX_UNITS` of `units`, taken node by node so that the nodes they touch can be
    emptied (kube-scheduler weighs every victim on each candidate node): relevant nodes in
    order of their units' highest priority, then their number, then their shares, then row;
    each node's units all, or none when they would pass the bound (the cheapest units when
    every node has more than the bound)."""
    if len(units) <= MAX_UNITS:
        return units
    on_row: dict[int, list[Unit]] = {}
    for unit in units:
        for row in sorted({row for _, row, _ in unit.members}):
            if relevant[row]:
                on_row.setdefault(row, []).append(unit)
    order = sorted(on_row, key=lambda row: (max(u.priority for u in on_row[row]),
                                            len(on_row[row]),
                                            sum(u.share for u in on_row[row]), row))
    taken: dict[str, Unit] = {}
    for row in order:
        new = {u.key: u for u in on_row[row] if u.key not in taken}
        if len(taken) + len(new) <= MAX_UNITS:
            taken.update(new)
    if not taken:  # every node has more units than the bound: the cheapest ones, then
        return sorted(units, key=lambda u: (u.priority, len(u.members), u.share, u.key)
                      )[:MAX_UNITS]
    return list(taken.values())


def choose(index: NodeIndex, units: Candidates, budgets: Iterable[DisruptionBudgetObserved],
           fits: Fits) -> Choice | None:
    """The victims to evict so the preemptor fits (module docstring), or None: it would not
    fit even with every candidate unit gone (nothing is evicted), or there is nothing to
    evict. A choice without units: it fits as it is (`fits` may see room other evictions are
    freeing). The units `weighed` are weighed in full (`_weigh`); only when they are not
    enough, every unit (`_weigh_many`), so "not helpful" is said only of a gang that would not
    fit with every unit it may evict gone.

    Leaves `index` as it found it.
    """
    budgets = list(budgets)
    choice = _weigh(index, units.weighed, budgets, fits)
    if choice is not None or len(units.weighed) == len(units.every):
        return choice
    return _weigh_many(index, units.every, budgets, fits)


def _weigh(index: NodeIndex, units: list[Unit], budgets: Iterable[DisruptionBudgetObserved],
           fits: Fits) -> Choice | None:
    """`choose` among at most `MAX_UNITS` units: every candidate set of the module docstring.

    Cost: two `fits` per unit to reprieve (the reprieve over every unit is made in both
    orders), plus at most `MAX_NODE_TRIALS` nodes' and `MAX_SINGLE_TRIALS` units' trials.
    """
    if not units:
        return None
    book = _Budgets(budgets)
    for unit in units:
        unit.violates = book.violations([pod for _, _, pod in unit.members]) > 0
    removed: set[str] = set()
    by_key = {unit.key: unit for unit in units}
    try:
        _set_removed(index, by_key, removed, set(by_key))
        all_gone = fits()
        if all_gone is None:
            return None
        victims, assigned = _reprieve(index, by_key, removed, set(by_key), all_gone, fits,
                                      book, _importance)
        if not victims:
            return Choice([], assigned)  # fits once other preemptors' victims have left
        options = [_choice(book, [by_key[k] for k in sorted(victims)], assigned)]
        everything = set(by_key)  # and smallest first, as node by node (the cost decides)
        _set_removed(index, by_key, removed, everything)
        kept, placed = _reprieve(index, by_key, removed, everything, all_gone, fits, None,
                                 _fewest)
        options.append(_choice(book, [by_key[k] for k in sorted(kept)], placed))
        for row in _nodes(units)[:MAX_NODE_TRIALS]:
            local = {unit.key for unit in units if row in _rows(unit)}
            _set_removed(index, by_key, removed, local)
            alone = fits()
            if alone is None:
                continue
            for biased, order in ((True, _importance), (False, _fewest)):
                _set_removed(index, by_key, removed, local)
                kept, placed = _reprieve(index, by_key, removed, local, alone, fits,
                                         book if biased else None, order)
                if kept:
                    options.append(_choice(book, [by_key[k] for k in sorted(kept)], placed))
        if len(victims) > 1:
            cheapest = sorted(units, key=lambda u: (u.violates, u.priority, len(u.members),
                                                    u.share, u.key))
            for unit in cheapest[:MAX_SINGLE_TRIALS]:
                _set_removed(index, by_key, removed, {unit.key})
                alone = fits()
                if alone is not None:
                    options.append(_choice(book, [unit], alone))
        return min(options, key=lambda option: option.cost)
    finally:
        _set_removed(index, by_key, removed, set())


def _weigh_many(index: NodeIndex, units: list[Unit],
                budgets: Iterable[DisruptionBudgetObserved], fits: Fits) -> Choice | None:
    """`choose` among more than `MAX_UNITS` units, in a bounded number of trials: the units
    are removed node by node, the cheapest nodes first (`_removal_order`), in prefixes
    doubling from the first past `MAX_UNITS` units until the preemptor fits (with every unit
    gone it must, else None); then the units off the nodes it would take are given back at
    once, then (most important nodes first, at most `MAX_NODE_TRIALS`) each node's units
    together, then (in `_reprieve`'s order, at most `MAX_UNITS`) single units, each kept back
    while the preemptor still fits. Units never tried stay victims: more are evicted than the
    fewest possible, but never in vain, and from the cheapest nodes that suffice
    (kube-scheduler's `SelectVictimsOnNode` likewise removes every lower-priority pod first
    and reprieves from there; `pickOneNodeForPreemption` prefers the fewest budget
    violations, then the lowest priorities).

    Cost: at most log2 of the nodes + 1 + `MAX_NODE_TRIALS` + `MAX_UNITS` `fits`.
    """
    book = _Budgets(budgets)
    for unit in units:
        unit.violates = book.violations([pod for _, _, pod in unit.members]) > 0
    by_key = {unit.key: unit for unit in units}
    removed: set[str] = set()
    try:
        found = _cheapest_enough(index, by_key, removed, _removal_order(units), fits)
        if found is None:
            return None
        victims, assigned = found
        used = {row for _, row in assigned}
        near = {key for key in victims if _rows(by_key[key]) & used}
        if near != victims:
            _set_removed(index, by_key, removed, near)
            trial = fits()
            if trial is None:
                _set_removed(index, by_key, removed, victims)
            else:
                victims, assigned = near, trial
        for row in list(reversed(_nodes([by_key[key] for key in sorted(victims)])))[
                :MAX_NODE_TRIALS]:
            local = {key for key in victims if row in _rows(by_key[key])}
            _set_removed(index, by_key, removed, victims - local)
            trial = fits()
            if trial is None:
                _set_removed(index, by_key, removed, victims)
            else:
                victims, assigned = victims - local, trial
        victims, assigned = _reprieve(index, by_key, removed, victims, assigned, fits, book,
                                      _importance, limit=MAX_UNITS)
        if not victims:
            return Choice([], assigned)
        return _choice(book, [by_key[key] for key in sorted(victims)], assigned)
    finally:
        _set_removed(index, by_key, removed, set())


def _removal_order(units: list[Unit]) -> list[list[str]]:
    """The units' keys node by node, the cheapest node first: a node none of whose units
    violates a budget before one that does, then the lowest highest priority, the fewest
    units, the least share, the row (`_by_node`'s order). A unit on several nodes is listed
    with each."""
    on: dict[int, list[Unit]] = {}
    for unit in units:
        for row in sorted(_rows(unit)):
            on.setdefault(row, []).append(unit)
    order = sorted(on, key=lambda row: (any(u.violates for u in on[row]),
                                        max(u.priority for u in on[row]), len(on[row]),
                                        sum(u.share for u in on[row]), row))
    return [[unit.key for unit in on[row]] for row in order]


def _cheapest_enough(index: NodeIndex, by_key: dict[str, Unit], removed: set[str],
                     nodes: list[list[str]], fits: Fits) -> tuple[set[str], Assigned] | None:
    """The units of the shortest prefix of `nodes` (doubling from the first past `MAX_UNITS`
    units) with which removed the preemptor fits, left removed, and where it goes; None when
    it does not fit even with every unit removed."""
    count = 0
    while True:
        count = max(count * 2, 1)
        while count < len(nodes) and len({k for keys in nodes[:count] for k in keys}) \
                <= MAX_UNITS:
            count += 1
        prefix = {key for keys in nodes[:count] for key in keys}
        _set_removed(index, by_key, removed, prefix)
        assigned = fits()
        if assigned is not None:
            return prefix, assigned
        if count >= len(nodes):
            return None


def _reprieve(index: NodeIndex, by_key: dict[str, Unit], removed: set[str], victims: set[str],
              assigned: Assigned, fits: Fits, book: _Budgets | None,
              order: Callable[[Unit], tuple[object, ...]],
              limit: int | None = None) -> tuple[set[str], Assigned]:
    """`SelectVictimsOnNode`'s reprieve over the units `victims` (all removed now, and the
    preemptor fits as `assigned`): with a `book`, those whose eviction would violate a budget
    first, as `filterPodsWithPDBViolation` finds them (the budgets' allowed disruptions taken
    in `_importance` order, so a unit violates when the more important ones used them up),
    then the others, each in `order`; a unit given back stays if the preemptor still fits
    (only the first `limit` units of that order are tried, when given). The units left to
    evict (still removed) and where the preemptor goes then."""
    units = sorted((by_key[key] for key in victims), key=_importance)
    violating = ([False] * len(units) if book is None
                 else book.violating([[pod for _, _, pod in unit.members] for unit in units]))
    flagged = {unit.key for unit, violates in zip(units, violating, strict=True) if violates}
    victims = set(victims)
    for unit in sorted(units, key=lambda u: (u.key not in flagged, *order(u)))[:limit]:
        _set_removed(index, by_key, removed, victims - {unit.key})
        kept = fits()
        if kept is None:
            _set_removed(index, by_key, removed, victims)
        else:
            victims.discard(unit.key)
            assigned = kept
    return victims, assigned


def _importance(unit: Unit) -> tuple[object, ...]:
    """kube-scheduler's `MoreImportantPod` order: the highest priority, then the earliest
    start (a pod not started yet counts as starting now, after every started one), then the
    largest, then the key."""
    return (-unit.priority, unit.start, -len(unit.members), -unit.share, unit.key)


def _fewest(unit: Unit) -> tuple[object, ...]:
    """The reprieve order that leaves the fewest victims: the highest priority first, then the
    smallest (fewest pods, least capacity) first, so the largest stay victims."""
    return (-unit.priority, len(unit.members), unit.share, unit.key)


def _rows(unit: Unit) -> set[int]:
    return {row for _, row, _ in unit.members}


def _nodes(units: list[Unit]) -> list[int]:
    """The rows the units are bound on, those whose units look cheapest first (lowest highest
    priority, fewest units, then row)."""
    on: dict[int, list[Unit]] = {}
    for unit in units:
        for row in sorted(_rows(unit)):
            on.setdefault(row, []).append(unit)
    return sorted(on, key=lambda row: (max(u.priority for u in on[row]), len(on[row]), row))


def _choice(book: _Budgets, units: list[Unit], assigned: Assigned) -> Choice:
    victims = [pod for unit in units for _, _, pod in unit.members]
    violations = book.violations(sorted(victims, key=lambda pod: (pod.namespace, pod.name)))
    names = tuple(sorted(f"{pod.namespace}/{pod.name}" for pod in victims))
    cost = (violations, max(unit.priority for unit in units), len(victims),
            sum(unit.share for unit in units), names)
    return Choice(units, assigned, cost)


def _set_removed(index: NodeIndex, units: dict[str, Unit], removed: set[str],
                 wanted: set[str]) -> None:
    """Give back (or take again) units' capacity, host ports and pod counts on the index so
    that exactly the units `wanted` are absent; `removed` tracks which are."""
    for key in sorted(removed - wanted):
        for uid, row, pod in units[key].members:
            index.take(row, index.vector(pod.requests)[0], index.extra_vector(pod))
            node = index.names[row]
            is_ours = units[key].group != ""
            if pod.host_ports:
                index.set_ports(uid, node, pod.host_ports, is_ours)
            index.set_pod(uid, node, pod, is_ours)
        removed.discard(key)
    for key in sorted(wanted - removed):
        for uid, row, pod in units[key].members:
            index.give(row, index.vector(pod.requests)[0], index.extra_vector(pod))
            if pod.host_ports:
                index.set_ports(uid, None, ())
            index.set_pod(uid, None, None)
        removed.add(key)


def _share(index: NodeIndex, row: int, pod: PodObserved) -> int:
    """The pod's requests as millionths of the node's allocatable, summed over resources."""
    total = 0
    for name, amount in sorted(pod.requests.items()):
        col = index.col.get(name)
        if col is not None and index.alloc[col, row] > 0:
            total += amount * SHARE_SCALE // int(index.alloc[col, row])
    return total


class _Budgets:
    """PodDisruptionBudgets by namespace, as `filterPodsWithPDBViolation` reads them."""

    def __init__(self, budgets: Iterable[DisruptionBudgetObserved]) -> None:
        self.by_namespace: dict[str, list[DisruptionBudgetObserved]] = {}
        for budget in budgets:
            self.by_namespace.setdefault(budget.namespace, []).append(budget)
        for listed in self.by_namespace.values():
            listed.sort(key=lambda budget: budget.name)

    def violations(self, victims: list[PodObserved]) -> int:
        """How many of `victims` (in this order) would violate a budget: each matching budget
        (a nil or empty selector matches nothing, and a pod without labels matches none, as
        `filterPodsWithPDBViolation` skips it, even for a `DoesNotExist` selector) loses one
        allowed disruption per victim not already in its `disruptedPods`; a victim that
        takes one below zero violates it."""
        return sum(self.violating([[pod] for pod in victims]))

    def violating(self, groups: list[list[PodObserved]]) -> list[bool]:
        """Per group of victims (in this order, allowances shared as `violations` takes them),
        whether one of its pods violates a budget."""
        allowed: dict[tuple[str, str], int] = {}
        flags = []
        for pods_of in groups:
            violating = False
            for pod in pods_of:
                if not pod.labels:
                    continue  # matches no budget (`filterPodsWithPDBViolation`)
                for budget in self.by_namespace.get(pod.namespace, ()):
                    if (not budget.selector or not selector_matches(budget.selector, pod.labels)
                            or pod.name in budget.disrupted_pods):
                        continue
                    name = (budget.namespace, budget.name)
                    allowed[name] = allowed.get(name, budget.disruptions_allowed) - 1
                    violating |= allowed[name] < 0
            flags.append(violating)
        return flags


def victim_group(unit: Unit) -> str:
    """The group key a `Victim` names: the unit's group, or the pod's own singleton key."""
    if unit.group:
        return unit.group
    pod = unit.members[0][2]
    return ids.singleton_key(pod.namespace, pod.name)
