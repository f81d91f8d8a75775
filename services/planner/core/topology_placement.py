"""A native PodGroup's topology constraint: the whole gang inside one value of a node label.

Layer: planner core (pure; NumPy). Mirrors Kubernetes 1.36's topology-aware workload
scheduling (alpha gate TopologyAwareWorkloadScheduling) for a `scheduling.k8s.io/v1alpha2`
PodGroup whose `spec.schedulingConstraints.topology[0].key` is set
(`PodGroupObserved.topology_key`):

- `generate`: the TopologyPlacement plugin's `GeneratePlacements`
  (`plugins/topologyaware/topology_placement.go`). One candidate ("placement") per distinct
  value of the label among the nodes carrying it; nodes without the label are never
  candidates. When members of the group are already scheduled (bound, or placed and not yet
  bound: kube-scheduler's assigned and assumed pods, `getScheduledPods`), only their value
  is generated, and members on a node the cluster no longer has, on a node without the
  label, or on two values make the gang unschedulable (`cannot determine domain for already
  scheduled pods: ...`, kube-scheduler's error status). No value at all is
  `RunPlacementGeneratePlugins`' `no feasible placements found`.
- `place`: `podGroupSchedulingPlacementAlgorithm` (`schedule_one_podgroup.go`). The gang is
  placed in each candidate in turn, restricted to its nodes, and the trial rolled back; a
  candidate fits when at least `need` members (at least one) are placed. None fits: the gang
  waits (`0/<n> placements are available, first placement status: ...`, `n` the candidates
  generated). One fits: it is taken. Several: `findBestPlacement` scores each (`score`) and
  the highest is taken, its trial taken again (`Trial.redo`). Candidates that cannot fit
  (`may_fit`) or cannot beat one tried (`upper_bounds`) are not tried: the same outcome at
  the cost of a few trials, where each trial reads the whole index.

Where gangsched differs: each candidate is tried by gangsched's own placement of the whole
gang (`placement.place`: one by one, then the whole-gang search) instead of kube-scheduler's
member-by-member algorithm; the "first placement" whose status is told, random in
kube-scheduler (Go map order), is the candidate of the lowest label value; kube-scheduler
breaks equal scores at random (`Randomizer`), gangsched takes the lowest label value. Label
values are compared as strings (Python's order of code points, Go's of UTF-8 bytes: the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from services.contracts.events import PodGroupObserved, PodObserved
from services.planner.core import placement, reasons, scoring
from services.planner.core.capacity import BoolArray, Hold, IntArray, NodeIndex
from services.planner.core.config import PlannerConfig

POD_GROUP_PODS_COUNT_WEIGHT = 1
"""PodGroupPodsCount's placement score weight (`applyTopologyAwareWorkloadScheduling`)."""
NODE_RESOURCES_FIT_WEIGHT = 1
"""NodeResourcesFit's weight in kube-scheduler's default profile: its `ScorePlacement` is
weighed by it (`placementScorePluginWeight` is read from the same MultiPoint entry)."""


class Domain(NamedTuple):
    """One value of the topology label: kube-scheduler's `Placement` (`Name`, `Nodes`).

    Shapes: `mask[row]` True for the nodes carrying `value`; `size` their number.
    """

    value: str
    mask: BoolArray
    size: int


class Generated(NamedTuple):
    """The candidates of one attempt, by label value; or `error`, why none can be generated
    (the status the gang waits with, `reasons.scheduled_*`, `reasons.no_feasible_placements`),
    then `domains` is empty."""

    domains: list[Domain]
    error: str | None = None


class Result(NamedTuple):
    """What `place` found.

    `chosen`: the domain taken and its trial, whose capacity is taken (the caller commits or
    rolls it back); None when no candidate fits. Then `first` is the lowest candidate and its
    trial (rolled back: its `assigned`, `explanation`, `error` and `note` tell why), or None
    when none was generated (`error` says why). `placements` counts the candidates generated.
    """

    placements: int
    chosen: tuple[Domain, placement.Trial] | None
    first: tuple[Domain, placement.Trial] | None
    error: str | None


def refuses_preemption(podgroup: PodGroupObserved | None) -> bool:
    """Whether the gang of `podgroup` never preempts: its native `spec.schedulingConstraints`
    is set, a topology or even empty (kube-scheduler's DefaultPreemption refuses a PodGroup
    whose constraints are non-nil; gangsched's preemption dry runs would also place a
    constrained gang over every domain), so a nomination it holds lapses too."""
    return podgroup is not None and (podgroup.scheduling_constraints
                                     or podgroup.topology_key is not None)


def generate(index: NodeIndex, key: str, scheduled: list[tuple[str, str]]) -> Generated:
    """The candidate domains of label `key` for a group whose members already scheduled are
    `scheduled` (`(pod "ns/name", node name)` in member order), sorted by value
    (`TopologyPlacement.GeneratePlacements`)."""
    required, error = scheduled_domain(index, key, scheduled)
    if error is not None:
        return Generated([], error)
    values, codes = index.label_codes(key)  # the values of `index.domains(key)`, in order
    sizes = np.bincount(codes[codes >= 0], minlength=len(values)).tolist()
    domains = [Domain(value, mask, size) for (value, mask), size
               in zip(index.domains(key), sizes, strict=True)
               if required is None or value == required]
    if not domains:
        return Generated([], reasons.no_feasible_placements(key))
    return Generated(domains)


def scheduled_domain(index: NodeIndex, key: str,
                     scheduled: list[tuple[str, str]]) -> tuple[str | None, str | None]:
    """The one value of label `key` the nodes of the `scheduled` members carry, and why it
    cannot be told: `(value, None)`; `(None, None)` when none is scheduled; `(None, error)`
    for the first member, in member order, on a node the index lacks or without the label,
    or on another value than those before (`getScheduledPodsTopologyDomain`). A value of ""
    is a value like any other (kube-scheduler's loop reads "" as none found yet, so it
    accepts members on "" and on one other value in one order and refuses them in the other:
    gangsched refuses them in both)."""
    found: str | None = None
    for pod, node in scheduled:
        row = index.row.get(node)
        if row is None:
            return None, reasons.scheduled_node_not_found(pod, node)
        value = index.nodes[row].labels.get(key)
        if value is None:
            return None, reasons.scheduled_node_unlabelled(pod)
        if found is not None and value != found:
            return None, reasons.scheduled_domains_differ(found, value)
        found = value
    return found, None


def place(index: NodeIndex, members: list[PodObserved], config: PlannerConfig, key: str,
          scheduled: list[tuple[str, str]], node_used: Mapping[str, Mapping[str, int]],
          hold: Hold | None = None, need: int = 0) -> Result:
    """Place `members` (pending, in member order) inside one domain of label `key` (module
    docstring): the candidates of `generate` tried with `placement.place` restricted to their
    nodes and rolled back, the best fitting one (`choose`) taken again.

    Shapes: `need` how many members the placement must include (0 once quorum is held: a
    domain then fits when it takes one); `node_used[node][resource]` what the pods charged
    to each node request (`PlannerState.node_used`, for `score`); `hold` the starving gang's
    reserved capacity (to explain a failure).

    Cost: a trial reads every row of the index, so trying each of D domains would cost D
    whole-cluster placements (kube-scheduler's cost a placement is that of its own nodes).
    The result is that of trying every domain, with fewer trials: a domain whose free
    capacity cannot hold `need` members (`may_fit`) is never tried, the others are tried best
    `upper_bounds` first, and none after a domain tried scores at least what the next could
    (`_Tried.is_settled`); the lowest domain is always tried when none fits (its status).
    """
    generated = generate(index, key, scheduled)
    if generated.error is not None:
        return Result(0, None, None, generated.error)
    domains, least = generated.domains, max(need, 1)
    tried = _Tried(index, config, domains, len(scheduled), len(members), node_used)
    for bound, position in _order(index, config, members, least, key, domains, node_used):
        if tried.is_settled(bound, position):
            break
        tried.add(position, _trial(index, members, config, domains[position], hold, need),
                  least)
    fitting = tried.fitting()
    if not fitting:
        first = tried.trials.get(0)
        if first is None:
            first = _trial(index, members, config, domains[0], hold, need)
        return Result(len(domains), None, (domains[0], first), None)
    chosen = fitting[choose(index, config, fitting, len(scheduled), node_used)]
    chosen[1].redo()
    return Result(len(domains), chosen, None, None)


def _trial(index: NodeIndex, members: list[PodObserved], config: PlannerConfig, domain: Domain,
           hold: Hold | None, need: int) -> placement.Trial:
    """The members placed in `domain` alone, rolled back (its `assigned` and reasons kept)."""
    trial = placement.place(index, members, config, restrict=domain.mask, hold=hold, need=need)
    trial.rollback()
    return trial


def _order(index: NodeIndex, config: PlannerConfig, members: list[PodObserved], least: int,
           key: str, domains: list[Domain], node_used: Mapping[str, Mapping[str, int]]
           ) -> list[tuple[int, int]]:
    """The domains worth a trial, as `(upper bound, position in domains)`: those `may_fit`
    lets through, the highest bound first, then by label value (`upper_bounds`; with one,
    no bound is needed: 0)."""
    owner = owners(index, key, domains)
    hopeful = [p for p, ok in enumerate(may_fit(index, members, least, index.free, owner)) if ok]
    if len(hopeful) <= 1:
        return [(0, p) for p in hopeful]
    bounds = upper_bounds(index, config, members, node_used, owner)
    return sorted(((bounds[p], p) for p in hopeful), key=lambda item: (-item[0], item[1]))


class _Tried:
    """The trials of one `place`, by position in `domains`, and when no domain left to try
    can be taken instead of the best one tried.

    `choose`'s total of a fitting domain is exact once a trial placed every member: the
    PodGroupPodsCount normalization's maximum is then `scheduled + members` whatever the
    domains left would place (none places more).
    """

    def __init__(self, index: NodeIndex, config: PlannerConfig, domains: list[Domain],
                 scheduled: int, members: int, node_used: Mapping[str, Mapping[str, int]]
                 ) -> None:
        self.index, self.config, self.domains = index, config, domains
        self.scheduled, self.most, self.node_used = scheduled, scheduled + members, node_used
        self.trials: dict[int, placement.Trial] = {}
        self.fits: list[int] = []
        self.best: tuple[int, int] | None = None
        """`(total, -position)` of the best fitting domain once totals are exact."""

    def add(self, position: int, trial: placement.Trial, least: int) -> None:
        """Record the trial of the domain at `position`, which fits when it placed `least`."""
        self.trials[position] = trial
        if len(trial.assigned) < least:
            return
        self.fits.append(position)
        if self.best is None and self.scheduled + len(trial.assigned) == self.most:
            self.best = max((self._total(p), -p) for p in self.fits)
        elif self.best is not None:
            self.best = max(self.best, (self._total(position), -position))

    def _total(self, position: int) -> int:
        """`choose`'s total of a fitting domain tried, PodGroupPodsCount normalized by
        `most`."""
        placed = [pod for pod, _ in self.trials[position].assigned]
        counted = (self.scheduled + len(placed)) * scoring.MAX_NODE_SCORE // self.most
        return (POD_GROUP_PODS_COUNT_WEIGHT * counted + NODE_RESOURCES_FIT_WEIGHT
                * score(self.index, self.config, self.domains[position], placed, self.node_used))

    def is_settled(self, bound: int, position: int) -> bool:
        """Whether the domain at `position`, and every one after it in `_order` (bounds at
        most `bound`), cannot beat the best one tried: a higher total, or an equal total and
        a lower value."""
        return self.best is not None and self.best > (bound, -position)

    def fitting(self) -> list[tuple[Domain, placement.Trial]]:
        """The fitting domains tried, by label value, with their trials."""
        return [(self.domains[p], self.trials[p]) for p in sorted(self.fits)]


class Owners(NamedTuple):
    """Which domain each node is in: `row[row]` its position in the domains given (-1: in
    none, the label absent or its value not among them); `number` that of the domains."""

    row: IntArray
    number: int


def owners(index: NodeIndex, key: str, domains: list[Domain]) -> Owners:
    """`Owners` of `domains` (values of label `key`), from the index's cached label codes."""
    values, codes = index.label_codes(key)
    position = {domain.value: p for p, domain in enumerate(domains)}
    remap = np.array([position.get(value, -1) for value in values] + [-1], dtype=np.int64)
    return Owners(remap[codes], len(domains))


def may_fit(index: NodeIndex, members: list[PodObserved], least: int, capacity: IntArray,
            owner: Owners) -> list[bool]:
    """Per domain, whether `least` of `members` might fit on `capacity` there: a necessary
    condition, never False where they fit, so a domain it rules out need not be tried.

    Only nodes some member's static filters pass count (`capacity` negative counted 0), and
    members that ask for a resource no node has never fit. Per resource the domain's total
    must hold the `least` smallest requests of it and leave slots for them (`_has_slots`), and
    the domain must have `least` slots of the smallest request of every resource. Shapes:
    `capacity[col, row]` what placement may take (the index's free capacity; a hold's room
    on emptied nodes); units gangsched units.
    """
    vecs: list[IntArray] = []
    passing = np.zeros(len(index), dtype=np.bool_)
    for pod in members:
        vec, _, missing = index.vector(pod.requests)
        if not missing:
            vecs.append(vec)
            passing |= index.static_fit(pod).mask
    if len(vecs) < least:
        return [False] * owner.number
    wanted = np.sort(np.stack(vecs), axis=0)
    rows = np.flatnonzero(passing & (owner.row >= 0))
    where, room = owner.row[rows], np.maximum(capacity[:, rows], 0)
    ok = np.bincount(where, minlength=owner.number) > 0
    for col, amount in enumerate(wanted[:least].sum(axis=0).tolist()):
        ok &= _per_domain(room[col], where, owner.number) >= amount
        ok &= _has_slots(room[col], wanted[:, col], least, where, owner.number)
    smallest = wanted[0]
    cols = np.flatnonzero(smallest > 0)
    if cols.size:
        slots = (room[cols] // smallest[cols][:, None]).min(axis=0)
        ok &= _per_domain(slots, where, owner.number) >= least
    return [bool(value) for value in ok]


def _has_slots(room: IntArray, sizes: IntArray, least: int, where: IntArray,
               count: int) -> BoolArray:
    """Per domain, whether its nodes' `room` of one resource leaves slots for `least` of
    members whose requests of it are `sizes` (sorted): of any `least` of them at least
    `least - k` request `size` or more, `k` those requesting less, and a node holds at most
    `room // size` of those."""
    ok = np.ones(count, dtype=np.bool_)
    for size in sorted(set(sizes[:least].tolist()) - {0}):
        wanted = least - int(np.searchsorted(sizes, size))
        ok &= _per_domain(room // size, where, count) >= wanted
    return ok


def upper_bounds(index: NodeIndex, config: PlannerConfig, members: list[PodObserved],
                 node_used: Mapping[str, Mapping[str, int]], owner: Owners) -> list[int]:
    """Per domain, the highest total `choose` may give it: PodGroupPodsCount's 100 plus
    NodeResourcesFit's `score` with every member placed there (`score` over all domains at
    once: a resource's score only grows with what is placed, the resources scored stay the
    same); 100 for the latter when a resource other than cpu, memory and ephemeral-storage
    is weighed (it leaves the mean when the members placed request none of it)."""
    top = scoring.MAX_NODE_SCORE
    cols = scoring.score_columns(index, config)
    if any(index.resources[col] not in scoring.NATIVE for col in cols):
        return [(POD_GROUP_PODS_COUNT_WEIGHT + NODE_RESOURCES_FIT_WEIGHT) * top] * owner.number
    rows = np.flatnonzero(owner.row >= 0)
    where = owner.row[rows]
    total = np.zeros(owner.number, dtype=np.int64)
    weights = np.zeros(owner.number, dtype=np.int64)
    charged = _charged(index, node_used, cols)
    for i, col in enumerate(cols):
        alloc = np.where(index.alloc[col, rows] > 0, index.alloc[col, rows], 0)
        used = charged[i, rows] + index.extra[col, rows]
        allocatable = _per_domain(alloc, where, owner.number)
        requested = _requested(index, members, col) + _per_domain(
            np.where(alloc > 0, used, 0), where, owner.number)
        some = allocatable > 0
        total[some] += (np.minimum(requested[some], allocatable[some]) * top
                        // allocatable[some])
        weights += some
    fit = np.where(weights > 0, total // np.maximum(weights, 1), 0)
    return [POD_GROUP_PODS_COUNT_WEIGHT * top + NODE_RESOURCES_FIT_WEIGHT * int(value)
            for value in fit]


def _charged(index: NodeIndex, node_used: Mapping[str, Mapping[str, int]],
             cols: list[int]) -> IntArray:
    """`node_used` of the resources `cols` as `[i, row]` (nodes the index lacks left out)."""
    charged = np.zeros((len(cols), len(index)), dtype=np.int64)
    for node, amounts in node_used.items():
        row = index.row.get(node)
        if row is not None:
            charged[:, row] = [amounts.get(index.resources[col], 0) for col in cols]
    return charged


def _requested(index: NodeIndex, members: list[PodObserved], col: int) -> int:
    """What `members` request of column `col` as `score` counts a placed member."""
    amount = 0
    for pod in members:
        extra = index.extra_vector(pod, is_placed=True)
        amount += int(index.vector(pod.requests)[0][col]) + (0 if extra is None
                                                             else int(extra[col]))
    return amount


def _per_domain(values: IntArray, where: IntArray, count: int) -> IntArray:
    """`values` (one per row of `where`) summed per domain position `where` (int64, exact)."""
    sums = np.zeros(count, dtype=np.int64)
    np.add.at(sums, where, values)
    return sums


def choose(index: NodeIndex, config: PlannerConfig,
           fitting: list[tuple[Domain, placement.Trial]], scheduled: int,
           node_used: Mapping[str, Mapping[str, int]]) -> int:
    """The position in `fitting` (by label value, trials rolled back) of the domain taken:
    the only one, else the highest total score, PodGroupPodsCount's (`pods_count_scores`,
    `scheduled` members already scheduled counted in each) plus NodeResourcesFit's
    `ScorePlacement` (`score`), each times its weight; the lowest value among equals
    (`findBestPlacement`, whose tie-break is random)."""
    if len(fitting) == 1:
        return 0
    counts = pods_count_scores([scheduled + len(trial.assigned) for _, trial in fitting])
    best, best_total = 0, -1
    for position, (domain, trial) in enumerate(fitting):
        total = (POD_GROUP_PODS_COUNT_WEIGHT * counts[position]
                 + NODE_RESOURCES_FIT_WEIGHT * score(index, config, domain,
                                                     [pod for pod, _ in trial.assigned],
                                                     node_used))
        if total > best_total:
            best, best_total = position, total
    return best


def pods_count_scores(counts: list[int]) -> list[int]:
    """PodGroupPodsCount's normalized scores: each candidate's members (scheduled before plus
    placed in it) as `0 + count * 100 // max` over the candidates (`NormalizePlacementScore`,
    int64; `counts` non-empty, its largest at least 1: a fitting candidate places one)."""
    highest = max(counts)
    return [count * scoring.MAX_NODE_SCORE // highest for count in counts]


def score(index: NodeIndex, config: PlannerConfig, domain: Domain, placed: list[PodObserved],
          node_used: Mapping[str, Mapping[str, int]]) -> int:
    """NodeResourcesFit's `ScorePlacement`: MostAllocated (whatever `--scoring` says: its
    `placementScorer`) over the domain as one node, in 0..100.

    Source: `resourceAllocationScorer.scorePlacement` with `calculateNodeAllocatableRequest`
    per node: for each resource weighed (`config.score_resources`, weight 1 each), requested
    is what the `placed` members request, a container's missing cpu or memory request counted
    as 100m / 200 MiB (`NonMissingContainerRequests`, `PodObserved.nonzero_own`/`nonzero_extra`),
    plus, on every node of the domain that has some of it allocatable, what the pods charged
    there request (`node_used`; cpu and memory non-zero, `GetNonZeroRequested`: the index's
    `extra`), summed with the node's allocatable; a resource other than cpu, memory and
    ephemeral-storage the members request none of is left out (`IsScalarResourceName`); then
    `mostResourceScorer`: per resource with allocatable, `min(requested, allocatable) * 100 //
    allocatable`, summed and divided by their count (0 when none). Units: gangsched units
    (cpu millicores, bytes). Python integers: equal to Go's int64 while a domain's sums stay
    below 2**63 / 100 (about 92 PB of memory; Go's would wrap beyond). Not mirrored: the
    `placementScorer` is built without the feature flags, so it sums a member's containers
    and ignores pod-level `spec.resources`; gangsched counts the member's effective requests.
    """
    cols = scoring.score_columns(index, config)
    requested = [0] * len(cols)
    for pod in placed:
        vec = index.vector(pod.requests)[0]
        extra = index.extra_vector(pod, is_placed=True)
        for i, col in enumerate(cols):
            requested[i] += int(vec[col]) + (0 if extra is None else int(extra[col]))
    rows: list[int] = np.flatnonzero(domain.mask).tolist()
    total = weights = 0
    for i, col in enumerate(cols):
        name = index.resources[col]
        if requested[i] == 0 and name not in scoring.NATIVE:
            continue
        allocatable = 0
        for row in rows:
            capacity = int(index.alloc[col, row])
            if capacity == 0:
                continue
            allocatable += capacity
            on_node = node_used.get(index.names[row], {})
            requested[i] += on_node.get(name, 0) + int(index.extra[col, row])
        if allocatable == 0:
            continue
        total += min(requested[i], allocatable) * scoring.MAX_NODE_SCORE // allocatable
        weights += 1
    return total // weights if weights else 0


def hold_order(domains: list[Domain], index: NodeIndex, config: PlannerConfig,
               held_before: list[str]) -> list[Domain]:
    """The order a starving gang's hold tries `domains` in (one domain at a time, so that the
    capacity it reserves is where all of it may go): a domain holding a node held last round
    first (the hold does not wander), then the most free capacity now of the first resource
    scored (the least to drain, as `placement._domain_order` ranks domains), then by label
    value."""
    rows = [index.row[name] for name in held_before if name in index.row]
    cols = scoring.score_columns(index, config)
    free = np.maximum(index.free[cols[0]], 0) if cols else None

    def rank(domain: Domain) -> tuple[bool, int, str]:
        room = 0 if free is None else int(free[domain.mask].sum())
        return not any(domain.mask[row] for row in rows), -room, domain.value

    return sorted(domains, key=rank)
