"""Keep the cyclic garbage collector from re-scanning the state a replay has built.

Layer: audit shell helper (process-wide side effect, so never called by the pure replay). A
replay allocates millions of objects that live on in the planner state; CPython's full
collections walk all of them again and again (about 1 s of a 1M-event replay). Every
`FREEZE_EVERY_EVENTS` events the survivors are moved to the permanent generation
(`gc.freeze`), which collections skip; the state is still freed by reference counting, and
what is frozen is handed back to the collector (`gc.unfreeze`) when the replay ends.
Source: the `gc.freeze` documentation (CPython 3.7+).
"""

from __future__ import annotations

import gc
from types import TracebackType

FREEZE_EVERY_EVENTS = 100_000


class LongLived:
    """Context manager; call `advance(n)` after replaying `n` events."""

    def __init__(self, every_events: int = FREEZE_EVERY_EVENTS) -> None:
        self.every_events = every_events
        self._since = 0
        self._froze = False

    def advance(self, events: int) -> None:
        """Count `events` replayed; freeze the survivors once `every_events` have passed."""
        self._since += events
        if self._since >= self.every_events:
            gc.freeze()
            self._froze = True
            self._since = 0

    def __enter__(self) -> LongLived:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._froze:  # what others froze stays frozen if this replay never froze
            gc.unfreeze()
