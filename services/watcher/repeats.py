"""Which watch events would publish nothing new: the same slim event as the object's last one.

Layer: watcher. Most updates to an object change only what no reader of the bus reads: a
kubelet's or KWOK's status heartbeat on a Node, a pod's readiness or container statuses, the
PodScheduled condition or PodGroup status the binder itself writes. Each such event, slimmed,
equals the object's last published event but for its `at_ms` and `resource_version`, and
publishing it cost the watcher, NATS, the planner (decode, apply, audit row) and the binder's
view one message each, for nothing: the planner already treats it as no change
(`planner.core.apply._changed`). In the cluster benchmark's contention workload they were one
in ten observations (bench/README.md, "Session 38").

Only watch events are judged: a list (the first, after 410 Gone, every resync) publishes
every object it yields, so the log keeps a recent event of each object within its retention
(`services.watcher.service.resync_seconds`) and a restarted reader finds them all.

Memory: one 16-byte digest per object (BLAKE2b of the event's JSON with `at_ms` 0 and
`resource_version` empty), so about 150 bytes per object with its key, whatever the object
weighs; a delete forgets it.
"""

from __future__ import annotations

import hashlib

import msgspec

from services.contracts import codec
from services.contracts.events import (
    ClaimObserved,
    DisruptionBudgetObserved,
    Event,
    NodeObserved,
    PodGroupObserved,
    PodObserved,
    StorageClassObserved,
    VolumeObserved,
)

DIGEST_BYTES = 16

Observation = (NodeObserved | PodObserved | PodGroupObserved | ClaimObserved | VolumeObserved
               | StorageClassObserved | DisruptionBudgetObserved)
"""The events that state an object as observed: the ones a repeat can be."""


class Repeats:
    """The digest of the last event published of each object, by (kind, uid).

    Not thread-safe (one watcher's event loop). Raises nothing.
    """

    def __init__(self) -> None:
        self._last: dict[tuple[str, str], bytes] = {}

    def __len__(self) -> int:
        return len(self._last)

    def is_repeat(self, kind: str, event: Event, *, is_watched: bool) -> bool:
        """Whether `event`, of a `kind` object (pod, node, ...), says nothing its object's
        last published event did not, so it need not be published; if not, remember it as
        that last event. An event that observes no object (a delete, a tick) is no repeat.

        `is_watched`: the event comes from a watch (`listwatch.Change.is_watched`). Only then
        can it be a repeat; a listed one is published and remembered all the same.
        """
        if not isinstance(event, Observation):
            return False
        key = (kind, event.uid)
        digest = _digest(event)
        if is_watched and self._last.get(key) == digest:
            return True
        self._last[key] = digest
        return False

    def forget(self, kind: str, uid: str) -> None:
        """Forget the `kind` object `uid` (deleted): its next event is published."""
        self._last.pop((kind, uid), None)


def _digest(event: Observation) -> bytes:
    """BLAKE2b of `event`'s JSON without the time it was observed and its resourceVersion."""
    neutral = msgspec.structs.replace(event, at_ms=0, resource_version="")
    return hashlib.blake2b(codec.encode(neutral), digest_size=DIGEST_BYTES).digest()
