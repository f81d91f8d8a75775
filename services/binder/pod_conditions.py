"""What this binder process wrote on pods' PodScheduled condition, and which pods it bound.

Layer: binder, pure: no I/O, no clock. It stands in for the informer copy kube-scheduler
patches pod status from (`util.PatchPodStatus`): a rejection is written without reading the
pod first, its `lastTransitionTime` kept from what this process wrote, and a pod this process
bound is never reported unschedulable. Memory only and bounded (the oldest forgotten first): a
restarted binder writes each pod's condition once more, with a new `lastTransitionTime`.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from services.binder.statuses import Unschedulable

REMEMBERED_PODS = 100_000
"""Pods remembered at most."""

_BOUND: Final = "bound"


class ConditionMemory:
    """Per pod uid: the Unschedulable condition this process last wrote, or that it bound it."""

    def __init__(self, remembered: int = REMEMBERED_PODS) -> None:
        self._pods: OrderedDict[str, Unschedulable | str] = OrderedDict()
        self._remembered = remembered

    def __len__(self) -> int:
        return len(self._pods)

    def written(self, uid: str) -> Unschedulable | None:
        """The Unschedulable condition last written on pod `uid`, if any (and not bound since)."""
        known = self._pods.get(uid)
        return known if isinstance(known, Unschedulable) else None

    def is_bound(self, uid: str) -> bool:
        """Whether this process bound pod `uid` (or found it bound when writing to it)."""
        return self._pods.get(uid) == _BOUND

    def wrote(self, uid: str, condition: Unschedulable) -> None:
        """Remember that `condition` is now on pod `uid`."""
        self._keep(uid, condition)

    def bound(self, uid: str) -> None:
        """Remember that pod `uid` is bound: it gets no more Unschedulable conditions."""
        self._keep(uid, _BOUND)

    def forget(self, uid: str) -> None:
        """Drop what is known of pod `uid` (it is gone or replaced)."""
        self._pods.pop(uid, None)

    def _keep(self, uid: str, value: Unschedulable | str) -> None:
        self._pods[uid] = value
        self._pods.move_to_end(uid)
        while len(self._pods) > self._remembered:
            self._pods.popitem(last=False)
