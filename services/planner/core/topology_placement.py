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
  the highest is taken, its trial taken again (`Trial.redo`).

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

from services.contracts.events import PodObserved
from services.planner.core import placement, reasons, scoring
from services.planner.core.capacity import BoolArray, Hold, NodeIndex
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


def generate(index: NodeIndex, key: str, scheduled: list[tuple[str, str]]) -> Generated:
    """The candidate domains of label `key` for a group whose members already scheduled are
    `scheduled` (`(pod "ns/name", node name)` in member order), sorted by value
    (`TopologyPlacement.GeneratePlacements`)."""
    required, error = scheduled_domain(index, key, scheduled)
    if error is not None:
        return Generated([], error)
    domains = [Domain(value, mask, int(np.count_nonzero(mask)))
               for value, mask in index.domains(key) if required is None or value == required]
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
    docstring): each candidate of `generate` tried with `placement.place` restricted to its
    nodes and rolled back, the best fitting one (`choose`) taken again.

    Shapes: `need` how many members the placement must include (0 once quorum is held: a
    domain then fits when it takes one); `node_used[node][resource]` what the pods charged
    to each node request (`PlannerState.node_used`, for `score`); `hold` the starving gang's
    reserved capacity (to explain a failure).
    """
    generated = generate(index, key, scheduled)
    if generated.error is not None:
        return Result(0, None, None, generated.error)
    fitting: list[tuple[Domain, placement.Trial]] = []
    first: tuple[Domain, placement.Trial] | None = None
    for domain in generated.domains:
        trial = placement.place(index, members, config, restrict=domain.mask, hold=hold,
                                need=need)
        trial.rollback()
        if len(trial.assigned) >= max(need, 1):
            fitting.append((domain, trial))
        elif first is None:
            first = (domain, trial)
    placements = len(generated.domains)
    if not fitting:
        return Result(placements, None, first, None)
    chosen = fitting[choose(index, config, fitting, len(scheduled), node_used)]
    chosen[1].redo()
    return Result(placements, chosen, None, None)


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
