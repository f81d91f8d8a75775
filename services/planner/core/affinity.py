"""Required inter-pod (anti-)affinity over every node at once: InterPodAffinity's filter.

Layer: planner core (pure; NumPy). The rules are `services.fit.pod_affinity`'s; here they are
evaluated for all rows of the node index together. Pods counted: every pod bound or reserved
on an indexed node, whichever scheduler bound it (`NodeIndex.pod_users`), and the members a
placement trial or the whole-gang search placed before the one being judged, so members
constrain each other. Only active (`is_active`) when some member has terms of its own or some
counted pod has required anti-affinity: otherwise the filter passes every node, as
kube-scheduler's PreFilter skips it. Never reads a clock; counts are integer sums, so the
order pods are counted in does not matter.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from services.contracts.events import PodObserved
from services.fit import pod_affinity, reasons
from services.fit.pod_affinity import Counts, Pair
from services.planner.core.capacity import BoolArray, IntArray, NodeIndex
from services.planner.core.search import Fence

PASSES, AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY = 0, 1, 2, 3
REASONS = {AFFINITY: reasons.POD_AFFINITY_MISMATCH,
           ANTI_AFFINITY: reasons.POD_ANTI_AFFINITY_MISMATCH,
           EXISTING_ANTI_AFFINITY: reasons.EXISTING_ANTI_AFFINITY_MISMATCH}
"""Verdict code → the per-node reason (InterPodAffinity's wording)."""


def is_active(index: NodeIndex, members: list[PodObserved]) -> bool:
    """Whether the filter can reject any row for any of `members` (module docstring)."""
    return bool(index.anti_users) or any(pod_affinity.is_involved(pod) for pod in members)


def key(pod: PodObserved) -> tuple[object, ...]:
    """What the filter reads of a pod as the incoming one and as a counted one."""
    return (pod.namespace, tuple(sorted(pod.labels.items())), pod.pod_affinity,
            pod.pod_anti_affinity)


def counts(index: NodeIndex, pod: PodObserved, only_pinned: bool = False) -> Counts:
    """The pre-filter counts of `pod` over the pods on the index (`only_pinned`: of other
    schedulers' pods only, as on nodes emptied of ours). Only the pods `index.lookup` names
    as candidates are visited (`pod_lookup`: the others cannot match)."""
    result = Counts(pod, index.namespaces)
    users = index.pod_users
    candidates: set[str] | None = index.lookup.anti_matching(pod)
    if pod_affinity.is_involved(pod):
        wanted = index.lookup.matching((*pod.pod_affinity, *pod.pod_anti_affinity))
        candidates = None if wanted is None else wanted | (candidates or set())
    counted = users.values() if candidates is None else (users[uid] for uid in candidates)
    for row, other, is_ours in counted:
        if other.uid != pod.uid and not (only_pinned and is_ours):
            result.add(other, index.nodes[row].labels)
    return result


def verdicts(index: NodeIndex, counted: Counts) -> IntArray:
    """Per row, PASSES or the code of the first rule that rejects it (affinity, then
    anti-affinity, then the existing pods' anti-affinity), as InterPodAffinity's Filter."""
    pod = counted.pod
    codes: IntArray = np.zeros(len(index), dtype=np.int64)
    if not len(index):
        return codes
    existing = _rows_of(index, counted.existing_anti)
    codes[existing] = EXISTING_ANTI_AFFINITY
    codes[_rows_of(index, counted.anti)] = ANTI_AFFINITY
    if pod.pod_affinity:
        has_keys = np.ones(len(index), dtype=np.bool_)
        exist = np.ones(len(index), dtype=np.bool_)
        for term in pod.pod_affinity:
            has_keys &= _key_rows(index, term.topology_key)
            exist &= _rows_of(index, (pair for pair in counted.affinity
                                      if pair[0] == term.topology_key))
        is_first = (not counted.affinity
                    and pod_affinity.matches_all(pod.pod_affinity, pod, index.namespaces))
        codes[~(has_keys & (exist | is_first))] = AFFINITY
    return codes


def _rows_of(index: NodeIndex, pairs: Iterable[Pair]) -> BoolArray:
    """Rows carrying any of `pairs` as a label."""
    mask = np.zeros(len(index), dtype=np.bool_)
    for label, value in pairs:
        rows = index.domain_rows(label, value)
        if rows is not None:
            mask |= rows
    return mask


def _key_rows(index: NodeIndex, label: str) -> BoolArray:
    mask = np.zeros(len(index), dtype=np.bool_)
    for _, rows in index.domains(label):
        mask |= rows
    return mask


class Gate:
    """The filter for the members of one placement trial, placed one by one.

    Counts are made per `key` on first need from the index (which holds the members the trial
    placed so far) and kept current by `placed` for every member placed after.
    """

    def __init__(self, index: NodeIndex) -> None:
        self.index = index
        self._counts: dict[tuple[object, ...], Counts] = {}

    def verdicts(self, pod: PodObserved) -> IntArray:
        """Per row, the verdict for `pod` now (see `verdicts`)."""
        counted = self._counts.get(key(pod))
        if counted is None:
            counted = self._counts[key(pod)] = counts(self.index, pod)
        return verdicts(self.index, counted)

    def placed(self, pod: PodObserved, row: int) -> None:
        """`pod` was just placed on `row` (and recorded on the index)."""
        labels = self.index.nodes[row].labels
        for counted in self._counts.values():
            counted.add(pod, labels)


def fence(index: NodeIndex, members: list[PodObserved],
          only_pinned: bool = False) -> tuple[Fence, IntArray]:
    """The filter for the whole-gang search, and a class per row equal for rows it cannot
    tell apart while no member is placed on them.

    Shapes: the class id is per row; rows share one when they carry the same value of every
    topology key any member or counted pod reads, or each the only node with its value and no
    pod counted there yet (interchangeable, as hostnames are).
    """
    shared: dict[tuple[object, ...], Counts] = {}
    bases = [shared.setdefault(key(pod), counts(index, pod, only_pinned)) for pod in members]

    def allowed(member: int, placed: list[tuple[int, int]]) -> BoolArray:
        counted = bases[member]
        if placed:
            counted = counted.copy()
            for other, row in placed:
                counted.add(members[other], index.nodes[row].labels)
        passing: BoolArray = verdicts(index, counted) == PASSES
        return passing

    return allowed, _classes(index, members, bases)


def _classes(index: NodeIndex, members: list[PodObserved], bases: list[Counts]) -> IntArray:
    counted: set[Pair] = set()
    keys: set[str] = set()
    for pod, base in zip(members, bases, strict=True):
        counted |= base.pairs()
        keys.update(term.topology_key for term in pod.pod_affinity + pod.pod_anti_affinity)
    keys.update(label for label, _ in counted)
    columns = [np.full(len(index), -1, dtype=np.int64)]
    for label in sorted(keys):
        column = np.full(len(index), -1, dtype=np.int64)
        for number, (value, rows) in enumerate(index.domains(label)):
            is_fresh = int(rows.sum()) == 1 and (label, value) not in counted
            column[rows] = -2 if is_fresh else number
        columns.append(column)
    classes: IntArray = np.unique(np.column_stack(columns), axis=0,
                                  return_inverse=True)[1].reshape(-1).astype(np.int64)
    return classes
