"""Which watch events would publish nothing new: the same slim event as the object's last one.

Layer: watcher, pure (time is passed in with each event). Most updates to an object change
only what no reader of the bus reads: a kubelet's or KWOK's status heartbeat on a Node, a
pod's readiness or container statuses, the PodScheduled condition or PodGroup status the binder
itself writes. Each such event, slimmed, equals the object's last published event but for its
`at_ms` and `resource_version`, and publishing it cost the watcher, NATS, the planner (decode,
apply, audit row) and the binder's view one message each: the planner wakes no gang for it
(`planner.core.apply._changed`), and only a pending pod's join time (`quorum._joined_ms`,
bounded by its creation) could move, never later than the first observation of the content. In
the cluster benchmark's contention workload they were one in ten observations
(bench/README.md, "Session 38").

Only watch events are judged: what a list yields is published (a resync list yields every
object, `listwatch.observe`). A repeat is published all the same once the object's last
publish is `REPUBLISH_AFTER_MS` old (by the watcher's clock, either way: a clock stepped back
counts too), so a stale or refused last event is mended at the object's next update as before,
within minutes: a second watcher's resync that stored an older version last, events the
planner dead-lettered as ahead of its time after the watcher's clock jumped. A restarted
watcher's first list publishes again each object whose last watch events were left out (the
log holds an older resourceVersion of it than the list: `recovery`), once.

Memory: per object, a 16-byte digest (BLAKE2b of the event's JSON with `at_ms` 0 and
`resource_version` empty) and the time it was published: about 250 bytes with the key,
whatever the object weighs; a delete forgets it.
"""

from __future__ import annotations

import hashlib

import msgspec

from services.contracts import codec
from services.contracts.events import (
    AttachmentObserved,
    ClaimObserved,
    CSINodeObserved,
    DisruptionBudgetObserved,
    Event,
    NamespaceObserved,
    NodeObserved,
    PodGroupObserved,
    PodObserved,
    StorageClassObserved,
    VolumeObserved,
)

DIGEST_BYTES = 16
REPUBLISH_AFTER_MS = 10 * 60 * 1000
"""A repeat is published when the object's last publish is this old (UTC epoch milliseconds,
either way). Above kubelet's nodeStatusReportFrequency (5 minutes), so an idle Node's periodic
status reports are mostly left out; far below any resync or retention."""

Observation = (NodeObserved | PodObserved | PodGroupObserved | ClaimObserved | VolumeObserved
               | StorageClassObserved | DisruptionBudgetObserved | NamespaceObserved
               | CSINodeObserved | AttachmentObserved)
"""The events that state an object as observed: the ones a repeat can be."""


class Repeats:
    """The digest of the last event published of each object, by (kind, uid).

    Not thread-safe (one watcher's event loop). Raises nothing.
    """

    def __init__(self, republish_after_ms: int = REPUBLISH_AFTER_MS) -> None:
        self._republish_after_ms = republish_after_ms
        self._last: dict[tuple[str, str], tuple[bytes, int]] = {}

    def __len__(self) -> int:
        return len(self._last)

    def is_repeat(self, kind: str, event: Event, *, is_watched: bool) -> bool:
        """Whether `event`, of a `kind` object (pod, node, ...), says nothing its object's
        last published event did not, which was published less than `REPUBLISH_AFTER_MS`
        before it, so it need not be published; if not, remember it as that last event. An
        event that observes no object (a delete, a tick) is no repeat.

        `is_watched`: the event comes from a watch (`listwatch.Change.is_watched`). Only then
        can it be a repeat; a listed one is published and remembered all the same.
        """
        if not isinstance(event, Observation):
            return False
        key = (kind, event.uid)
        digest = _digest(event)
        last = self._last.get(key)
        if (is_watched and last is not None and last[0] == digest
                and abs(event.at_ms - last[1]) < self._republish_after_ms):
            return True
        self._last[key] = (digest, event.at_ms)
        return False

    def forget(self, kind: str, uid: str) -> None:
        """Forget the `kind` object `uid` (deleted): its next event is published."""
        self._last.pop((kind, uid), None)


def _digest(event: Observation) -> bytes:
    """BLAKE2b of `event`'s JSON without the time it was observed and its resourceVersion."""
    neutral = msgspec.structs.replace(event, at_ms=0, resource_version="")
    return hashlib.blake2b(codec.encode(neutral), digest_size=DIGEST_BYTES).digest()
