"""The binder's bus view without the bus: a real `ClusterView`, fed directly.

`services.binder.view_feed.ViewFeed` fills a `ClusterView` from the EVENTS stream and answers
`caught_up(seq)`; tests that exercise what the binder does with the view (not the feed's NATS
reading, which tests/integration/test_binder_view.py covers) apply the watcher's own events
(`services.watcher.slim`) here.
"""

from __future__ import annotations

from services.binder.view import ClusterView
from services.contracts.events import Event

SEQ = 10
"""The stream sequence events are applied at by default: past the plan points tests use."""


class AppliedView:
    """`podgroup_writes.ViewAt`: a `ClusterView` caught up to whatever was applied."""

    def __init__(self) -> None:
        self.view = ClusterView()

    def apply(self, event: Event, seq: int = SEQ) -> None:
        """Apply `event` at stream sequence `seq`."""
        self.view.apply(seq, event)

    async def caught_up(self, seq: int, timeout_seconds: float) -> bool:
        """Whether events up to `seq` were applied (never waits: nothing else applies any)."""
        return self.view.applied_seq >= seq
