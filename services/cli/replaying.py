"""`gangsched replay`: open the log (database or NATS), replay it, show and verify it.

Layer: cli (composition). Opens the database read-only in one snapshot, or NATS with ephemeral
ordered consumers; never writes to either. The loop reads top to bottom: clip the round to
`--until`, replay it, verify it, show its timeline entries, advance the progress bar; it stops
at the first divergence.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from services.audit import heap, times
from services.audit.db_log import DatabaseLog
from services.audit.timeline import Focus, Timeline, Window
from services.audit.until import Until
from services.cli import audit_view, log_positions
from services.config.settings import BusSettings
from services.contracts.signing import DecisionKey
from services.planner.core.config import PlannerConfig
from services.planner.rederive.replay import Replay, RoundResult
from services.planner.rederive.rounds import RoundInput
from services.planner.rederive.verify import Divergence, Verifier
from services.store import audit, schema


class RecordedLog(Protocol):
    """What replay needs of a source (`DatabaseLog`, `NatsLog`)."""

    async def event_count(self) -> int: ...

    def rounds(self) -> AsyncIterator[RoundInput]: ...

    async def left_out(self) -> list[tuple[int, str]]: ...


@dataclass(frozen=True)
class ReplayRequest:
    """Everything `gangsched replay` was asked (see its help)."""

    source: str
    db_url: str
    bus: BusSettings
    config: PlannerConfig
    window: Window
    until: Until
    focus: Focus | None
    output: str
    verify: bool
    show_timeline: bool
    show_ticks: bool = False
    max_event_lead_seconds: float = 60.0
    decision_key: DecisionKey | None = None


@dataclass
class ReplayOutcome:
    """What a replay found: the verifier (its `divergence` None when all matched), how many
    timeline entries were shown and how many events the log holds (0: an empty log).

    Where it ended: `last_seq` the sequence of the last event replayed (0: none),
    `latest_ms` the latest time of the events replayed (epoch ms; kept only for `--since`),
    `stopped_by_until` whether `--until` ended it before the end of the log. `left_out`:
    `(seq, reason)` of the events the planner dead-lettered up to where it ended, which no
    round holds (the planner never planned on them), by seq.
    """

    verifier: Verifier
    shown: int = 0
    events: int = 0
    last_seq: int = 0
    latest_ms: int = 0
    stopped_by_until: bool = False
    left_out: list[tuple[int, str]] = field(default_factory=list)


def empty_log(source: str) -> str:
    """Where a replay of `source` (`db` or `nats`) found no event, and what to check."""
    if source == "nats":
        return ("the log is empty: no event recorded in the EVENTS stream (is this the NATS "
                "server and --prefix of the run you mean?)")
    return ("the log is empty: no event recorded in the database (is this the data directory "
            "or --db of the run you mean?)")


async def replay(request: ReplayRequest) -> ReplayOutcome:
    """Replay the log; return what it found (`ReplayOutcome`).

    Raises:
        services.store.audit.AuditUnavailable, services.store.errors.SchemaMismatch,
        services.store.audit.DamagedRow (also a divergence from a recorded decision that is no
        JSON object: `check_recorded`), services.bus.errors.BusUnavailable,
        services.audit.nats_log.IncompleteLog, services.planner.rederive.replay.ReplayFailed,
        services.bus.errors.NotFound (no such stream).
    """
    outcome = ReplayOutcome(Verifier(request.bus.prefix))
    verifier = outcome.verifier
    async with open_log(request) as log:
        replayer = Replay(request.config)
        timeline = Timeline(request.window, request.focus, request.show_ticks)
        view = audit_view.TimelineView(request.output)
        total = outcome.events = await log.event_count()
        # the bar shares the terminal only with a timeline that goes elsewhere (a file, a pipe)
        drawn = not (request.show_timeline and sys.stdout.isatty())
        with audit_view.progress(total, enabled=drawn) as advance, heap.LongLived() as held:
            async for whole in log.rounds():
                rnd = request.until.clip(whole)
                outcome.stopped_by_until = rnd is not whole
                if rnd is None:
                    break
                _note_end(outcome, rnd, request.window)
                result = replayer.play(rnd)
                held.advance(len(rnd.events))
                divergence = verifier.check(result) if request.verify else None
                if divergence is not None:
                    check_recorded(result, divergence)
                if request.show_timeline:
                    entries = timeline.entries(result)
                    view.show(entries)
                    outcome.shown += len(entries)
                advance(len(rnd.events))
                if divergence is not None:
                    break
        ended = outcome.last_seq if outcome.stopped_by_until or verifier.divergence else None
        outcome.left_out = [(seq, reason) for seq, reason in await log.left_out()
                            if ended is None or seq <= ended]
    return outcome


def left_out_note(left_out: list[tuple[int, str]], shown: int = 3) -> str:
    """One line naming the dead-lettered events a replay went past (the first `shown` with
    their reasons), or "" when there were none."""
    if not left_out:
        return ""
    named = "; ".join(f"seq {seq}: {reason}" for seq, reason in left_out[:shown])
    more = f"; and {len(left_out) - shown} more" if len(left_out) > shown else ""
    return (f"note: {len(left_out)} event(s) of the log were dead-lettered by the planner and "
            f"are in no planning round ({named}{more})")


def check_recorded(result: RoundResult, divergence: Divergence) -> None:
    """Return when the recorded side of `divergence` (a decision of `result`'s round) is a
    decision's UTF-8 JSON object, as the planner records every decision (and NATS decisions
    are decoded as they are read): else its outbox row is damaged, and no report could show it.

    Raises:
        services.store.audit.DamagedRow: naming the outbox row and what it holds.
    """
    if divergence.recorded is None:
        return
    problem = _decision_json_problem(divergence.recorded[1])
    if problem is not None:
        record = result.round.recorded[divergence.index]
        raise audit.damaged("outbox", f"id {record.id!r}", problem)


def _decision_json_problem(data: bytes) -> str | None:
    """Why `data` is not a decision's UTF-8 JSON object, or None."""
    try:
        body = json.loads(data.decode())
    except UnicodeDecodeError as error:
        return f"data is not UTF-8 text ({error.reason} at byte {error.start})"
    except json.JSONDecodeError as error:
        return f"data is not JSON ({error})"
    except RecursionError:
        return "data is JSON nested too deep for a decision"
    if not isinstance(body, dict):
        return f"data is a JSON {type(body).__name__}, not a decision's object"
    return None


def _note_end(outcome: ReplayOutcome, rnd: RoundInput, window: Window) -> None:
    """Move `outcome`'s end (`last_seq`, and `latest_ms` when `window` has a `--since`) past
    the events of `rnd`."""
    if rnd.events:
        outcome.last_seq = rnd.events[-1].seq
        if window.since_ms is not None:
            outcome.latest_ms = max(outcome.latest_ms,
                                    *(item.event.at_ms for item in rnd.events))


def past_the_end(request: ReplayRequest, outcome: ReplayOutcome) -> str | None:
    """Why the timeline of a replay of a non-empty log shows nothing whatever it holds: its
    window (`--from-seq`, `--since`) starts after the last event replayed (the end of the
    log, or where `--until` stopped the replay), or `--until` stopped it before the first
    round; None when neither."""
    until = (f"--until {log_positions.shown(request.until)}" if outcome.stopped_by_until
             else None)
    if outcome.last_seq == 0:
        return until and f"nothing to show: {until} stops the replay before the first round"
    end = (f"the replay stops at sequence {outcome.last_seq} ({until})" if until
           else f"the log ends at sequence {outcome.last_seq}")
    window = request.window
    if window.from_seq > outcome.last_seq:
        return f"nothing to show from --from-seq {window.from_seq}: {end}"
    if window.since_ms is not None and window.since_ms > outcome.latest_ms:
        return (f"nothing to show from --since {times.iso(window.since_ms)}: {end}, its latest "
                f"event at {times.iso(outcome.latest_ms)}")
    return None


@contextlib.asynccontextmanager
async def open_log(request: ReplayRequest) -> AsyncIterator[RecordedLog]:
    """The source's log, open for reading only; closed after the block."""
    if request.source == "nats":
        # imported here: nats-py and aiohttp take 0.3 s to import, a database replay needs neither
        from services.audit.nats_log import NatsLog
        from services.bus import connection

        client = await connection.connect(request.bus, name="gangsched-replay",
                                          first_connect_timeout_seconds=10)
        try:
            source = NatsLog(client.jetstream(), request.bus.prefix,
                             max_lead_ms=round(request.max_event_lead_seconds * 1000),
                             key=request.decision_key)
            await source.load()
            yield source
        finally:  # closing a connection that is lost raises nothing, nor hides a Ctrl-C
            await connection.close_at_once(client)
        return
    engine = audit.open_read_only(request.db_url)
    try:
        await schema.check_schema(engine, request.db_url)
        async with audit.snapshot(engine) as snapshot:
            yield DatabaseLog(snapshot)
    finally:
        await engine.dispose()
