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
  gang is a victim only when every member it has bound has a lower priority, none of its
  members is reserved by a placement in flight, and it runs: a gang holding fewer than
  minMember (bound, plus Succeeded once it ran) is completing and goes first (a stranded
  gang, `quorum.is_stranded`), so it is no victim. It is weighed as one unit, every bound
  member; when the reprieve cannot give it back whole, its members are given back one at a
  time (`_trim`), so that it loses either every bound member or at most its surplus (members
  held beyond minMember) and keeps running at quorum: never left below minMember (as
  kube-scheduler, pod by pod, may leave it), and no member evicted that the preemptor does
  not need (as a whole-gang rule would).
- Never futile: with every candidate victim removed the preemptor's quorum must fit (the same
  `placement.place` search as placing, victims' capacity, host ports and pod counts given
  back), or nothing is evicted. Then, as `SelectVictimsOnNode`, victims are reprieved one unit
  at a time, keeping each whose return still lets the quorum fit: first those whose eviction
  would violate a PodDisruptionBudget (`filterPodsWithPDBViolation`: the budgets' allowed
  disruptions taken by the units in `MoreImportantPod` order, so a unit violates when more
  important ones used them up), then the others, each by `MoreImportantPod` (highest
  priority, then earliest `status.startTime`), then largest first. A gang with a surplus
  that cannot come back whole is trimmed in its place, before any later unit comes back: its
  members, as units of one pod, reprieved the same way (budget violators among them first),
  and it stays a whole victim when more than its surplus would still go (or
  `MAX_MEMBER_TRIALS` ran out). Trimming in place, not after the reprieve, lets a unit given
  back later stay a victim instead of the gang's needed members: what a reprieve over pods
  with the gang rule would find.
- Candidate sets: that reprieve over every unit at once (a gang may need several nodes); per
  node, as kube-scheduler dry-runs each node, that reprieve over the units bound there alone
  (at most `MAX_NODE_TRIALS` nodes), and one without regard to budgets, highest priority then
  smallest first (fewest victims left; the choice counts each set's violations, so it wins
  only with no more of them); and every single unit that suffices alone.
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
MAX_MEMBER_TRIALS = 256
"""Most members of victim gangs given back one at a time in one `choose` (each a placement
trial): the sets trimmed first (the reprieve over every unit, then node by node) spend them;
a gang whose trim would pass the bound stays a whole victim, as it was before trimming."""
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
    """Pods evicted together: a gang's bound members, or one pod, or one surplus member of a
    gang that keeps running at quorum (`is_part`, made by `_trim`).

    Shapes: `key` the group key (`ids.GroupKey`), or `pod/<uid>` for a pod of another
    scheduler, or `<group key>#<uid>` for a surplus member; `members` (uid, row, pod) sorted
    by namespace/name; `group` the victims' group key ("" for another scheduler's pod);
    `surplus` how many of a gang's bound members may go while it keeps minMember (bound, plus
    Succeeded once it ran, less minMember; 0 for a pod, a part, or a gang without PodGroup).
    Units: `share` millionths of allocatable; `start` epoch ms.
    """

    key: str
    group: str
    members: list[tuple[str, int, PodObserved]]
    priority: int = 0
    share: int = 0
    violates: bool = False
    start: int = NOT_STARTED
    surplus: int = 0
    is_part: bool = False


@dataclass
class Choice:
    """The victims chosen and where the preemptor's members go once they have left.

    Shapes: `units` the evicted units (whole gangs, pods, and surplus members of gangs that
    keep minMember, `Unit.is_part`), sorted by key; `assigned` the preemptor's members with
    their node rows; `cost` what the choice is ranked by (its first entry the victims whose
    eviction violates a PodDisruptionBudget).
    """

    units: list[Unit]
    assigned: Assigned
    cost: tuple[object, ...] = field(default=())


def may_preempt(pending: list[PodObserved]) -> bool:
    """Whether the gang may preempt at all: no pending member has `preemptionPolicy: Never`
    (`PodEligibleToPreemptOthers`)."""
    return all(pod.preemption_policy != NEVER for pod in pending)


def lowest(state: PlannerState, config: PlannerConfig) -> int:
    """The lowest priority among bound pods preemption may evict (gangsched's own, or any with
    `preempt_other_schedulers`); `2**31` when there is none (no gang can preempt)."""
    return min((pod.priority for uid in state.charges
                if (pod := state.pods.get(uid)) is not None and pod.node_name is not None
                and (config.preempt_other_schedulers
                     or pods.is_ours(pod, config.scheduler_name))),
               default=2**31)


def candidates(state: PlannerState, current: Derived, index: NodeIndex, key: str,
               priority: int, pending: list[PodObserved], config: PlannerConfig,
               taken: set[str]) -> list[Unit]:
    """The units the preemptor `key` of `priority` may evict (module docstring), sorted by key:
    at most `MAX_UNITS`, whole nodes' worth, lowest-priority nodes first (`_by_node`).

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
        surplus = _surplus(state, current, unit)
        if surplus < 0:
            continue  # partly bound: it completes first (`quorum.is_stranded`), never evicted
        unit.members.sort(key=lambda member: (member[2].namespace, member[2].name, member[0]))
        unit.priority = max(pod.priority for _, _, pod in unit.members)
        unit.share = sum(_share(index, row, pod) for _, row, pod in unit.members)
        unit.start = min((pod.start_ms for _, _, pod in unit.members if pod.start_ms is not None),
                         default=NOT_STARTED)
        unit.surplus = surplus
        chosen.append(unit)
    return sorted(_by_node(chosen, relevant), key=lambda u: u.key)


def _surplus(state: PlannerState, current: Derived, unit: Unit) -> int:
    """How many more members the unit's gang holds than minMember: its bound members, plus its
    Succeeded ones once it has run (a gang whose first members finished runs on and may be a
    victim), less minMember; negative for a stranded gang (`quorum.is_stranded`), 0 for a pod
    without PodGroup. Read only: `group.has_run` is not updated here."""
    podgroup = state.podgroups.get(unit.group)
    if podgroup is None:
        return 0
    group = state.groups.get(unit.group)
    succeeded = sum(1 for uid in current.members.get(unit.group, ())
                    if current.pod_class.get(uid) == "succeeded")
    bound = len(unit.members)
    ran = quorum.has_run(group is not None and group.has_run, bound, succeeded,
                         podgroup.min_member)
    return bound + (succeeded if ran else 0) - podgroup.min_member


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


def choose(index: NodeIndex, units: list[Unit], budgets: Iterable[DisruptionBudgetObserved],
           fits: Fits) -> Choice | None:
    """The victims to evict so the preemptor fits (module docstring), or None: it would not
    fit even with every unit gone (nothing is evicted), or there is nothing to evict. A choice
    without units: it fits as it is (`fits` may see room other evictions are freeing).

    Leaves `index` as it found it. Cost: one `fits` per unit to reprieve, plus at most
    `MAX_SINGLE_TRIALS` more, plus at most `MAX_MEMBER_TRIALS` to trim victim gangs.
    """
    if not units:
        return None
    book = _Budgets(budgets)
    for unit in units:
        unit.violates = book.violations([pod for _, _, pod in unit.members]) > 0
    scratch = _Scratch(index, {unit.key: unit for unit in units}, fits)
    try:
        scratch.absent(set(scratch.by_key))
        assigned = fits()
        if assigned is None:
            return None
        victims, assigned = _reprieve(scratch, set(scratch.by_key), assigned, book, _importance)
        if not victims:
            return Choice([], assigned)  # fits once other preemptors' victims have left
        options = [_choice(book, scratch.units(victims), assigned)]
        for row in _nodes(units)[:MAX_NODE_TRIALS]:
            local = {unit.key for unit in units if row in _rows(unit)}
            scratch.absent(local)
            alone = fits()
            if alone is None:
                continue
            for biased, order in ((True, _importance), (False, _fewest)):
                scratch.absent(local)
                kept, placed = _reprieve(scratch, local, alone, book if biased else None, order)
                if kept:
                    options.append(_choice(book, scratch.units(kept), placed))
        if len(victims) > 1:
            cheapest = sorted(units, key=lambda u: (u.violates, u.priority, len(u.members),
                                                    u.share, u.key))
            for unit in cheapest[:MAX_SINGLE_TRIALS]:
                scratch.absent({unit.key})
                alone = fits()
                if alone is not None:
                    kept = {unit.key}  # trimmed too: a gang may need only its surplus gone
                    placed = _trim(scratch, kept, unit, alone, book, _importance)
                    if kept:
                        options.append(_choice(book, scratch.units(kept), placed))
        return min(options, key=lambda option: option.cost)
    finally:
        scratch.absent(set())


@dataclass
class _Scratch:
    """One `choose`'s trials: the units by key (with the surplus members `_trim` splits off,
    `<group key>#<uid>`), which of them are absent from the index now (`removed`; never two
    holding the same pod), and the member trials left (`MAX_MEMBER_TRIALS`)."""

    index: NodeIndex
    by_key: dict[str, Unit]
    fits: Fits
    removed: set[str] = field(default_factory=set)
    member_trials: int = MAX_MEMBER_TRIALS

    def absent(self, wanted: set[str]) -> None:
        """Make exactly the units `wanted` absent from the index (`_set_removed`)."""
        _set_removed(self.index, self.by_key, self.removed, wanted)

    def units(self, keys: set[str]) -> list[Unit]:
        """The units `keys`, sorted by key."""
        return [self.by_key[key] for key in sorted(keys)]

    def rename(self, victims: set[str], old: set[str], new: set[str]) -> None:
        """Name the pods of the units `old` (absent, victims) by the units `new` instead, in
        `removed` and in `victims`: the same pods, so the index is left as it is."""
        for keys in (self.removed, victims):
            keys -= old
            keys |= new


def _reprieve(scratch: _Scratch, victims: set[str], assigned: Assigned,
              book: _Budgets | None,
              order: Callable[[Unit], tuple[object, ...]]) -> tuple[set[str], Assigned]:
    """`SelectVictimsOnNode`'s reprieve over the units `victims` (all absent now, and the
    preemptor fits as `assigned`): `_give_back` over all of them. The units left to evict
    (still absent; surplus members split off) and where the preemptor goes then."""
    victims = set(victims)
    given = _give_back(scratch, victims, set(victims), assigned, book, order)
    return victims, assigned if given is None else given  # never None without `spare`


def _give_back(scratch: _Scratch, victims: set[str], keys: set[str], assigned: Assigned,
               book: _Budgets | None, order: Callable[[Unit], tuple[object, ...]],
               spare: int | None = None) -> Assigned | None:
    """Give the units `keys` (victims, absent) back one at a time, as `SelectVictimsOnNode`
    reprieves pods: with a `book`, those whose eviction would violate a budget first, as
    `filterPodsWithPDBViolation` finds them (the budgets' allowed disruptions taken in
    `_importance` order, so a unit violates when the more important ones used them up), then
    the others, each in `order`; one given back stays if the preemptor still fits, else it
    stays in `victims` (and absent), a gang with a surplus then trimmed at once (`_trim`),
    before any later unit comes back. Where the preemptor goes then.

    `spare`: the units are members of one gang, at most `spare` of which may stay victims,
    each trial spending one of `scratch.member_trials`; None (and `victims` part-way) once
    more would stay or the trials ran out. Without it, the whole reprieve, never None.
    """
    units = sorted((scratch.by_key[key] for key in keys), key=_importance)
    violating = ([False] * len(units) if book is None
                 else book.violating([[pod for _, _, pod in unit.members] for unit in units]))
    flagged = {unit.key for unit, violates in zip(units, violating, strict=True) if violates}
    missed = 0
    for unit in sorted(units, key=lambda u: (u.key not in flagged, *order(u))):
        if spare is not None:
            if scratch.member_trials <= 0:
                return None
            scratch.member_trials -= 1
        scratch.absent(victims - {unit.key})
        kept = scratch.fits()
        if kept is not None:
            victims.discard(unit.key)
            assigned = kept
            continue
        scratch.absent(victims)
        missed += 1
        if spare is not None and missed > spare:
            return None
        assigned = _trim(scratch, victims, unit, assigned, book, order)
    return assigned


def _trim(scratch: _Scratch, victims: set[str], unit: Unit, assigned: Assigned,
          book: _Budgets | None, order: Callable[[Unit], tuple[object, ...]]) -> Assigned:
    """Give back members of the victim gang `unit` (absent, in `victims`, the preemptor fitting
    as `assigned`, the gang not fitting back whole) one at a time (`_give_back`, its members as
    units of one pod, `is_part`, in `order`: `_importance` keeps the most important),
    so that only the members the preemptor needs are evicted, as long as at most `unit.surplus`
    of them go: the gang keeps minMember and runs on. When more would go, or none would come
    back, or the member trials run out, the gang stays one whole victim (and absent). Updates
    `victims` (the gang's key, or the keys of its members still evicted); where the preemptor
    goes then. A unit without surplus (a pod, a member, a gang holding just minMember) is left
    as it is, at no cost. With a `book`, its members that would violate a budget come back
    first, found among its members alone (the allowances as if no other unit were evicted).
    """
    if unit.surplus <= 0:
        return assigned
    parts = {f"{unit.key}#{uid}": Unit(
        f"{unit.key}#{uid}", unit.group, [(uid, row, pod)], priority=pod.priority,
        share=_share(scratch.index, row, pod),
        start=NOT_STARTED if pod.start_ms is None else pod.start_ms, is_part=True)
        for uid, row, pod in unit.members}
    scratch.by_key.update(parts)
    keys = set(parts)
    scratch.rename(victims, {unit.key}, keys)
    trimmed = _give_back(scratch, victims, keys, assigned, book, order, spare=unit.surplus)
    if trimmed is not None and not keys <= victims:
        return trimmed
    victims |= keys  # the whole gang goes, as it did before the trim
    scratch.absent(victims)
    scratch.rename(victims, keys, {unit.key})
    return assigned


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
            index.take(row, index.vector(pod.requests)[0])
            node = index.names[row]
            is_ours = units[key].group != ""
            if pod.host_ports:
                index.set_ports(uid, node, pod.host_ports, is_ours)
            index.set_pod(uid, node, pod, is_ours)
        removed.discard(key)
    for key in sorted(wanted - removed):
        for uid, row, pod in units[key].members:
            index.give(row, index.vector(pod.requests)[0])
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
        (a nil or empty selector matches nothing) loses one allowed disruption per victim not
        already in its `disruptedPods`; a victim that takes one below zero violates it."""
        return sum(self.violating([[pod] for pod in victims]))

    def violating(self, groups: list[list[PodObserved]]) -> list[bool]:
        """Per group of victims (in this order, allowances shared as `violations` takes them),
        whether one of its pods violates a budget."""
        allowed: dict[tuple[str, str], int] = {}
        flags = []
        for pods_of in groups:
            violating = False
            for pod in pods_of:
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
