"""The whole-gang search's fence: every filter in which members placed earlier count.

Layer: planner core (pure; NumPy). Joins InterPodAffinity's fence (`affinity.fence`) and
PodTopologySpread's (`spread.fence`): a row is allowed when both allow it, and two rows are
interchangeable when both filters say so. None when neither filter is active.
"""

from __future__ import annotations

import numpy as np

from services.contracts.events import PodObserved
from services.planner.core import affinity, spread
from services.planner.core.capacity import BoolArray, IntArray, NodeIndex
from services.planner.core.search import Fence


def is_active(index: NodeIndex, members: list[PodObserved]) -> bool:
    """Whether some filter of the fence can reject a row for one of `members`."""
    return affinity.is_active(index, members) or spread.is_active(members)


def fence(index: NodeIndex, members: list[PodObserved],
          only_pinned: bool = False) -> tuple[Fence, IntArray] | None:
    """The fence for `members` on `index` and its row classes (`only_pinned`: counting only
    other schedulers' pods, as on nodes emptied of ours), or None when nothing is fenced."""
    parts: list[tuple[Fence, IntArray]] = []
    if affinity.is_active(index, members):
        parts.append(affinity.fence(index, members, only_pinned))
    if spread.is_active(members):
        parts.append(spread.fence(index, members, only_pinned))
    if len(parts) <= 1:
        return parts[0] if parts else None
    (first, first_classes), (second, second_classes) = parts

    def allowed(member: int, placed: list[tuple[int, int]]) -> BoolArray:
        passing: BoolArray = first(member, placed) & second(member, placed)
        return passing

    classes: IntArray = np.unique(np.column_stack([first_classes, second_classes]), axis=0,
                                  return_inverse=True)[1].reshape(-1).astype(np.int64)
    return allowed, classes
