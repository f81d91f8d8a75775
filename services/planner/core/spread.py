"""Pod topology spread (DoNotSchedule) over every node at once: PodTopologySpread's filter.

Layer: planner core (pure; NumPy). The rules are `services.fit.topology_spread`'s; here they
are evaluated for all rows of the node index together. Pods counted: every pod bound or
reserved on an indexed node, whichever scheduler bound it (`NodeIndex.pod_users`), and the
members a placement trial or the whole-gang search placed before the one being judged, so a
gang spreads over its own members (4 members, zone maxSkew 1, 2 zones: 2 + 2). Only active
(`is_active`) when some member has a DoNotSchedule constraint: otherwise the filter passes
every node, as kube-scheduler's PreFilter skips it. Never reads a clock; counts are integer
sums, so the order pods are counted in does not matter.
"""

from __future__ import annotations

import numpy as np

from services.contracts.events import PodObserved
from services.fit import filters, reasons, topology_spread
from services.fit.topology_spread import Spread
from services.planner.core.capacity import BoolArray, IntArray, NodeIndex
from services.planner.core.search import Fence

PASSES, MISSING_LABEL, SKEW = 0, 1, 2
REASONS = {MISSING_LABEL: reasons.SPREAD_MISSING_LABEL, SKEW: reasons.SPREAD_CONSTRAINTS_MISMATCH}
"""Verdict code → the per-node reason (PodTopologySpread's wording)."""


def is_active(members: list[PodObserved]) -> bool:
    """Whether the filter can reject any row for any of `members` (module docstring)."""
    return any(topology_spread.is_spread(pod) for pod in members)


def unconstrained(members: list[PodObserved]) -> list[bool]:
    """Per member, whether it has no DoNotSchedule constraint: the search's second pass
    places those first (`search.solve`'s `leading`)."""
    return [not topology_spread.is_spread(pod) for pod in members]


def key(pod: PodObserved) -> tuple[object, ...]:
    """What the filter reads of a pod as the incoming one (constraints, labels, namespace,
    node affinity and tolerations for the inclusion policies) and as a counted one."""
    return (pod.namespace, tuple(sorted(pod.labels.items())), pod.topology_spread,
            tuple(sorted(pod.node_selector.items())), pod.required_affinity, pod.tolerations,
            pod.is_deleting)


class Counted:
    """`topology_spread.Counts` of one incoming pod over the index rows, as arrays.

    Shapes, per constraint `i`: `columns[i][row]` the number of the row's domain (its value of
    the topology key, numbered as `NodeIndex.domains`), -1 without the key; `eligible[i][row]`
    whether pods on the row count (every constraint's key and the inclusion policies);
    `counts[i][d]` pods counted in domain `d`, `row_counts[i][row]` those on each row;
    `is_domain[i][d]` whether `d` is eligible. `action`: which constraints (DoNotSchedule for
    the filter, ScheduleAnyway for the score, `spread_score`).
    """

    def __init__(self, index: NodeIndex, pod: PodObserved, only_pinned: bool = False,
                 action: str = topology_spread.DO_NOT_SCHEDULE) -> None:
        self.index = index
        self.pod = pod
        self.spreads = topology_spread.spreads(pod, action)
        self.columns: list[IntArray] = []
        self.eligible: list[BoolArray] = []
        self.counts: list[IntArray] = []
        self.is_domain: list[BoolArray] = []
        self.row_counts: list[IntArray] = []
        has_keys = np.ones(len(index), dtype=np.bool_)
        for spread in self.spreads:
            column = np.full(len(index), -1, dtype=np.int64)
            for number, (_, rows) in enumerate(index.domains(spread.topology_key)):
                column[rows] = number
            self.columns.append(column)
            has_keys &= column >= 0
        for spread, column in zip(self.spreads, self.columns, strict=True):
            eligible = has_keys & _included(index, spread, pod)
            self.eligible.append(eligible)
            size = len(index.domains(spread.topology_key))
            self.is_domain.append(np.bincount(column[eligible], minlength=size) > 0)
            self.counts.append(np.zeros(size, dtype=np.int64))
            self.row_counts.append(np.zeros(len(index), dtype=np.int64))
        if not self.spreads:
            return
        users = index.pod_users
        candidates = index.lookup.selected(spread.selector for spread in self.spreads)
        counted = users.values() if candidates is None else (users[uid] for uid in candidates)
        for row, other, is_ours in counted:  # the others match no selector (`pod_lookup`)
            if other.uid != pod.uid and not (only_pinned and is_ours):
                self.add(other, row)

    def copy(self) -> Counted:
        """A copy whose counts change apart (the rest is shared: it never changes)."""
        other = object.__new__(Counted)
        other.__dict__.update(self.__dict__)
        other.counts = [counts.copy() for counts in self.counts]
        other.row_counts = [counts.copy() for counts in self.row_counts]
        return other

    def add(self, other: PodObserved, row: int, sign: int = 1) -> None:
        """Count (`sign` 1) or uncount (-1) pod `other` on `row`."""
        for i, spread in enumerate(self.spreads):
            if (self.eligible[i][row]
                    and topology_spread.is_counted(spread, self.pod.namespace, other)):
                self.counts[i][self.columns[i][row]] += sign
                self.row_counts[i][row] += sign

    def counted_domains(self) -> set[tuple[str, int]]:
        """(topology key, domain number) of every domain with a pod counted."""
        return {(spread.topology_key, int(domain))
                for spread, counts in zip(self.spreads, self.counts, strict=True)
                for domain in np.flatnonzero(counts)}

    def verdicts(self) -> IntArray:
        """Per row, PASSES or the code of the first constraint (in spec order) that rejects
        it: MISSING_LABEL without its key, SKEW when the pod would exceed its maxSkew there."""
        codes: IntArray = np.zeros(len(self.index), dtype=np.int64)
        for i in reversed(range(len(self.spreads))):
            spread, column, counts = self.spreads[i], self.columns[i], self.counts[i]
            domains = int(self.is_domain[i].sum())
            minimum = (0 if domains < spread.min_domains
                       else int(counts[self.is_domain[i]].min(initial=topology_spread.NO_MINIMUM)))
            here = (np.where(column >= 0, counts[np.maximum(column, 0)], 0) if len(counts)
                    else np.zeros(len(column), dtype=np.int64))
            skewed = (column >= 0) & (here + topology_spread.self_match(spread, self.pod)
                                      - minimum > spread.max_skew)
            codes[column < 0] = MISSING_LABEL
            codes[skewed] = SKEW
        return codes


def _included(index: NodeIndex, spread: Spread, pod: PodObserved) -> BoolArray:
    """Rows passing the constraint's node inclusion policies for `pod`."""
    mask = np.ones(len(index), dtype=np.bool_)
    if spread.honors_affinity and (pod.node_selector or pod.required_affinity is not None):
        mask &= np.array([filters.node_affinity(pod, node) is None for node in index.nodes],
                         dtype=np.bool_)
    if spread.honors_taints:
        for row, node in enumerate(index.nodes):
            if node.taints and filters.taint_toleration(pod, node) is not None:
                mask[row] = False
    return mask


class Gate:
    """The filter for the members of one placement trial, placed one by one.

    Counts are made per `key` on first need from the index (which holds the members the trial
    placed so far) and kept current by `placed` for every member placed after.
    """

    def __init__(self, index: NodeIndex, action: str = topology_spread.DO_NOT_SCHEDULE) -> None:
        self.index = index
        self.action = action
        self._counts: dict[tuple[object, ...], Counted] = {}

    def counted(self, pod: PodObserved) -> Counted:
        """`pod`'s counts now (made on first need, then kept current by `placed`)."""
        counted = self._counts.get(key(pod))
        if counted is None:
            counted = self._counts[key(pod)] = Counted(self.index, pod, action=self.action)
        return counted

    def verdicts(self, pod: PodObserved) -> IntArray:
        """Per row, the verdict for `pod` now (see `Counted.verdicts`)."""
        return self.counted(pod).verdicts()

    def placed(self, pod: PodObserved, row: int) -> None:
        """`pod` was just placed on `row` (and recorded on the index)."""
        for counted in self._counts.values():
            counted.add(pod, row)


def fence(index: NodeIndex, members: list[PodObserved],
          only_pinned: bool = False) -> tuple[Fence, IntArray]:
    """The filter for the whole-gang search, and a class per row equal for rows it cannot
    tell apart while no member is placed on them.

    Shapes: the class id is per row; rows share one when, for every constraint of every
    member, they are in the same domain (or each the only row of its domain, with no pod
    counted there: interchangeable, as hostnames are) and equally eligible.
    """
    shared: dict[tuple[object, ...], Counted] = {}
    bases = [shared.setdefault(key(pod), Counted(index, pod, only_pinned)) for pod in members]

    def allowed(member: int, placed: list[tuple[int, int]]) -> BoolArray:
        counted = bases[member]
        if placed:
            counted = counted.copy()
            for other, row in placed:
                counted.add(members[other], row)
        passing: BoolArray = counted.verdicts() == PASSES
        return passing

    return allowed, _classes(index, list(shared.values()))


def _classes(index: NodeIndex, bases: list[Counted]) -> IntArray:
    counted: set[tuple[str, int]] = set()
    for base in bases:
        counted |= base.counted_domains()
    columns = [np.zeros(len(index), dtype=np.int64)]
    for base in bases:
        for spread, column, eligible in zip(base.spreads, base.columns, base.eligible,
                                            strict=True):
            sizes = np.bincount(column[column >= 0], minlength=1)
            fresh = np.array([sizes[domain] == 1 and (spread.topology_key, domain) not in counted
                              for domain in range(len(sizes))], dtype=np.bool_)
            is_fresh = (column >= 0) & fresh[np.maximum(column, 0)]
            columns += [np.where(is_fresh, -2, column), eligible.astype(np.int64)]
    classes: IntArray = np.unique(np.column_stack(columns), axis=0,
                                  return_inverse=True)[1].reshape(-1).astype(np.int64)
    return classes
