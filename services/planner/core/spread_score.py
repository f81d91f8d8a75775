"""Pod topology spread (ScheduleAnyway) in scoring: PodTopologySpread's score over every node.

Layer: planner core (pure; NumPy, `decimal`). Counting is `spread.Counted`'s for the
ScheduleAnyway constraints (every pod bound or reserved on an indexed node, and the members of
the same trial placed before). Per node that passes every filter (`feasible`): nodes lacking a
constraint's key are ignored (score 0); else each constraint adds its domain's count (the
node's own count for `kubernetes.io/hostname`) times log(domains + 2) plus maxSkew - 1, the
sum rounded; scores are normalized as the plugin does (fewest pods best: 100 * (max + min -
score) // max, 100 everywhere when max is 0) and weighted 2, its weight in kube-scheduler's
default profile, against NodeResourcesFit's 100 per node. Deterministic: the logarithm is
decimal's correctly rounded `ln`, every other step exact or correctly rounded IEEE arithmetic.
"""

from __future__ import annotations

from decimal import Context, Decimal
from functools import cache

import numpy as np

from services.contracts.events import PodObserved
from services.fit import topology_spread
from services.planner.core.capacity import BoolArray, FloatArray, NodeIndex
from services.planner.core.spread import Counted, Gate

WEIGHT = 2
"""PodTopologySpread's score weight in kube-scheduler's default profile."""
MAX_NODE_SCORE = 100
HOSTNAME = "kubernetes.io/hostname"


def is_active(members: list[PodObserved]) -> bool:
    """Whether some member has a ScheduleAnyway constraint."""
    return any(c.when_unsatisfiable == topology_spread.SCHEDULE_ANYWAY
               for pod in members for c in pod.topology_spread)


@cache
def normalizing_weight(size: int) -> float:
    """log(size + 2), correctly rounded (`topologyNormalizingWeight`)."""
    return float(Decimal(size + 2).ln(Context(prec=40)))


def scores(counted: Counted, feasible: BoolArray) -> FloatArray:
    """The weighted, normalized score of every row (0 where not `feasible` or ignored).

    Shapes: one entry per row; whole numbers 0..`WEIGHT * MAX_NODE_SCORE`.
    Source: as PodTopologySpread's PreScore, Score and NormalizeScore, with the pod's own
    constraints (`requireAllTopologies`), over the nodes that passed filtering.
    """
    result: FloatArray = np.zeros(len(feasible), dtype=np.float64)
    if not counted.spreads:
        return result
    has_keys = np.ones(len(feasible), dtype=np.bool_)
    for column in counted.columns:
        has_keys &= column >= 0
    active = feasible & has_keys
    if not active.any():
        return result
    raw = np.zeros(len(feasible), dtype=np.float64)
    for i, spread in enumerate(counted.spreads):
        column = counted.columns[i]
        if spread.topology_key == HOSTNAME:
            size, count = int(active.sum()), counted.row_counts[i]
        else:
            size = len(np.unique(column[active]))
            count = counted.counts[i][np.maximum(column, 0)] if len(counted.counts[i]) else (
                np.zeros(len(column), dtype=np.int64))
        raw += np.where(active, count * normalizing_weight(size) + (spread.max_skew - 1), 0.0)
    whole = np.trunc(raw)
    whole += (raw - whole) >= 0.5  # math.Round: half away from zero (raw >= 0)
    values = whole.astype(np.int64)
    low, high = int(values[active].min()), int(values[active].max())
    if high == 0:
        normalized = np.full(len(values), MAX_NODE_SCORE, dtype=np.int64)
    else:
        normalized = MAX_NODE_SCORE * (high + low - values) // high
    result[active] = WEIGHT * normalized[active]
    return result


class Scorer:
    """The score for the members of one placement trial, placed one by one (as `spread.Gate`
    for the ScheduleAnyway constraints)."""

    def __init__(self, index: NodeIndex) -> None:
        self.gate = Gate(index, topology_spread.SCHEDULE_ANYWAY)

    def scores(self, pod: PodObserved, feasible: BoolArray) -> FloatArray:
        """Per row, `pod`'s spread score now among the `feasible` rows (see `scores`)."""
        return scores(self.gate.counted(pod), feasible)

    def placed(self, pod: PodObserved, row: int) -> None:
        """`pod` was just placed on `row`."""
        self.gate.placed(pod, row)
