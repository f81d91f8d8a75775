"""Node scores for one pod: least- or most-allocated plus balanced allocation, minus taints.

Layer: planner core (pure; NumPy). Scores are computed with IEEE float64 operations that are
exact or correctly rounded (integer differences below 2**53, one multiplication by a per-node
`100.0 / allocatable` computed once, floor), so they are identical on every machine and between
the vector form (every node at once) and the scalar form (one node after a placement changed
it). Higher is better; ties are broken by the caller by node name (row order).
"""

from __future__ import annotations

import math

import numpy as np

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


def scores(index: NodeIndex, vec: IntArray, penalty: IntArray, config: PlannerConfig,
           free: IntArray | None = None, rows: IntArray | None = None,
           extra: IntArray | None = None, is_ranking: bool = False) -> FloatArray:
    """The score of placing a pod of requests `vec` on every node (given `free`, default now),
    or only on `rows` (then the result has one entry per row given). `extra`: what the pod's
    missing container requests add (`NodeIndex.extra_vector`), None: nothing. `is_ranking`:
    LeastAllocated is not floored at 0, so nodes where the pod does not fit now still rank by
    how far short they are, and balanced allocation is left out (a starving gang's hold,
    `starvation`).

    Units: 0..100 per node (whole numbers) before penalties.
    Source: as NodeResourcesFit's LeastAllocated ((allocatable - requested) * 100 / allocatable,
    0 past allocatable) and MostAllocated (requested * 100 / allocatable, requested at most
    allocatable) strategies, each floored, averaged over `config.score_resources` and floored;
    requested is the node's non-zero requests (`NodeIndex.extra` on top of what is charged)
    plus the pod's (`vec` + `extra`), as `GetNonZeroRequested` and `NonMissingContainerRequests`
    count them. A node without a resource scores 0 for it. Then NodeResourcesBalancedAllocation's
    score (0..100, weight 1, `balanced_allocation`) is added.
    """
    cols = score_columns(index, config)
    free_now, alloc, scale = index.free if free is None else free, index.alloc, index.scale
    node_extra = index.extra if index.has_extra else None
    if rows is not None:
        free_now, alloc, scale, penalty = (free_now[:, rows], alloc[:, rows], scale[:, rows],
                                           penalty[rows])
        node_extra = None if node_extra is None else node_extra[:, rows]
    size = free_now.shape[1]
    total = np.zeros(size, dtype=np.float64)
    part = np.empty(size, dtype=np.float64)
    for col in cols:
        spare = free_now[col] if node_extra is None else free_now[col] - node_extra[col]
        need = int(vec[col]) + (0 if extra is None else int(extra[col]))
        if config.scoring == MOST_ALLOCATED:
            np.multiply(alloc[col] - spare + need, scale[col], out=part)
            np.floor(part, out=part)
            np.clip(part, 0, MAX_NODE_SCORE, out=part)
        else:
            np.multiply(spare - need, scale[col], out=part)
            np.floor(part, out=part)
            if not is_ranking:
                np.maximum(part, 0, out=part)
        total += part
    if cols:
        total /= len(cols)
        np.floor(total, out=total)
    balance = None if is_ranking else balanced_allocation.pair(index, vec)
    if balance is not None:
        total += balanced_allocation.scores(index, free_now, alloc, vec, balance, rows,
                                            is_current=free is None)
    if penalty.any():
        total -= penalty
    return total


def score_row(index: NodeIndex, row: int, vec: IntArray, penalty: float,
              config: PlannerConfig, extra: IntArray | None = None) -> float:
    """`scores` for one node (Python floats; equal to the vector form)."""
    need = vec if extra is None else vec + extra
    free, alloc = index.free[:, row].tolist(), index.alloc[:, row].tolist()
    score = score_values(spare_row(index, row, free), alloc, index.scale[:, row].tolist(),
                         need.tolist(), penalty, score_columns(index, config),
                         config.scoring == MOST_ALLOCATED)
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


def score_values(spare: list[int], alloc: list[int], scale: list[float], need: list[int],
                 penalty: float, cols: list[int], is_most_allocated: bool) -> float:
    """`score_row` on one node's columns as Python lists (the placement loop's fast path):
    `spare` the row's free capacity less its non-zero extra (`spare_row`), `need` the pod's
    requests with its own extra added."""
    total = 0.0
    for col in cols:
        if is_most_allocated:
            part = float(math.floor((alloc[col] - spare[col] + need[col]) * scale[col]))
            total += min(max(part, 0.0), float(MAX_NODE_SCORE))
        else:
            part = float(math.floor((spare[col] - need[col]) * scale[col]))
            total += max(part, 0.0)
    if cols:
        total = float(math.floor(total / len(cols)))
    return total - penalty


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
