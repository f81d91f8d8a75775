"""Trial placement of a group's pending members: greedy first, then a whole-gang search; undoable.

Layer: planner core (pure; NumPy). A trial takes capacity (and host ports) from the node index
as it goes so each member sees the members placed before it; the caller either keeps the result
(and turns it into reservations) or rolls the whole trial back, so a gang never holds capacity
partially. Members are first placed in the order given, each on the highest-scored node that
passes every filter (ties: lowest node name). When that leaves members out and the members
differ (requests, filters, host ports), the gang is solved together by `search` (largest first,
bounded backtracking); members that are all alike need no search, as one by one already places
as many of them as any order could.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from services.contracts.events import PodObserved
from services.fit import filters, pod_affinity
from services.fit import reasons as fit_reasons
from services.planner.core import (
    affinity,
    affinity_score,
    balanced_allocation,
    fences,
    image_locality,
    node_affinity_score,
    reasons,
    scoring,
    search,
    spread,
    spread_score,
    volumes,
    wakes,
)
from services.planner.core.capacity import (
    BoolArray,
    CachedScores,
    FloatArray,
    Hold,
    IntArray,
    NodeIndex,
    StaticFit,
    signature,
)
from services.planner.core.config import MOST_ALLOCATED, PlannerConfig
from services.planner.core.state import CountedChange

NODE_AFFINITY = "NodeAffinity"
"""The plugin whose PreScore fails a pod with preferred terms it cannot parse."""

CHANGE_LOG_ROWS_PER_NODE = 4
"""Past this many logged row changes per node, cached scores are dropped and the log reset."""
ROW_BY_ROW_ROWS = 8
"""Most changed rows whose cached scores are recomputed one row at a time (`_Shape.score_row`,
a few microseconds a row) rather than in one NumPy pass (tens of microseconds, however few
the rows): a trial that failed usually took and gave back one or two rows."""

Ranker = Callable[[IntArray], FloatArray]
"""A member's preference for each of the rows given (its score there now)."""


class _Shape:
    """Everything about one (filters, requests) shape of pod, with its live score per node."""

    def __init__(self, index: NodeIndex, pod: PodObserved, config: PlannerConfig,
                 restrict: BoolArray | None, key: tuple[object, ...]) -> None:
        self.static: StaticFit = index.static_fit(pod)
        self.vec, self.cols, self.missing = index.vector(pod.requests)
        self.extra = index.extra_vector(pod, is_placed=True)
        self.allowed = self.static.mask if restrict is None else self.static.mask & restrict
        self.vec_list: list[int] = self.vec.tolist()
        self.need_list: list[int] = (self.vec_list if self.extra is None
                                     else (self.vec + self.extra).tolist())
        self.balance = balanced_allocation.pair(index, self.vec)
        self.score_cols = scoring.weighed_columns(index, config, self.need_list)
        self.is_most = config.scoring == MOST_ALLOCATED
        self.config = config
        self.no_penalty: IntArray = np.zeros(len(index), dtype=np.int64)
        """Resources only: the taints are scored over the feasible rows (`_one_by_one`)."""
        if self.missing:
            self.scores: FloatArray = np.full(len(index), scoring.UNFIT, dtype=np.float64)
        elif restrict is not None:
            self.scores = self._compute(index, None)
        else:
            self.scores = self._cached(index, key)

    def _compute(self, index: NodeIndex, rows: IntArray | None) -> FloatArray:
        allowed = self.allowed if rows is None else self.allowed[rows]
        fit = allowed & index.fits(self.vec, self.cols, rows)
        scores = scoring.scores(index, self.vec, self.no_penalty, self.config, rows=rows,
                                extra=self.extra)
        return np.where(fit, scores, scoring.UNFIT)

    def _cached(self, index: NodeIndex, key: tuple[object, ...]) -> FloatArray:
        """Scores kept across trials: only the rows changed since the last use are recomputed
        (gangs of one shape share them; the vector and row forms agree bit for bit)."""
        if len(index.changes) > CHANGE_LOG_ROWS_PER_NODE * len(index) + 1024:
            index.forget_scores()
        cache_key = (*key, self.config.scoring, self.config.score_resources)
        entry = index.score_cache.get(cache_key)
        if entry is None:
            entry = index.score_cache[cache_key] = CachedScores(self._compute(index, None),
                                                                len(index.changes))
            return entry.scores
        changed = index.changes[entry.position:]
        if len(changed) * 4 > len(index):
            entry.scores[:] = self._compute(index, None)
        elif len(changed) <= ROW_BY_ROW_ROWS:
            for row in set(changed):
                entry.scores[row] = self.score_row(index, row, index.free[:, row].tolist())
        else:
            rows = np.unique(np.array(changed, dtype=np.int64))
            entry.scores[rows] = self._compute(index, rows)
        entry.position = len(index.changes)
        return entry.scores

    def rescore(self, index: NodeIndex, row: int, free: list[int]) -> None:
        """Score `row` again after its free capacity (`free`, a column list) changed."""
        self.scores[row] = self.score_row(index, row, free)

    def score_row(self, index: NodeIndex, row: int, free: list[int]) -> float:
        """The score of `row` given its free capacity `free` (one int per index column):
        `_compute`'s for that row, bit for bit (`scoring.score_values`), `scoring.UNFIT` where
        a filter or the capacity refuses it. Units: whole numbers 0..200 (resources and balance),
        or -inf."""
        vec = self.vec_list
        if self.missing or not self.allowed[row] or any(free[c] < vec[c] for c in self.cols):
            return scoring.UNFIT
        alloc = index.alloc[:, row].tolist()
        score = scoring.score_values(scoring.spare_row(index, row, free), alloc, self.need_list,
                                     0.0, self.score_cols, self.is_most)
        if self.balance is not None:
            score += balanced_allocation.value(free, alloc, vec, self.balance)
        return score


class Trial:
    """One attempt to place members; capacity taken so far can be given back with `rollback`.

    Shapes: `assigned` (pod, node row) in placement order; `unplaced` pods in member order;
    `explanation` the per-node reasons of the first unplaced pod, or None; `error` instead the
    whole reason when that pod failed otherwise than node by node (NodeAffinity's PreScore, see
    `_is_prescore_failed`), or None; `note` a suffix for
    the gang's reason (the whole-gang search ran out of budget), or ""; `choices` what the
    members placed took of storage (`volumes.Choices`), `claims[uid]` each one's choices for
    its unbound WaitForFirstConsumer claims.
    """

    def __init__(self, index: NodeIndex) -> None:
        self.index = index
        self.choices = volumes.Choices()
        self.claims: dict[str, list[volumes.Choice]] = {}
        self.assigned: list[tuple[PodObserved, int]] = []
        self.unplaced: list[PodObserved] = []
        self.explanation: dict[str, int] | None = None
        self.error: str | None = None
        self.note = ""
        self._taken: list[tuple[PodObserved, int, IntArray, IntArray | None]] = []

    def take(self, pod: PodObserved, row: int, vec: IntArray) -> None:
        """Take `pod`'s requests `vec` (and count its non-zero extra) on `row`, with its host
        ports, its inter-pod count and its storage choices."""
        extra = self.index.extra_vector(pod)
        self.index.take(row, vec, extra)
        if pod.host_ports:
            self.index.set_ports(pod.uid, self.index.names[row], pod.host_ports)
        self.index.set_pod(pod.uid, self.index.names[row], pod)
        self._taken.append((pod, row, vec, extra))
        self.assigned.append((pod, row))
        if self.index.volumes is not None and volumes.is_judged(pod):
            self.claims[pod.uid] = self.index.volumes.place(pod, row, self.choices)

    def commit(self) -> None:
        """Keep the capacity taken: the caller now records it as reservations."""
        self._taken.clear()

    def redo(self) -> None:
        """Take again, in the same order, what this trial placed before its `rollback` (the
        index as it was then: other trials since rolled back too), storage choices made anew."""
        placed = list(self.assigned)
        self.assigned.clear()
        for pod, row in placed:
            self.take(pod, row, self.index.vector(pod.requests)[0])

    def rollback(self) -> None:
        """Give back all capacity this trial took (idempotent)."""
        for pod, row, vec, extra in reversed(self._taken):
            self.index.give(row, vec, extra)
            if pod.host_ports:
                self.index.set_ports(pod.uid, None, ())
            self.index.set_pod(pod.uid, None, None)
        self._taken.clear()
        self.choices = volumes.Choices()
        self.claims.clear()


def place(index: NodeIndex, members: list[PodObserved], config: PlannerConfig,
          restrict: BoolArray | None = None, hold: Hold | None = None,
          need: int | None = None) -> Trial:
    """Place `members`, taking their capacity from `index`: all of them if some placement holds
    them all, else at least `need` (default: all) if one is found, else as many as fit one by
    one (module docstring; with `need` given, the passes `_place_left` makes stop once `need`
    is out of reach).

    Shapes: `restrict` limits the candidate rows (gang locality); `hold` is capacity a starving
    gang reserves, already taken from `index.free`, used only to explain a failure.
    """
    trial = _one_by_one(index, members, config, restrict, hold)
    is_searched = (bool(trial.unplaced) and config.search_budget_steps != 0
                   and not (is_uniform(members, affinity.is_active(index, members))
                            and not is_storage_mutual(index, members)))
    if is_searched:
        target = len(members) if need is None or len(trial.assigned) >= need else need
        trial = _search(index, members, config, restrict, hold, trial, target)
    return _place_left(index, members, config, restrict, hold, trial, need or 0)


def _place_left(index: NodeIndex, members: list[PodObserved], config: PlannerConfig,
                restrict: BoolArray | None, hold: Hold | None, trial: Trial,
                need: int) -> Trial:
    """Try the trial's unplaced members again, one by one in member order, in passes, when
    members may let others pass once placed (required pod affinity, DoNotSchedule topology
    spread: the first members placed may be what a member refused before needed). Each pass
    tries only the members a member placed since their last try may matter to
    (`wakes.may_matter`, as for a pod newly counted: the filters of a member nothing placed
    matters to can only refuse it again), as kube-scheduler requeues a pod on those plugins'
    assigned-Pod events only when their queueing hints say the pod may now pass; passes end
    when none is left to try, or when fewer than `need` members could then be placed (the
    placed ones and those some member may matter to; `need` 0: never). Then no member left
    unplaced would fit where the trial leaves room (but when `need` is out of reach). Its
    `unplaced` are in member order and its `explanation` is that of the first of them on what
    the trial leaves.

    Cost: one filter evaluation per member tried, so about twice the members when each pass
    places one (a chain of members each needing the next), instead of a pass over every
    member left per member placed.
    """
    if not trial.unplaced or not (spread.is_active(members)
                                  or any(pod.pod_affinity for pod in members)):
        return trial
    order = {pod.uid: i for i, pod in enumerate(members)}
    watches = {pod.uid: wakes.watch(pod) for pod in members}
    everyone = _as_changes(members, index.namespaces)
    helpable = {w: everyone.latest(w, 0) > 0 for w in set(watches.values()) if w is not None}
    newly = [pod for pod, _ in trial.assigned]
    explained: PodObserved | None = trial.unplaced[0]
    while trial.unplaced:
        retry: list[PodObserved] = []
        hopeful = sum(1 for pod in trial.unplaced
                      if (w := watches[pod.uid]) is not None and helpable[w])
        if newly and len(trial.assigned) + hopeful >= need:
            placed = _as_changes(newly, index.namespaces)
            matters = {w: placed.latest(w, 0) > 0 for w in
                       {watches[pod.uid] for pod in trial.unplaced} if w is not None}
            retry = [pod for pod in trial.unplaced
                     if (w := watches[pod.uid]) is not None and matters[w]]
        if not retry:
            if trial.unplaced[0] is explained:
                break
            retry = [trial.unplaced[0]]  # explain the first one left on what is left now
        tried = {pod.uid for pod in retry}
        kept = [pod for pod in trial.unplaced if pod.uid not in tried]
        start = len(trial.assigned)
        trial.unplaced, trial.explanation, trial.error = [], None, None
        _one_by_one(index, retry, config, restrict, hold, trial)
        newly = [pod for pod, _ in trial.assigned[start:]]
        explained = trial.unplaced[0] if trial.unplaced else None
        trial.unplaced = sorted(kept + trial.unplaced, key=lambda pod: order[pod.uid])
    return trial


def _as_changes(pods: list[PodObserved], namespaces: pod_affinity.Namespaces) -> wakes.Changes:
    """`pods` as pods newly counted, looked up by label (`wakes.Changes`), a term's
    `namespaceSelector` matched against `namespaces`."""
    return wakes.Changes([CountedChange(pod.uid, None, i + 1, pod.namespace, pod.labels)
                          for i, pod in enumerate(pods)], namespaces)


def is_uniform(members: list[PodObserved], is_affine: bool = False) -> bool:
    """Whether all members are interchangeable: then one by one already places as many as any
    placement could (each node takes as many as fit there, whatever the others take).

    `is_affine`: inter-pod affinity is active; members must then also be alike to it, have no
    pod affinity (the first member's domain binds the rest) and anti-affinity on at most one
    topology key (one member per domain: any choice of node in a domain is as good). Members
    with topology spread constraints never are: which domains the first ones take decides
    where the rest may go.
    """
    first = members[0]
    if spread.is_active(members):
        return False
    if is_affine and (first.pod_affinity
                      or len({term.topology_key for term in first.pod_anti_affinity}) > 1):
        return False
    return all(_same_shape(pod, first) and pod.host_ports == first.host_ports
               and (not is_affine or affinity.key(pod) == affinity.key(first))
               for pod in members[1:])


def is_storage_mutual(index: NodeIndex, members: list[PodObserved]) -> bool:
    """Whether some member's volume filters depend on the members placed before it."""
    return index.volumes is not None and any(index.volumes.is_mutual(pod) for pod in members)


def member_shape(pod: PodObserved, is_affine: bool = False,
                 is_spread: bool = False) -> tuple[object, ...]:
    """What makes two members interchangeable: filters, requests, host ports, claims, inline
    disks and migrated inline volumes (and, when inter-pod affinity or topology spread is
    active, what each reads of them)."""
    shape = (signature(pod), tuple(sorted(pod.requests.items())), pod.host_ports,
             pod.namespace if pod.volume_claims else "", pod.volume_claims, pod.disks,
             pod.migrated_volumes)
    return (*shape, affinity.key(pod) if is_affine else None,
            spread.key(pod) if is_spread else None)


def _search(index: NodeIndex, members: list[PodObserved], config: PlannerConfig,
            restrict: BoolArray | None, hold: Hold | None, greedy: Trial, target: int) -> Trial:
    """The whole-gang search for `target` members; `greedy` (rolled back and taken again)
    when it finds none. When it finds `target` members (a quorum) and leaves others out, those
    are then placed one by one, in member order, on what is left (`_one_by_one`: the same
    filters and scores), and only those that still fit nowhere are `unplaced`: Coscheduling
    places every pod that fits once minMember are assigned."""
    if target == len(members) and (_fits_nowhere(index, greedy, restrict)
                                   or _is_short_in_total(index, members, restrict, greedy)):
        return greedy
    taken = [(pod, row) for pod, row in greedy.assigned]
    greedy.rollback()
    gang, ranks = search_members(index, members, restrict, config)
    fence = fences.fence(index, members)
    if is_storage_mutual(index, members):
        fence = storage_fence(index, members, fence)
    if any(member.extra is not None for member in gang):
        index.has_extra = True  # the search counts them in `index.extra` as it places them
    outcome = search.solve(index.free, gang, target, config.search_budget_steps,
                           lambda m, rows: ranks[m](rows), index.ports_on, sorted(index.row_ports),
                           fence=fence, is_order_free=not spread.is_active(members),
                           leading=spread.unconstrained(members), counted=index.extra)
    if outcome.rows is None:
        greedy.assigned.clear()
        for pod, taken_row in taken:
            greedy.take(pod, taken_row, index.vector(pod.requests)[0])
        if outcome.is_exhausted:
            greedy.note = reasons.search_exhausted(config.search_budget_steps)
        return greedy
    trial = Trial(index)
    for position in outcome.order:  # the order the fence judged them in (storage choices)
        row = outcome.rows[position]
        if row is not None:
            trial.take(members[position], row, gang[position].vec)
    left = [pod for pod, row in zip(members, outcome.rows, strict=True) if row is None]
    if left:  # quorum found: every other member that fits joins it, as Coscheduling places them
        _one_by_one(index, left, config, restrict, hold, trial)
    return trial


def _volume_verdict(index: NodeIndex, pod: PodObserved,
                    choices: volumes.Choices) -> volumes.Verdict | None:
    """The volume filters for `pod` after the members that took `choices` (None: no claims nor
    inline disks)."""
    if index.volumes is None or not volumes.is_judged(pod):
        return None
    return index.volumes.verdict(pod, choices)


def storage_fence(index: NodeIndex, members: list[PodObserved],
                  inner: tuple[search.Fence, IntArray] | None,
                  only_pinned: bool = False) -> tuple[search.Fence, IntArray]:
    """The search's fence with the volume filters added: member `m` may take the rows its
    volume verdict passes after the members placed so far, in their order, took theirs
    (`only_pinned`: on nodes emptied of gangsched's pods, `Volumes.verdict`)."""
    storage = index.volumes
    assert storage is not None
    row_classes = volumes.classes(storage, members)
    if inner is not None:
        row_classes = np.unique(np.column_stack((inner[1], row_classes)), axis=0,
                                return_inverse=True)[1].reshape(-1).astype(np.int64)

    def allowed(member: int, placed: list[tuple[int, int]]) -> BoolArray:
        choices = volumes.Choices()
        for other, row in placed:
            storage.place(members[other], row, choices)
        mask: BoolArray = storage.verdict(members[member], choices, only_pinned).mask
        return mask & inner[0](member, placed) if inner is not None else mask

    return allowed, row_classes


def _is_short_in_total(index: NodeIndex, members: list[PodObserved], restrict: BoolArray | None,
                       greedy: Trial) -> bool:
    """Whether all members together request more of some resource than the nodes any of them
    may use have free (before `greedy` took its share): no search could place them all. The
    search checks this too; here it costs no rollback (the common case of a full cluster)."""
    union = np.zeros(len(index), dtype=np.bool_)
    total = np.zeros(len(index.resources), dtype=np.int64)
    for pod in members:
        vec, _, missing = index.vector(pod.requests)
        if missing:
            return True
        union |= index.static_fit(pod).mask
        total += vec
    if restrict is not None:
        union &= restrict
    free = np.maximum(index.free[:, union], 0).sum(axis=1)
    for pod, _ in greedy.assigned:  # each took only what was free on a row of `union`
        free += index.vector(pod.requests)[0]
    return bool((total > free).any())


def _fits_nowhere(index: NodeIndex, greedy: Trial, restrict: BoolArray | None) -> bool:
    """Whether some member `greedy` left out fits no node even alone, with what `greedy` took
    given back (host ports aside): no search could place it."""
    taken: dict[int, IntArray] = {}
    for pod, row in greedy.assigned:
        taken[row] = taken.get(row, 0) + index.vector(pod.requests)[0]
    checked: list[PodObserved] = []
    for pod in greedy.unplaced:
        if any(_same_shape(pod, other) for other in checked):
            continue
        checked.append(pod)
        vec, cols, missing = index.vector(pod.requests)
        allowed = index.static_fit(pod).mask
        if restrict is not None:
            allowed = allowed & restrict
        if missing:
            return True
        if (allowed & index.fits(vec, cols)).any():
            continue
        if not any(allowed[row] and all(index.free[col, row] + back[col] >= vec[col]
                                        for col in cols) for row, back in sorted(taken.items())):
            return True
    return False


def search_members(index: NodeIndex, members: list[PodObserved], restrict: BoolArray | None,
                   config: PlannerConfig,
                   only_pinned: bool = False) -> tuple[list[search.Member], list[Ranker]]:
    """The search's view of `members` on `index` (same order), and each one's node ranking:
    its resource score now, less `PREFER_NO_SCHEDULE_PENALTY` per untolerated PreferNoSchedule
    taint (a ranking of the rows given, before the search knows which rows are feasible: the
    taints are not normalized as one-by-one placement scores them, nor are the scorers of
    `_one_by_one` added). A member whose preferred terms do not parse may take a row only when
    its filters leave it a single one (at most one node is feasible, so kube-scheduler would
    never run its PreScore); else the search never places it, and one by one afterwards
    places it only where it is the only feasible node (`_is_prescore_failed`). `only_pinned`:
    the volume filters judge nodes emptied of gangsched's pods (the anti-starvation hold)."""
    shapes: dict[tuple[object, ...], int] = {}
    gang, ranks = [], []
    is_affine = affinity.is_active(index, members)
    is_spread = spread.is_active(members)
    for pod in members:
        static = index.static_fit(pod)
        vec, cols, missing = index.vector(pod.requests)
        allowed = static.mask if restrict is None else static.mask & restrict
        if missing:
            allowed = np.zeros(len(index), dtype=np.bool_)
        if index.volumes is not None and volumes.is_judged(pod):
            allowed = allowed & index.volumes.verdict(pod, only_pinned=only_pinned).mask
        if pod.preferred_unparseable is not None and int(np.count_nonzero(allowed)) > 1:
            allowed = np.zeros(len(index), dtype=np.bool_)  # left to one by one: PreScore
        shape = shapes.setdefault(member_shape(pod, is_affine, is_spread),
                                len(shapes))
        gang.append(search.Member(vec, cols, allowed, pod.host_ports, shape,
                                  index.extra_vector(pod)))
        ranks.append(_ranker(index, vec, static.penalty, config,
                             index.extra_vector(pod, is_placed=True)))
    return gang, ranks


def _ranker(index: NodeIndex, vec: IntArray, penalty: IntArray, config: PlannerConfig,
            extra: IntArray | None) -> Ranker:
    """A member's ranking as the search places members: on `index.free` as it is then (the
    search takes from it without logging `index.changes`, so nothing kept is read)."""
    return lambda rows: scoring.scores(index, vec, penalty, config, free=index.free, rows=rows,
                                       extra=extra)


def _one_by_one(index: NodeIndex, members: list[PodObserved], config: PlannerConfig,
                restrict: BoolArray | None, hold: Hold | None,
                trial: Trial | None = None) -> Trial:
    """Members in order, each on its best-scored node now (the greedy fast path). Into `trial`
    when given (members it placed already count, on the index and in its storage choices),
    whose `unplaced` and `explanation` must still be empty: those of `members` are set."""
    trial = Trial(index) if trial is None else trial
    gate = affinity.Gate(index) if affinity.is_active(index, members) else None
    spread_gate = spread.Gate(index) if spread.is_active(members) else None
    scorer = spread_score.Scorer(index) if spread_score.is_active(members) else None
    affine_scorer = (affinity_score.Scorer(index) if affinity_score.is_active(index, members)
                     else None)
    node_scorer = (node_affinity_score.Scorer(index) if node_affinity_score.is_active(members)
                   else None)
    is_imaged = image_locality.is_active(index, members)
    shapes: dict[tuple[object, ...], _Shape] = {}
    shape: _Shape | None = None
    previous: PodObserved | None = None
    for pod in members:
        if (shape is None or previous is None or not _same_shape(pod, previous)
                or (pod.nonzero_extra, pod.nonzero_own)
                != (previous.nonzero_extra, previous.nonzero_own)):
            # the key only caches shapes: equal pods with differently ordered dicts get two
            own = pod.nonzero_extra if pod.nonzero_own is None else pod.nonzero_own
            key = (signature(pod), tuple(pod.requests.items()), tuple(own.items()))
            shape = shapes.get(key)
            if shape is None:
                shape = shapes[key] = _Shape(index, pod, config, restrict, key)
        previous = pod
        scores = shape.scores
        if pod.host_ports and index.row_ports:
            scores = np.where(index.ports_free(pod.host_ports), scores, scoring.UNFIT)
        verdicts = None if gate is None else gate.verdicts(pod)
        if verdicts is not None:
            scores = np.where(verdicts == affinity.PASSES, scores, scoring.UNFIT)
        storage = _volume_verdict(index, pod, trial.choices)
        if storage is not None:
            scores = np.where(storage.mask, scores, scoring.UNFIT)
        spreads = None if spread_gate is None else spread_gate.verdicts(pod)
        if spreads is not None:
            scores = np.where(spreads == spread.PASSES, scores, scoring.UNFIT)
        if (scorer is not None or affine_scorer is not None or node_scorer is not None
                or shape.static.has_untolerated or is_imaged):
            feasible = scores != scoring.UNFIT
            if shape.static.has_untolerated:
                scores = scores - scoring.taint_penalty(shape.static.untolerated, feasible)
            if scorer is not None:
                scores = scores + scorer.scores(pod, feasible)
            if affine_scorer is not None:
                scores = scores + affine_scorer.scores(pod, feasible)
            if node_scorer is not None:
                scores = scores + node_scorer.scores(pod, feasible)
            if is_imaged:
                scores = scores + image_locality.scores(index, pod)
        row = int(scores.argmax()) if len(index) else -1
        if row >= 0 and scores[row] != scoring.UNFIT and _is_prescore_failed(pod, scores):
            if trial.explanation is None:
                trial.explanation = {}
                trial.error = reasons.prescore_failed(NODE_AFFINITY,
                                                      str(pod.preferred_unparseable))
            trial.unplaced.append(pod)
            continue
        if row < 0 or scores[row] == scoring.UNFIT:
            if trial.explanation is None:
                trial.explanation = explain(index, pod, shape.static, hold, verdicts, spreads,
                                            storage, restrict)
            trial.unplaced.append(pod)
            continue
        trial.take(pod, row, shape.vec)
        if gate is not None:
            gate.placed(pod, row)
        if spread_gate is not None:
            spread_gate.placed(pod, row)
        if scorer is not None:
            scorer.placed(pod, row)
        if affine_scorer is not None:
            affine_scorer.placed(pod, row)
        free = index.free[:, row].tolist()
        for other in shapes.values():
            other.rescore(index, row, free)
    return trial


def _is_prescore_failed(pod: PodObserved, scores: FloatArray) -> bool:
    """Whether NodeAffinity's PreScore fails `pod` given its `scores` (UNFIT where a filter
    fails): its preferred terms do not parse (`PodObserved.preferred_unparseable`) and two or
    more nodes pass the filters. kube-scheduler's `schedulePod` takes the only feasible node
    unscored ("When only one node after predicate, just use it"), so with one the pod binds;
    with more, PreScore's error fails the attempt (SchedulerError, no preemption)."""
    return (pod.preferred_unparseable is not None
            and int(np.count_nonzero(scores != scoring.UNFIT)) > 1)


def _same_shape(pod: PodObserved, other: PodObserved) -> bool:
    """Whether two pods filter and request alike (consecutive members usually do)."""
    return (pod.requests == other.requests and pod.node_selector == other.node_selector
            and pod.volume_claims == other.volume_claims and pod.namespace == other.namespace
            and pod.disks == other.disks and pod.migrated_volumes == other.migrated_volumes
            and pod.tolerations == other.tolerations
            and pod.required_affinity == other.required_affinity
            and pod.node_name == other.node_name
            and pod.required_features == other.required_features)


def place_preferring_domain(index: NodeIndex, members: list[PodObserved], config: PlannerConfig,
                            bound_rows: list[int], hold: Hold | None = None,
                            need: int | None = None) -> Trial:
    """Place all `members` under one value of the topology label if some value holds them all.

    Domains are tried with the group's already-bound members' domain first, then by free
    capacity of the first scored resource (most first), then by label value; when no single
    domain holds every member, members are placed over all nodes.
    """
    domains = index.domains(config.topology_key)
    if len(members) > 1 or bound_rows:
        for _, mask in _domain_order(index, domains, bound_rows, config):
            trial = place(index, members, config, restrict=mask, hold=hold,
                          need=len(members))  # all or none here: no pass once out of reach
            if not trial.unplaced:
                return trial
            trial.rollback()
    return place(index, members, config, hold=hold, need=need)


def _domain_order(index: NodeIndex, domains: list[tuple[str, BoolArray]], bound_rows: list[int],
                  config: PlannerConfig) -> list[tuple[str, BoolArray]]:
    cols = scoring.score_columns(index, config)
    ranked = []
    for value, mask in domains:
        bound_here = sum(1 for row in bound_rows if mask[row])
        free = int(np.maximum(index.free[cols[0]], 0)[mask].sum()) if cols else 0
        ranked.append((-bound_here, -free, value, mask))
    ranked.sort(key=lambda item: item[:3])
    return [(value, mask) for _, _, value, mask in ranked]


def explain(index: NodeIndex, pod: PodObserved, static: StaticFit,
            hold: Hold | None, verdicts: IntArray | None = None,
            spreads: IntArray | None = None,
            storage: volumes.Verdict | None = None,
            restrict: BoolArray | None = None) -> dict[str, int]:
    """Why no node takes `pod` now: per-node reason → number of nodes (kube-scheduler style);
    with `restrict`, of the rows it marks only (the nodes of one topology domain, as
    kube-scheduler's snapshot holds only a placement's nodes while it tries the placement).

    A node that passes the other filters gives its host ports' conflict (NodePorts runs before
    NodeResourcesFit), else one reason per insufficient resource; a node that would fit but for
    a starving gang's reserved capacity gives that reason instead; a node that fits gives its
    volume reasons (`storage`: VolumeRestrictions, VolumeBinding, VolumeZone), else its
    topology spread reason (`spreads`, see `spread.Counted.verdicts`), else its inter-pod
    affinity reason (`verdicts`, see `affinity.verdicts`), else NodeDeclaredFeatures' where it
    lacks a feature the pod requires (`StaticFit.lacking`), in kube-scheduler's filter order.
    """
    counts: Counter[str] = Counter(static.reason_counts if restrict is None
                                   else _static_reasons(index, pod, static, restrict))
    vec, cols, missing = index.vector(pod.requests)
    passing = static.mask.copy() if static.lacking is None else static.mask | static.lacking
    if restrict is not None:
        passing &= restrict
    if pod.host_ports:
        conflicts = passing & ~index.ports_free(pod.host_ports)
        if conflicts.any():
            counts[fit_reasons.NODE_PORTS] += int(conflicts.sum())
            passing &= ~conflicts
    if hold is not None and not missing:
        held = passing & _fits_with(index, vec, cols, hold.amounts) & ~index.fits(vec, cols)
        if held.any():
            counts[reasons.held_for_gang(hold.group)] += int(held.sum())
            passing &= ~held
    for name in missing:
        counts[fit_reasons.insufficient(name)] += int(passing.sum())
    for col in cols:
        short = int((passing & (index.free[col] < vec[col])).sum())
        if short:
            counts[fit_reasons.insufficient(index.resources[col])] += short
    if missing:
        return dict(counts)
    passing &= index.fits(vec, cols)
    if storage is not None:
        for reason, count in volumes.counts(storage, passing).items():
            counts[reason] += count
        passing &= storage.mask
    if spreads is not None:
        for code, reason in sorted(spread.REASONS.items()):
            rejected = int((passing & (spreads == code)).sum())
            if rejected:
                counts[reason] += rejected
        passing &= spreads == spread.PASSES
    if verdicts is not None:
        for code, reason in sorted(affinity.REASONS.items()):
            rejected = int((passing & (verdicts == code)).sum())
            if rejected:
                counts[reason] += rejected
        passing &= verdicts == affinity.PASSES
    if static.lacking is not None:
        lacking = int((passing & static.lacking).sum())
        if lacking:
            counts[fit_reasons.NODE_DECLARED_FEATURES] += lacking
    return dict(counts)


def _static_reasons(index: NodeIndex, pod: PodObserved, static: StaticFit,
                    restrict: BoolArray) -> dict[str, int]:
    """`static.reason_counts` over the rows `restrict` marks: the first failing filter's
    reason → number of those nodes (`filters.static_reason`, judged again row by row: only
    to explain a failure)."""
    counts: Counter[str] = Counter()
    for row in np.flatnonzero(restrict & ~static.mask).tolist():
        reason = filters.static_reason(pod, index.nodes[row])
        if reason is not None:  # None: it lacks a declared feature (`static.lacking`)
            counts[reason] += 1
    return dict(counts)


def _fits_with(index: NodeIndex, vec: IntArray, cols: list[int], hold: IntArray) -> BoolArray:
    mask = np.ones(len(index), dtype=np.bool_)
    for col in cols:
        mask &= index.free[col] + hold[col] >= vec[col]
    return mask
