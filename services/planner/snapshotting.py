"""When the planner writes its state snapshot: every so many seconds or events, not per batch.

Layer: planner shell (I/O policy). Reads the wall clock (monotonic), which is fine here: the
snapshot only shortens a restart's catch-up (`catchup`), it never changes what is planned.
Everything a batch must keep exactly once (audit rows, outbox, round, tracked sequence) is
committed with every batch regardless of this schedule.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class SnapshotSchedule:
    """Due when `interval_seconds` passed since the last snapshot, or when the events applied
    since then reach `interval_events` (0: no event bound). Units: seconds, events.

    `interval_seconds` 0 writes a snapshot with every batch (the behaviour before the
    schedule existed; useful in tests).
    """

    def __init__(self, interval_seconds: float, interval_events: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_seconds = interval_seconds
        self.interval_events = interval_events
        self._clock = clock
        self._written_at = clock()
        self.events_since = 0

    def restart(self, events_not_in_snapshot: int) -> None:
        """Start counting after a restore that replayed `events_not_in_snapshot` events."""
        self._written_at = self._clock()
        self.events_since = events_not_in_snapshot

    def is_due(self, batch_events: int) -> bool:
        """Whether the batch about to be committed (with `batch_events` events) carries one."""
        events = self.events_since + batch_events
        return (self._clock() - self._written_at >= self.interval_seconds
                or 0 < self.interval_events <= events)

    def committed(self, batch_events: int, *, with_snapshot: bool) -> None:
        """Record a committed batch (and whether it carried a snapshot)."""
        if with_snapshot:
            self._written_at = self._clock()
            self.events_since = 0
        else:
            self.events_since += batch_events
