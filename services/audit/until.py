"""Where a replay stops: after a plan point or sequence, or "as of" a time.

Layer: audit (pure). Clips the rounds of `services.planner.rederive.rounds` for `gangsched
replay --until`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from services.planner.core.apply import OUTCOMES
from services.planner.rederive.rounds import LoggedEvent, RoundInput


@dataclass(frozen=True)
class Until:
    """Where replay stops: after plan point / sequence `seq`, or at time `at_ms` (epoch ms).

    Time: replay stops before the first round that applies an event later than `at_ms` (the
    planner's clock is the latest time of the watcher's events it applied; bind outcomes carry
    the binder's clock and do not count), so the state is the one "as of" it.
    """

    seq: int | None = None
    at_ms: int | None = None

    def clip(self, rnd: RoundInput) -> RoundInput | None:
        """The part of `rnd` to replay, or None when replay stops before it."""
        if self.seq is None and self.at_ms is None:
            return rnd
        if rnd.plan_seq is None:
            kept = list(itertools.takewhile(self._admits, rnd.events))
            if len(kept) < len(rnd.events):
                return RoundInput(None, kept, []) if kept else None
            return rnd
        if self.seq is not None and rnd.plan_seq > self.seq:
            return None
        if not all(self._admits(item) for item in rnd.events):
            return None
        return rnd

    def _admits(self, item: LoggedEvent) -> bool:
        # a bind outcome's time is the binder host's, not the planner's clock (see
        # `planner.core.apply.apply_event`), so it never stops the replay
        return ((self.seq is None or item.seq <= self.seq)
                and (self.at_ms is None or isinstance(item.event, OUTCOMES)
                     or item.event.at_ms <= self.at_ms))
