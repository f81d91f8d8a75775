"""NodeResourcesBalancedAllocation's score: prefer the node whose cpu and memory stay balanced.

Layer: planner core (pure; NumPy). Source: kube-scheduler 1.36's BalancedAllocation plugin
(`balanced_allocation.go`, weight 1 in the default profile, no normalization), over its default
resources cpu and memory, with the requests as given (`useRequested`: no defaults for missing
requests, unlike NodeResourcesFit's score). Per node, each resource's fraction is requested /
allocatable, at most 1, a resource the node has none of left out; the balance is
`int64((1 - std) * 100)` where std is |cpu - memory| / 2 with both fractions, else 0; the score
is `50 + (50 + balance with the pod - balance without it) / 2`, the division truncating toward
zero as Go's does. A pod requesting neither cpu nor memory is skipped (`isBestEffortPod`: its
PreScore returns Skip), which adds the same to every node: 0 here.

The float64 operations are those of the Go code in the same order (exact integer conversions
below 2**53, one division, one subtraction, one halving, one multiplication, truncation), so
the vector form (every node at once) and the scalar form (one node) agree bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from services.contracts import resources
from services.planner.core.capacity import CachedScores, FloatArray, IntArray, NodeIndex

HALF_SCORE = 50
"""`MaxNodeScore / 2`."""
ROW_BY_ROW_ROWS = 8
"""Most changed rows whose kept balance (`without`) is caught up one row at a time, in Python,
rather than in one NumPy pass (as `placement.ROW_BY_ROW_ROWS` for the shapes' scores)."""

Pair = tuple[int, int]
"""The index columns of cpu and memory."""


def pair(index: NodeIndex, vec: IntArray) -> Pair | None:
    """The cpu and memory columns to balance for a pod requesting `vec` (as given), or None
    when the plugin adds nothing: the pod requests neither (Skip), or no node has both."""
    cpu, memory = index.col.get(resources.CPU), index.col.get(resources.MEMORY)
    if cpu is None or memory is None or (vec[cpu] == 0 and vec[memory] == 0):
        return None
    return cpu, memory


def scores(index: NodeIndex, free: IntArray, alloc: IntArray, vec: IntArray, columns: Pair,
           rows: IntArray | None = None, is_current: bool = True) -> FloatArray:
    """The score of placing a pod requesting `vec` on every node of `index` (`free`, `alloc`:
    the index's, or those of `rows` only: one entry per row). Units: whole numbers 0..100.
    `is_current`: `free` is the index's own, so the balance without the pod is the one kept
    between calls (`without`); else it is computed from `free`."""
    cpu, memory = columns
    if is_current:
        before = without(index, columns)
        if rows is not None:
            before = before[rows]
    else:
        before = _balance(alloc[cpu] - free[cpu], alloc[memory] - free[memory], alloc[cpu],
                          alloc[memory])
    with_pod = _balance(alloc[cpu] - free[cpu] + vec[cpu], alloc[memory] - free[memory]
                        + vec[memory], alloc[cpu], alloc[memory])
    with_pod += HALF_SCORE
    with_pod -= before
    with_pod /= 2
    np.trunc(with_pod, out=with_pod)
    with_pod += HALF_SCORE
    return with_pod


WITHOUT_KEY = ("NodeResourcesBalancedAllocation", "without the pod")
"""Where the balance of every node without the pod is kept, among the index's cached scores."""


def without(index: NodeIndex, columns: Pair) -> FloatArray:
    """Every node's balance as it is (without a pod placed), kept in `index.score_cache` and
    caught up on the rows changed since (`index.changes`), as the shapes' scores are."""
    cpu, memory = columns
    entry = index.score_cache.get(WITHOUT_KEY)
    changed = [] if entry is None else index.changes[entry.position:]
    if entry is None or len(changed) * 4 > len(index):
        free, alloc = index.free, index.alloc
        entry = index.score_cache[WITHOUT_KEY] = CachedScores(
            _balance(alloc[cpu] - free[cpu], alloc[memory] - free[memory], alloc[cpu],
                     alloc[memory]), len(index.changes))
    elif len(changed) <= ROW_BY_ROW_ROWS:
        free, alloc = index.free, index.alloc
        for row in set(changed):
            alloc_cpu, alloc_memory = int(alloc[cpu, row]), int(alloc[memory, row])
            entry.scores[row] = _balance_of(alloc_cpu - int(free[cpu, row]),
                                            alloc_memory - int(free[memory, row]),
                                            alloc_cpu, alloc_memory)
        entry.position = len(index.changes)
    else:
        rows = np.unique(np.array(changed, dtype=np.int64))
        free, alloc = index.free[:, rows], index.alloc[:, rows]
        entry.scores[rows] = _balance(alloc[cpu] - free[cpu], alloc[memory] - free[memory],
                                      alloc[cpu], alloc[memory])
        entry.position = len(index.changes)
    return entry.scores


def _balance(used_cpu: IntArray, used_memory: IntArray, alloc_cpu: IntArray,
             alloc_memory: IntArray) -> FloatArray:
    """`balancedResourceScore` per node (whole numbers as floats; a new array)."""
    if alloc_cpu.all() and alloc_memory.all():
        cpu: FloatArray = used_cpu / alloc_cpu
        memory: FloatArray = used_memory / alloc_memory
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            cpu, memory = used_cpu / alloc_cpu, used_memory / alloc_memory
        both = (alloc_cpu > 0) & (alloc_memory > 0)
        cpu[~both], memory[~both] = 0.0, 0.0  # one fraction or none: std 0
    np.minimum(cpu, 1.0, out=cpu)
    np.minimum(memory, 1.0, out=memory)
    cpu -= memory
    cpu /= 2
    np.abs(cpu, out=cpu)
    np.subtract(1, cpu, out=cpu)
    cpu *= float(2 * HALF_SCORE)
    np.trunc(cpu, out=cpu)
    return cpu


def value(free: list[int], alloc: list[int], vec: list[int], columns: Pair) -> float:
    """`scores` for one node, its columns as Python lists."""
    cpu, memory = columns
    alloc_cpu, alloc_memory = alloc[cpu], alloc[memory]
    used_cpu, used_memory = alloc_cpu - free[cpu], alloc_memory - free[memory]
    before = _balance_of(used_cpu, used_memory, alloc_cpu, alloc_memory)
    after = _balance_of(used_cpu + vec[cpu], used_memory + vec[memory], alloc_cpu, alloc_memory)
    return HALF_SCORE + math.trunc((HALF_SCORE + after - before) / 2)


def _balance_of(used_cpu: int, used_memory: int, alloc_cpu: int, alloc_memory: int) -> float:
    """`_balance` for one node (Python numbers; the same float64 operations)."""
    if alloc_cpu <= 0 or alloc_memory <= 0:
        return float(2 * HALF_SCORE)  # one fraction or none: std 0
    return float(math.trunc((1 - abs((min(used_cpu / alloc_cpu, 1.0)
                                      - min(used_memory / alloc_memory, 1.0)) / 2)) * 100.0))
