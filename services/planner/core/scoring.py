"""Node scores for one pod: least- or most-allocated plus balanced allocation, minus taints.

Layer: planner core (pure; NumPy). NodeResourcesFit's scores are computed in int64 as the Go
code computes them (amounts below 2**48, so `amount * 100` never overflows; floor division of
non-negative numbers, which is Go's truncation), balanced allocation in the Go code's float64
operations, so they are identical on every machine, to kube-scheduler's, and between the vector
form (every node at once) and the scalar form (one node after a placement changed it). Higher
is better; ties are broken by the caller by node name (row order).
"""

from __future__ import annotations

import math

import numpy as np

from services.contracts import resources
from services.planner.core import balanced_allocation
from services.planner.core.capacity import BoolArray, FloatArray, IntArray, NodeIndex
from services.planner.core.config import MOST_ALLOCATED, PlannerConfig

MAX_NODE_SCORE = 100
TAINT_WEIGHT = 3
"""TaintToleration's score weight in kube-scheduler's default profile."""
UNFIT = -math.inf
"""Score of a node the pod does not fit; never chosen."""


def score_columns(index: NodeIndex, config: PlannerConfig) -> list[int]:
    """The index columns of the resources the strategy weighs (equal weights)."""
    return [index.col[name] for name in config.score_resources if name in index.col]


NATIVE = (resources.CPU, resources.MEMORY, resources.EPHEMERAL_STORAGE)
"""The resources NodeResourcesFit scores whether the pod requests them or not; any other
(extended, hugepages-*) only when the pod requests some (`IsScalarResourceName`)."""


def weighed_columns(index: NodeIndex, config: PlannerConfig, need: list[int]) -> list[int]:
    """`score_columns` for a pod whose requests with its non-zero extra are `need` (one int per
    index column): without the non-native resources it requests none of, which the plugin
    leaves out (`podRequests[i] == 0 && IsScalarResourceName`)."""
    return [col for col in score_columns(index, config)
            if need[col] > 0 or index.resources[col] in NATIVE]


def scores(index: NodeIndex, vec: IntArray, penalty: IntArray, config: PlannerConfig,
           free: IntArray | None = None, rows: IntArray | None = None,
           extra: IntArray | None = None, is_ranking: bool = False) -> FloatArray:
    """The score of placing a pod of requests `vec` on every node (given `free`, default now),
    or only on `rows` (then the result has one entry per row given). `extra`: what the pod's
    missing container requests add (`NodeIndex.extra_vector`), None: nothing. `is_ranking`:
    LeastAllocated is not floored at 0, so nodes where the pod does not fit now still rank by
    how far short they are, and balanced allocation is left out (a starving gang's hold,
    `starvation`).

    Units: 0..100 per node (whole numbers) before balance and penalties.
    Source: as NodeResourcesFit's LeastAllocated ((allocatable - requested) * 100 / allocatable,
    0 past allocatable) and MostAllocated (requested * 100 / allocatable, requested at most
    allocatable) strategies in int64 arithmetic, summed over the resources weighed
    (`weighed_columns`) the node has some of and divided by their count (0 when none);
    requested is the node's non-zero requests (`NodeIndex.extra` on top of what is charged)
    plus the pod's (`vec` + `extra`), as `GetNonZeroRequested` and `NonMissingContainerRequests`
    count them. Then NodeResourcesBalancedAllocation's score (0..100, weight 1,
    `balanced_allocation`) is added.
    """
    need = vec if extra is None else vec + extra
    cols = weighed_columns(index, config, need.tolist())
    free_now, alloc = index.free if free is None else free, index.alloc
    divisor = index.divisor
    node_extra = index.extra if index.has_extra else None
    if rows is not None:
        free_now, alloc, divisor, penalty = (free_now[:, rows], alloc[:, rows],
                                             divisor[:, rows], penalty[rows])
        node_extra = None if node_extra is None else node_extra[:, rows]
    size = free_now.shape[1]
    total = np.zeros(size, dtype=np.int64)
    weights = np.zeros(size, dtype=np.int64)
    for col in cols:
        spare = free_now[col] if node_extra is None else free_now[col] - node_extra[col]
        if config.scoring == MOST_ALLOCATED:
            part = np.minimum(alloc[col] - spare + int(need[col]), alloc[col])
            part *= MAX_NODE_SCORE
            part //= divisor[col]
            np.clip(part, 0, MAX_NODE_SCORE, out=part)
        else:
            part = spare - int(need[col])
            part *= MAX_NODE_SCORE
            part //= divisor[col]
            if not is_ranking:
                np.maximum(part, 0, out=part)
        present = alloc[col] > 0
        part *= present
        total += part
        weights += present
    np.maximum(weights, 1, out=weights)
    result: FloatArray = (total // weights).astype(np.float64)
    balance = None if is_ranking else balanced_allocation.pair(index, vec)
    if balance is not None:
        result += balanced_allocation.scores(index, free_now, alloc, vec, balance, rows,
                                             is_current=free is None)
    if penalty.any():
        result -= penalty
    return result


def score_row(index: NodeIndex, row: int, vec: IntArray, penalty: float,
              config: PlannerConfig, extra: IntArray | None = None) -> float:
    """`scores` for one node (Python floats; equal to the vector form)."""
    need = (vec if extra is None else vec + extra).tolist()
    free, alloc = index.free[:, row].tolist(), index.alloc[:, row].tolist()
    score = score_values(spare_row(index, row, free), alloc, need, penalty,
                         weighed_columns(index, config, need), config.scoring == MOST_ALLOCATED)
    balance = balanced_allocation.pair(index, vec)
    if balance is not None:
        score += balanced_allocation.value(free, alloc, vec.tolist(), balance)
    return score


def spare_row(index: NodeIndex, row: int, free: list[int]) -> list[int]:
    """One row's free capacity `free` (a column list) less what the missing container requests
    of the pods there add (`NodeIndex.extra`): what the scores read as unrequested."""
    if not index.has_extra:
        return free
    return [amount - extra for amount, extra in zip(free, index.extra[:, row].tolist(),
                                                    strict=True)]


def score_values(spare: list[int], alloc: list[int], need: list[int], penalty: float,
                 cols: list[int], is_most_allocated: bool) -> float:
    """`score_row` on one node's columns as Python lists (the placement loop's fast path):
    `spare` the row's free capacity less its non-zero extra (`spare_row`), `need` the pod's
    requests with its own extra added, `cols` its `weighed_columns`."""
    total = weights = 0
    for col in cols:
        capacity = alloc[col]
        if capacity <= 0:
            continue
        if is_most_allocated:
            part = min(capacity - spare[col] + need[col], capacity) * MAX_NODE_SCORE // capacity
            total += min(max(part, 0), MAX_NODE_SCORE)
        else:
            total += max((spare[col] - need[col]) * MAX_NODE_SCORE // capacity, 0)
        weights += 1
    return float(total // max(weights, 1)) - penalty


def taint_penalty(untolerated: IntArray, feasible: BoolArray) -> FloatArray:
    """What TaintToleration's score takes from each `feasible` row (0 elsewhere), from the
    per-row counts of untolerated PreferNoSchedule taints (`StaticFit.untolerated`).

    Shapes: one entry per row; whole numbers 0..`TAINT_WEIGHT * MAX_NODE_SCORE`.
    Source: as TaintToleration's Score (the count) and NormalizeScore
    (`DefaultNormalizeScore(MaxNodeScore, true)`: `100 - 100 * count / max` in int64 over the
    filtered nodes, all 100 when max is 0), weight 3: the score is `300 - penalty`, and the 300
    every feasible row gets alike is left out (it changes no choice).
    """
    result: FloatArray = np.zeros(len(feasible), dtype=np.float64)
    if not feasible.any():
        return result
    high = int(untolerated[feasible].max())
    if high > 0:
        result[feasible] = TAINT_WEIGHT * (MAX_NODE_SCORE * untolerated[feasible] // high)
    return result
