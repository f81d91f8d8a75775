"""Anti-starvation: the first gang in queue order that has waited too long reserves capacity.

Layer: planner core (pure; NumPy). Design: once a gang has waited unplaced for
`starvation_seconds`, the planner picks the nodes it would occupy if those nodes were empty
(respecting every non-resource filter, preferring the nodes with the most free capacity now) and,
for the rest of the round, takes the gang's requests on those nodes from the free capacity seen by
every group queued behind it. Smaller, later groups therefore stop filling the capacity it is
waiting for, while groups ahead of it (higher priority, or older) and nodes it does not need are
unaffected. The hold is recomputed every round, so it disappears the moment the gang is placed or
deleted, and only one gang (the first starving one in queue order) holds at a time: no deadlock
between holders. A gang that would not fit even on empty nodes holds nothing.

"Empty" means emptied of what can be expected to drain: gangsched's own pods (jobs that finish,
or that the gang's operator controls). Pods bound by other schedulers (DaemonSets, services,
other teams' workloads) stay: a gang that would fit only if they left would hold capacity it can
never get, starving every later group for good. Such a gang holds
nothing and is placed when capacity frees up like any other. Whether the gang fits on emptied
nodes is decided as its placement is: one by one, then for mixed members the whole-gang search
(`search`, same budget), so a gang that fits only by the search is not declared never-fitting.
The host ports of other schedulers' pods stay too; those of gangsched's pods drain, and so do
their inline disks, ReadWriteOncePod claims and attached volumes (`Volumes.verdict`'s
`only_pinned`). Members count for each other as in placement (`volumes.Choices`, the search's
storage fence): two that can never share the only node make a gang that never fits. The hold
reserves requests only: host ports, disks and attach slots on the held nodes stay free for
later groups (docs/design-notes.md, "Volumes"). A gang whose PodGroup's `minResources` exceed
what emptied nodes offer (`may_meet_min_resources`) never fits either and holds nothing; one
that could meet them holds its members' requests only, not the headroom beyond them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec
import numpy as np

from services.contracts import resources
from services.contracts.events import HostPort, PodGroupObserved, PodObserved
from services.fit import filters
from services.planner.core import fences, placement, scoring, search, spread, volumes
from services.planner.core.capacity import BoolArray, FloatArray, Hold, IntArray, NodeIndex
from services.planner.core.config import LEAST_ALLOCATED, PlannerConfig
from services.planner.core.state import Charge, GroupState, PlannerState

STICKY_BONUS = 1
"""Tie-break bonus (scores are doubled first) of a node the gang already held."""


def is_starving(group: GroupState, now_ms: int, config: PlannerConfig) -> bool:
    """Whether the group has waited unplaced for at least `starvation_seconds`."""
    since = group.pending_since_ms
    return since is not None and now_ms - since >= config.starvation_seconds * 1000


def pinned_usage(state: PlannerState, index: NodeIndex, scheduler_name: str) -> IntArray:
    """Capacity used on each node by pods of other schedulers (module docstring).

    Shapes: like `index.alloc` (resources by nodes), in gangsched units. Cost: one pass over
    every charged pod; the caller computes it at most once per round.
    """
    pinned: IntArray = np.zeros_like(index.alloc)
    _add_pinned(state, index, pinned, state.charges, scheduler_name, 1)
    return pinned


def pinned_but_members(state: PlannerState, index: NodeIndex, pinned: IntArray,
                       members: Iterable[str], scheduler_name: str) -> IntArray:
    """`pinned` without what the group's own members (pod uids `members`) of other schedulers
    use: Coscheduling's `CheckClusterResource` counts every pod of the PodGroup as free,
    whichever scheduler placed it. Shapes: like `pinned` (a copy; `pinned` is not changed)."""
    own = {uid: state.charges[uid] for uid in members if uid in state.charges}
    mine: IntArray = pinned.copy()
    _add_pinned(state, index, mine, own, scheduler_name, -1)
    return mine


def _add_pinned(state: PlannerState, index: NodeIndex, pinned: IntArray,
                charges: Mapping[str, Charge], scheduler_name: str, sign: int) -> None:
    """Add (`sign` 1) or take back (-1) into `pinned` the charges of other schedulers' pods."""
    for uid, charge in charges.items():  # integer sums: the order does not matter
        pod = state.pods.get(uid)
        if pod is None or pod.scheduler_name == scheduler_name:
            continue
        row = index.row.get(charge.node)
        if row is None:
            continue
        for name, amount in charge.requests.items():
            col = index.col.get(name)
            if col is not None:
                pinned[col, row] += sign * amount


def may_meet_min_resources(index: NodeIndex, podgroup: PodGroupObserved,
                           pinned: IntArray) -> bool:
    """Whether the PodGroup's `minResources`, and one pod slot per `minMember`, would fit in
    the cluster's capacity once emptied of gangsched's pods (`pinned`: what other schedulers'
    pods use, the group's own members left out: see `pinned_but_members`).

    Shapes: summed over every node as Coscheduling's `CheckClusterResource` sums free capacity
    (a node over-committed by other schedulers adds nothing); units gangsched units (cpu
    millicores, bytes, counts). False means the gang can never pass that check however long it
    waits, so it holds nothing: a hold would only keep later groups out for good.
    """
    wanted = {**podgroup.min_resources, resources.PODS: podgroup.min_member}
    for name, amount in wanted.items():
        col = index.col.get(name)
        room = 0 if col is None else int(np.maximum(index.alloc[col] - pinned[col], 0).sum())
        if amount > room:
            return False
    return True


def plan_hold(index: NodeIndex, key: str, pending: list[PodObserved], need: int,
              config: PlannerConfig, held_before: list[str],
              pinned: IntArray | None = None, restrict: BoolArray | None = None) -> Hold | None:
    """The capacity `need` of the `pending` members would take on nodes emptied of all but
    `pinned` (what other schedulers' pods use, see `pinned_usage`), or None if no `need` of
    them fit there.

    Shapes: `pending` the gang's pending members in member order, `need` how many quorum
    still needs (1 <= need). The first `need` are tried first (one by one, then searched for a
    mixed gang); when they never fit, the members that do, in member order, one by one (a
    member that can never fit, whatever its name, does not make the gang hold nothing while
    `need` others would fit; reference C.3). `held_before` the nodes it held last round:
    among nodes equally free they are preferred again, so the hold does not wander between
    equally drained nodes (it would never drain any of them), while a node that frees up more
    takes over. `restrict`: the only rows it may hold (one topology domain of a gang whose
    PodGroup requires one, `topology_placement`), None: any.
    """
    room: IntArray = index.alloc.copy() if pinned is None else index.alloc - pinned
    sticky = np.zeros(len(index), dtype=np.int64)
    sticky[[index.row[name] for name in held_before if name in index.row]] = STICKY_BONUS
    members = pending[:need]
    fence = fences.fence(index, members, only_pinned=True)
    rows = _one_by_one(index, members, room.copy(), index.free.copy(), sticky, config, fence,
                       restrict)
    if rows is None and members and (not placement.is_uniform(members, fence is not None)
                                     or placement.is_storage_mutual(index, members)):
        if placement.is_storage_mutual(index, members):
            fence = placement.storage_fence(index, members, fence, only_pinned=True)
        rows = _searched(index, members, room, index.free.copy(), sticky, config, fence,
                         restrict)
    if rows is None and len(pending) > need \
            and fences.fence(index, pending, only_pinned=True) is None:
        members, rows = _first_fitting(index, pending, need, room.copy(), index.free.copy(),
                                       sticky, config, restrict)
    if rows is None:
        return None
    amounts: IntArray = np.zeros_like(index.alloc)
    for pod, row in zip(members, rows, strict=True):
        amounts[:, row] += index.vector(pod.requests)[0]
    held_rows = [int(row) for row in np.flatnonzero(amounts.any(axis=0))]
    held = np.minimum(amounts, np.maximum(index.free, 0))
    return Hold(key, held, held_rows)


def _one_by_one(index: NodeIndex, members: list[PodObserved], room: IntArray,
                free_now: IntArray, sticky: IntArray, config: PlannerConfig,
                fence: tuple[search.Fence, IntArray] | None = None,
                restrict: BoolArray | None = None) -> list[int] | None:
    """Each member's row in member order, each on the best spread row left among `restrict`
    (None: all; the same below) (None: one fails)."""
    rows: list[int] = []
    placed_ports: dict[int, list[HostPort]] = {}
    choices = volumes.Choices()
    for position, pod in enumerate(members):
        allowed = None if fence is None else fence[0](position, list(enumerate(rows)))
        if restrict is not None:
            allowed = restrict if allowed is None else allowed & restrict
        row = _best_row(index, pod, room, free_now, sticky, config, placed_ports, choices,
                        allowed)
        if row is None:
            return None
        _take(index, pod, row, room, free_now, placed_ports, choices)
        rows.append(row)
    return rows


def _take(index: NodeIndex, pod: PodObserved, row: int, room: IntArray, free_now: IntArray,
          placed_ports: dict[int, list[HostPort]], choices: volumes.Choices) -> None:
    """`pod` takes `row` in the hold being planned: its requests, host ports and volumes."""
    vec = index.vector(pod.requests)[0]
    room[:, row] -= vec
    free_now[:, row] -= vec
    placed_ports.setdefault(row, []).extend(pod.host_ports)
    if index.volumes is not None and volumes.is_judged(pod):
        index.volumes.place(pod, row, choices)


def _first_fitting(index: NodeIndex, pending: list[PodObserved], need: int, room: IntArray,
                   free_now: IntArray, sticky: IntArray, config: PlannerConfig,
                   restrict: BoolArray | None = None
                   ) -> tuple[list[PodObserved], list[int] | None]:
    """The first `need` members that fit one by one in member order, each on the best spread
    row left, skipping those that do not, and their rows (None: fewer than `need` fit). Only
    for members without a fence (no spread or inter-pod constraints among them)."""
    chosen: list[PodObserved] = []
    rows: list[int] = []
    placed_ports: dict[int, list[HostPort]] = {}
    choices = volumes.Choices()
    for pod in pending:
        row = _best_row(index, pod, room, free_now, sticky, config, placed_ports, choices,
                        restrict)
        if row is None:
            continue
        _take(index, pod, row, room, free_now, placed_ports, choices)
        chosen.append(pod)
        rows.append(row)
        if len(chosen) == need:
            return chosen, rows
    return chosen, None


def _searched(index: NodeIndex, members: list[PodObserved], room: IntArray, free_now: IntArray,
              sticky: IntArray, config: PlannerConfig,
              fence: tuple[search.Fence, IntArray] | None = None,
              restrict: BoolArray | None = None) -> list[int] | None:
    """Each member's row by the whole-gang search on the emptied nodes `room` among
    `restrict` (None: all) (None: none)."""
    gang, _ = placement.search_members(index, members, restrict, config, only_pinned=True)
    spread_config = msgspec.structs.replace(config, scoring=LEAST_ALLOCATED)
    def rank(member: int, rows: IntArray) -> FloatArray:
        penalty = index.static_fit(members[member]).penalty
        return (scoring.scores(index, gang[member].vec, penalty, spread_config, free=free_now,
                               rows=rows, is_ranking=True,
                               extra=index.extra_vector(members[member], is_placed=True))
                * 2 + sticky[rows])
    pinned_rows = sorted(row for row in index.row_ports if index.ports_on(row, only_pinned=True))
    outcome = search.solve(room, gang, len(members), config.search_budget_steps, rank,
                           lambda row: index.ports_on(row, only_pinned=True), pinned_rows,
                           others=[free_now], fence=fence,
                           is_order_free=not spread.is_active(members),
                           leading=spread.unconstrained(members))
    if outcome.rows is None:
        return None
    return [row for row in outcome.rows if row is not None]


def _best_row(index: NodeIndex, pod: PodObserved, room: IntArray, free_now: IntArray,
              sticky: IntArray, config: PlannerConfig,
              placed_ports: dict[int, list[HostPort]], choices: volumes.Choices,
              allowed: BoolArray | None = None) -> int | None:
    """The best spread row for `pod` on the emptied nodes `room`, after the members placed
    before it (`placed_ports`, `choices`), or None."""
    static = index.static_fit(pod)
    vec, cols, missing = index.vector(pod.requests)
    if missing:
        return None
    mask = static.mask.copy() if allowed is None else static.mask & allowed
    if index.volumes is not None and volumes.is_judged(pod):
        mask &= index.volumes.verdict(pod, choices, only_pinned=True).mask
    for col in cols:
        mask &= room[col] >= vec[col]
    if pod.host_ports:
        for row in sorted(set(index.row_ports) | set(placed_ports)):
            used = index.ports_on(row, only_pinned=True) + tuple(placed_ports.get(row, ()))
            if mask[row] and filters.node_ports(pod.host_ports, used) is not None:
                mask[row] = False
    if not mask.any():
        return None
    spread_config = msgspec.structs.replace(config, scoring=LEAST_ALLOCATED)
    spread = scoring.scores(index, vec, static.penalty, spread_config, free=free_now,
                            is_ranking=True,
                            extra=index.extra_vector(pod, is_placed=True)) * 2 + sticky
    return int(np.argmax(np.where(mask, spread, scoring.UNFIT)))


def apply_hold(index: NodeIndex, hold: Hold) -> None:
    """Take the held capacity from the free capacity later groups see."""
    index.shift(hold.amounts, 1)


def lift_hold(index: NodeIndex, hold: Hold) -> None:
    """Give the held capacity back at the end of the round."""
    index.shift(hold.amounts, -1)
