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
from services.planner.core.capacity import FloatArray, IntArray, NodeIndex

HALF_SCORE = 50
"""`MaxNodeScore / 2`."""

Pair = tuple[int, int]
"""The index columns of cpu and memory."""


def pair(index: NodeIndex, vec: IntArray) -> Pair | None:
    """The cpu and memory columns to balance for a pod requesting `vec` (as given), or None
    when the plugin adds nothing: the pod requests neither (Skip), or no node has both."""
    cpu, memory = index.col.get(resources.CPU), index.col.get(resources.MEMORY)
    if cpu is None or memory is None or (vec[cpu] == 0 and vec[memory] == 0):
        return None
    return cpu, memory


def scores(free: IntArray, alloc: IntArray, vec: IntArray, columns: Pair) -> FloatArray:
    """The score of placing a pod requesting `vec` on every node given (`free`, `alloc`: the
    index's, or some of its rows: one entry per row). Units: whole numbers 0..100."""
    cpu, memory = columns
    alloc_cpu, alloc_memory = alloc[cpu], alloc[memory]
    used_cpu, used_memory = alloc_cpu - free[cpu], alloc_memory - free[memory]
    without = _balance(used_cpu, used_memory, alloc_cpu, alloc_memory)
    with_pod = _balance(used_cpu + vec[cpu], used_memory + vec[memory], alloc_cpu, alloc_memory)
    result: FloatArray = HALF_SCORE + np.trunc((HALF_SCORE + with_pod - without) / 2)
    return result


def _balance(used_cpu: IntArray, used_memory: IntArray, alloc_cpu: IntArray,
             alloc_memory: IntArray) -> FloatArray:
    """`balancedResourceScore` per node (whole numbers as floats)."""
    both = (alloc_cpu > 0) & (alloc_memory > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cpu = np.minimum(used_cpu.astype(np.float64) / alloc_cpu.astype(np.float64), 1.0)
        memory = np.minimum(used_memory.astype(np.float64) / alloc_memory.astype(np.float64),
                            1.0)
    std = np.where(both, np.abs((cpu - memory) / 2), 0.0)
    result: FloatArray = np.trunc((1 - std) * float(2 * HALF_SCORE))
    return result


def value(free: list[int], alloc: list[int], vec: list[int], columns: Pair) -> float:
    """`scores` for one node, its columns as Python lists."""
    cpu, memory = columns
    used_cpu, used_memory = alloc[cpu] - free[cpu], alloc[memory] - free[memory]
    without = _balance_one(used_cpu, used_memory, alloc[cpu], alloc[memory])
    with_pod = _balance_one(used_cpu + vec[cpu], used_memory + vec[memory], alloc[cpu],
                            alloc[memory])
    return float(HALF_SCORE + math.trunc((HALF_SCORE + with_pod - without) / 2))


def _balance_one(used_cpu: int, used_memory: int, alloc_cpu: int, alloc_memory: int) -> int:
    """`_balance` for one node."""
    if alloc_cpu <= 0 or alloc_memory <= 0:
        return 2 * HALF_SCORE
    cpu = min(float(used_cpu) / float(alloc_cpu), 1.0)
    memory = min(float(used_memory) / float(alloc_memory), 1.0)
    return math.trunc((1 - abs((cpu - memory) / 2)) * float(2 * HALF_SCORE))
