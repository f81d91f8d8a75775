"""Placement memory: what the binder knows a placement already did, so a redelivery
resumes instead of redoing, and a copy of an old decision is never carried out again.

Layer: binder shell (one job of the three the binder's rooms split: `wiring` builds, `service`
dispatches deliveries, this remembers). Holds the outcomes this process published (bounded)
and reads those of any binder from EVENTS through `OutcomeLog`.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

from services.binder import outcomes
from services.contracts import ids
from services.contracts.decisions import Placement
from services.contracts.events import Outcome

log = logging.getLogger(__name__)

REMEMBERED_DECISIONS = 4096
"""Placements whose published outcomes this process keeps (the oldest are forgotten)."""


class OutcomeLog(Protocol):
    """The outcome events published for one decision of a group, by any binder (to spot
    settled redeliveries and the members a decision bound). Raises when EVENTS cannot be read,
    so nothing is undone on a guess."""

    async def of_decision(self, group: str, decision_id: str) -> Sequence[Outcome]: ...

    async def newest(self, group: str) -> Outcome | None: ...


class PlacementMemory:
    """The outcomes published for placements: by this process (kept here) and by any binder
    (`outcome_log`, read when needed)."""

    def __init__(self, outcome_log: OutcomeLog) -> None:
        self._outcome_log = outcome_log
        self._published: OrderedDict[str, tuple[Outcome, ...]] = OrderedDict()

    async def prior_outcomes(
        self, placement: Placement, is_redelivery: bool
    ) -> tuple[Outcome, ...]:
        """The outcomes already published for this placement: those this process published,
        plus (on a redelivery) those any binder published, read from EVENTS. A placement with a
        final outcome among them is settled and is never undone."""
        found = list(self._published.get(placement.id, ()))
        if is_redelivery:
            found.extend(await self._outcome_log.of_decision(placement.group, placement.id))
        return tuple(o for o in found if o.decision_id == placement.id)

    def remember(self, decision_id: str, published: Sequence[Outcome]) -> None:
        """Keep the outcomes just published for `decision_id` (bounded, oldest dropped)."""
        self._published[decision_id] = self._published.get(decision_id, ()) + tuple(published)
        self._published.move_to_end(decision_id)
        while len(self._published) > REMEMBERED_DECISIONS:
            self._published.popitem(last=False)

    async def is_stale(self, placement: Placement) -> bool:
        """Whether the group's newest outcome shows `placement` settled already, or a later
        decision of the group bound or rolled back since (the planner places a group again only
        after its placement settled or expired): then a delivery of it is a copy published
        again (replayed), never carried out a second time. The newest outcome stored before
        this call (`OutcomeLog.newest`: from the bus view when it holds everything stored
        before the call, else one direct read of EVENTS)."""
        newest = await self._outcome_log.newest(placement.group)
        if newest is None:
            return False
        if newest.decision_id == placement.id:
            stale = outcomes.is_final(newest)
        else:
            stale = ids.decision_order(newest.decision_id) > ids.decision_order(placement.id)
        if stale:
            log.warning("placement %s of %s ignored: the group's outcomes already went past it "
                        "(newest: %s of %s); a copy of an old decision", placement.id,
                        placement.group, type(newest).__name__, newest.decision_id)
        return stale
