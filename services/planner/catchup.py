"""Restore the planner's state: the latest snapshot, then the batches committed after it,
re-planned at their recorded plan points and checked against the recorded decisions.

Layer: planner shell (reads the store through the `ports.Store` protocol). The re-planning is
`services.planner.rederive` (`Replay`, `Verifier`), which `gangsched replay --verify` runs too,
so a restart and an audit derive decisions the same way. A re-derived decision
that differs from its outbox row is a determinism bug: it is logged with both sides and the
restore raises `CatchUpDiverged`, so the planner never serves from a state it cannot trust.
Never writes to the store and never publishes.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from services.contracts import codec
from services.planner.core import revision, state
from services.planner.core.config import PlannerConfig
from services.planner.ports import Store
from services.planner.rederive import rounds
from services.planner.rederive.replay import Replay, ReplayFailed
from services.planner.rederive.verify import Divergence, Verifier

log = logging.getLogger(__name__)


class CatchUpDiverged(Exception):
    """Re-planning the batches after the snapshot did not give the recorded decisions (or the
    core raised on events it planned before): a determinism bug. The planner refuses to serve."""


@dataclass(frozen=True)
class Restored:
    """The state as of `tracked_seq`, rebuilt from the snapshot at `snapshot_seq` plus
    `events` audit events re-planned at `plan_points` recorded plan points; `stream_created`,
    the identity of the stream `tracked_seq` belongs to (None: not recorded)."""

    state: state.PlannerState
    snapshot_seq: int
    tracked_seq: int
    events: int
    plan_points: int
    stream_created: str | None = None


async def restore(store: Store, config: PlannerConfig, prefix: str) -> Restored:
    """The committed state: the latest snapshot caught up to the tracked sequence.

    Shapes: an empty database gives the empty state at 0; no snapshot yet gives the empty
    state caught up from the first audit event.
    Raises:
        CatchUpDiverged: a re-derived decision differs from its outbox row (logged).
        services.contracts.codec.PoisonedMessage: an audit row that does not decode (a
            damaged database: the planner audits only events it decoded).
    """
    snapshot = await store.load_snapshot()
    start = state.empty_state() if snapshot.data is None else state.decode_state(snapshot.data)
    after, upto = snapshot.seq, snapshot.tracked_seq
    if upto <= after:
        return Restored(start, after, upto, 0, 0, snapshot.stream_created)
    replay, verifier = Replay(config), Verifier(prefix)
    replay.state = start
    logged = rounds.assemble(_events(store, after, upto),
                                store.catch_up_plan_points(after, upto),
                                _recorded(store, after, upto))
    async for rnd in logged:
        try:
            result = replay.play(rnd)
        except ReplayFailed as error:
            raise CatchUpDiverged(f"catch-up after snapshot seq {after}: {error}") from error
        divergence = verifier.check(result)
        if divergence is not None:
            raise _diverged(after, divergence, rnd.planner)
    return Restored(replay.state, after, upto, replay.events_applied, verifier.plan_points,
                    snapshot.stream_created)


def _diverged(after: int, divergence: Divergence, planner: str | None) -> CatchUpDiverged:
    """Log a divergence naming the recorded and the re-derived decision; the error to raise.
    A round another planner revision recorded (`planner`) is an upgrade, not a bug: the
    error says how to start from a snapshot that holds it instead."""
    if planner is not None and planner != revision.PLANNER:
        why = (f"catch-up after snapshot seq {after}: {divergence.describe()}: that batch was "
               f"planned by {planner}, and this is {revision.PLANNER}, which decides "
               "differently; the earlier planner stopped without a snapshot (a crash). Run "
               "the earlier version until it has caught up and stop it (SIGTERM: it writes "
               "a snapshot at stop), then start this one")
        log.error("%s", why)
        return CatchUpDiverged(why)
    log.error("determinism bug: catching up after snapshot seq %d, %s; recorded %s; "
              "re-derived %s", after, divergence.describe(), _side(divergence.recorded),
              _side(divergence.derived))
    return CatchUpDiverged(f"catch-up after snapshot seq {after}: {divergence.describe()}")


def _side(decision: tuple[str, bytes] | None) -> str:
    if decision is None:
        return "nothing"
    subject, data = decision
    return f"{subject} {data.decode(errors='replace')}"


async def _events(store: Store, after: int, upto: int) -> AsyncIterator[rounds.LoggedEvent]:
    async for seq, subject, _type, _at_ms, data in store.catch_up_events(after, upto):
        yield rounds.LoggedEvent(seq, subject, codec.decode_event(data))


async def _recorded(store: Store, after: int,
                    upto: int) -> AsyncIterator[rounds.RecordedDecision]:
    async for row in store.catch_up_outbox(after, upto):
        yield rounds.RecordedDecision(row.id, row.plan_seq, row.position, row.subject,
                                         row.data)
