"""The planner service: fetch a batch → ONE transaction (audit, apply, plan, outbox, tracking)
→ publish → ack.

Layer: planner shell. Reads EVENTS, writes DECISIONS and the state store; never calls the
Kubernetes API and never reads the wall clock for planning (time comes from events).

Exactly-once effects: a batch is committed whole or not at all; deliveries at or below the
tracked sequence are acknowledged and skipped; decisions are published from the outbox after
the commit, with `Nats-Msg-Id` = decision id, so a crash between commit and publish re-publishes
on restart and JetStream drops the duplicate. A batch's published decisions are marked so in
the next batch's transaction, or after `fetch_timeout_seconds` without events, or at stop (one
transaction per batch, not three); a restart finds those a crash left unmarked in the
DECISIONS stream's tail and does not publish them again (`publication.publish_outbox`). Any
failure in a batch ends the run (the supervisor restarts it): the restart restores the
committed state and re-reads the stream from the tracked sequence, so no delivery is ever
skipped out of order.

The state snapshot is not written per batch but on a schedule (`snapshotting`); the committed
state is the latest snapshot plus the batches committed after it, re-planned at their recorded
plan points on restart (`catchup`), which also proves they give the recorded decisions.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus import connection, consuming, reading, streams
from services.bus.connection import JetStream
from services.bus.consuming import Delivery, PullConsumer
from services.bus.errors import BusMisconfigured, StreamGone, StreamRecreated
from services.bus.publishing import Publisher as BusPublisher
from services.config.settings import PlannerServiceSettings, Settings
from services.contracts import subjects
from services.contracts.decisions import Decision, Placement, Preemption, Rejection
from services.contracts.ids import GroupKey, split_key
from services.planner import catchup, faults, publication
from services.planner.core import census, revision, state
from services.planner.core import config as core_config
from services.planner.intake import Checks, Intake, sort_batch
from services.planner.isolation import Round, isolate, plan_round
from services.planner.ports import EventSource, Publisher, Store
from services.planner.scheduling_time import SchedulingTimes
from services.planner.snapshotting import SnapshotSchedule
from services.runtime import metrics
from services.runtime.health import ReadyFlag
from services.runtime.supervision import Fatal
from services.runtime.unreachable import Repeats
from services.store import schema, urls
from services.store.errors import StoreUnavailable, reaching
from services.store.planner_store import PlannerStore

log = logging.getLogger(__name__)

CATCH_UP_BATCHES = 8
"""Batches a planner that is a batch or more behind applies before it plans once."""
GAUGE_INTERVAL_SECONDS = 1.0
"""Least time between two recounts of the pending-pods and PodGroups-by-phase gauges but the
first (`PlannerService.count_pending`); units: seconds of monotonic time."""

DURABLE = "planner"
PLANNING_ERROR = "planning_error"
"""Reason class of an event the core raised on (`isolation`), as `intake`'s classes."""


class StreamBehindTracking(BusMisconfigured, Fatal):
    """The EVENTS stream ends before the planner's tracked sequence, or is gone while it runs
    (NATS store lost or replaced, or the stream deleted): new events would be skipped, so the
    planner refuses to go on. No restart mends it (`Fatal`): the service ends with one line
    and exit status 1 (as `BusMisconfigured`)."""


class EventStreamRecreated(StreamBehindTracking):
    """The EVENTS stream is not the one the planner's tracked sequence belongs to: created
    anew under its name (its creation time differs from the one the database recorded), at
    start or while the planner runs, it holds another event than the database applied at the
    position the planner read up to, or, retention having removed that one, nothing tells it
    holds the same. Reading on from the tracked sequence would skip or misread events; ended
    as `StreamBehindTracking` is. (A stream restored from its backup holds the same events:
    the planner goes on, `PullConsumer` says so.)"""


class PlannerService:
    """The planner's loop over batches, with its in-memory state and tracked sequence."""

    def __init__(
        self,
        store: Store,
        publisher: Publisher,
        *,
        prefix: str,
        config: core_config.PlannerConfig,
        settings: PlannerServiceSettings | None = None,
        consumer: str = DURABLE,
    ) -> None:
        self.store = store
        self.publisher = publisher
        self.prefix = prefix
        self.config = config
        self.settings = settings or PlannerServiceSettings()
        self.consumer = consumer
        self.state = state.empty_state()
        self.uncommitted = False
        """Whether a batch began changing `state` and was not committed (interrupted): the
        state then holds more than the tracked sequence, and no snapshot may be taken of it."""
        self.tracked_seq = 0
        self.stream_created: str | None = None
        """The identity of the EVENTS stream `tracked_seq` belongs to (`reading.identity`;
        None: not recorded yet)."""
        self.floor_seq = 0
        """The EVENTS stream's first sequence when last asked (retention removed all below)."""
        self.snapshots = SnapshotSchedule(self.settings.snapshot_interval_seconds,
                                          self.settings.snapshot_interval_events)
        self.checks = Checks(prefix, round(self.settings.max_event_lead_seconds * 1000))
        self.scheduling_times = SchedulingTimes(config.scheduler_name)
        self.unmarked: list[str] = []
        """Ids of decisions JetStream stored that the database does not say are published
        yet: marked by the next commit, or when no events come (`mark_unmarked`)."""
        self.clock: Callable[[], float] = time.monotonic
        """Monotonic seconds, for the gauges' throttle only (never for planning)."""
        self.counted_at: float | None = None
        """When the gauges were last recounted (`clock`); None: never (`count_pending`)."""
        self.counted_fresh = False
        """Whether the gauges count the current state (no batch committed, nor state
        restored, since they were last recounted)."""

    async def recover(self) -> int:
        """Restore the committed state, publish what a crash left unpublished; return the first
        stream sequence still to apply (1 for an empty database: rebuild from the stream).

        Raises:
            catchup.CatchUpDiverged: re-planning after the snapshot gave other decisions than
                recorded (a determinism bug, logged with both sides).
        """
        restored = await catchup.restore(self.store, self.config, self.prefix)
        self.state, self.tracked_seq = restored.state, restored.tracked_seq
        self.stream_created = restored.stream_created
        self.snapshots.restart(restored.events)
        self.counted_fresh = False
        self.count_pending(force=True)
        published = await publication.publish_outbox(self.store, self.publisher, self.prefix)
        await publication.publish_dead_letters(
            self.store, self.publisher, self.prefix, self.consumer
        )
        log.info("planner resumes after seq %d: snapshot at seq %d, %d events re-planned at %d "
                 "plan points; %d decisions re-published", self.tracked_seq,
                 restored.snapshot_seq, restored.events, restored.plan_points, published)
        return self.tracked_seq + 1

    async def serve(self, source: EventSource, ready: ReadyFlag | None = None,
                    answered: Callable[[], None] | None = None) -> None:
        """Process batches from `source` until cancelled; `answered` is called once the first
        batch is done (committed, or none came): the database then takes writes too, not only
        the reads of recovery. Raises whatever a batch raises."""
        if ready is not None:
            ready.set()
        try:
            await self.run_once(source)
            if answered is not None:
                answered()
            while True:
                await self.run_once(source)
        finally:
            try:
                await asyncio.shield(self.mark_unmarked())
            except Exception as error:  # the store failed: the run's own error says why
                _at_stop(error)("cannot mark %d published decisions at stop (a restart "
                                "publishes them again; JetStream drops the copies): %s",
                                len(self.unmarked), error)
            try:
                await asyncio.shield(self.snapshot_at_stop())
            except Exception as error:
                _at_stop(error)("cannot write the state snapshot at stop (a restart re-plans "
                                "the batches since the last one): %s", error)

    async def snapshot_at_stop(self) -> None:
        """Write the state as of the last committed batch, unless the latest snapshot holds it.

        A restart then re-plans nothing, so a planner of another core revision (an upgrade)
        starts from this state instead of re-planning, and refusing, batches an earlier
        revision decided (`catchup.CatchUpDiverged`).
        """
        if self.snapshots.events_since == 0 or self.uncommitted:
            return  # nothing new, or a batch interrupted: its changes are in the state
        if await self.store.save_snapshot(state.encode_state(self.state), self.tracked_seq):
            self.snapshots.committed(0, with_snapshot=True)
            log.info("state snapshot written at stop (seq %d)", self.tracked_seq)

    async def mark_unmarked(self) -> None:
        """Mark the decisions published since the last commit (`unmarked`) in the database."""
        if self.unmarked:
            await self.store.mark_published(self.unmarked)
            self.unmarked = []

    async def run_once(self, source: EventSource) -> int:
        """Fetch one batch, commit it, publish its decisions, ack it; return its size.

        A planner behind by a whole batch or more catches up first: it fetches up to
        `CATCH_UP_BATCHES` batches and plans once at the end. Time in the planner is the
        events' time, so planning every batch of a backlog would make decisions at a clock
        minutes behind, whose deadlines pass before a binder sees them (docs/design-notes.md,
        "Deadlines, rollback and expiry"); the plan
        point is recorded as for any batch, so a replay plans at the same places.
        """
        size, linger = self.settings.batch_size, self.settings.batch_linger_seconds
        deliveries = await source.fetch(size, self.settings.fetch_timeout_seconds)
        if deliveries and len(deliveries) < size and linger > 0:
            await asyncio.sleep(linger)  # a burst arriving: plan it once (settings docstring)
            deliveries += await source.fetch(size - len(deliveries), linger)
        while (deliveries and len(deliveries) < CATCH_UP_BATCHES * size
               and deliveries[-1].num_pending >= size):
            more = await source.fetch(size, self.settings.fetch_timeout_seconds)
            if not more:
                break
            deliveries += more
        if not deliveries:
            self.count_pending()  # quiet: the gauges catch up with the last batch
            await self.mark_unmarked()
            return 0
        intake = sort_batch(deliveries, self.tracked_seq, self.checks, self.floor_seq)
        if intake.gap is not None:  # retention may have moved on since last asked
            self.floor_seq = await source.first_seq()
            intake = sort_batch(deliveries, self.tracked_seq, self.checks, self.floor_seq)
        if intake.has_news:
            stored_at_us = next(delivery.stored_at_us for delivery in deliveries
                                if delivery.seq == intake.last_seq)
            await self._apply(intake, source.stream_created, stored_at_us)
        if intake.gap is None:
            await _ack_batch(deliveries)
        else:
            await self._refuse_gap(source, intake.gap, deliveries)
        metrics.consumer_lag.labels(self.consumer).set(deliveries[-1].num_pending)
        return len(deliveries)

    async def _refuse_gap(self, source: EventSource, gap: tuple[int, int],
                          deliveries: list[Delivery]) -> None:
        """A delivery skipped sequences: never move the tracked sequence over them; ack what
        was applied and recreate the consumer from the first missing sequence.

        Deletes and purges are denied, so only a consumer whose filter or position another
        NATS user changed can skip (or a bug): the skipped events are read again, not lost.
        """
        expected, delivered = gap
        log.error("planner consumer skipped EVENTS seqs %d..%d (delivered %d after tracked "
                  "seq %d): its consumer was changed behind its back; recreating it from seq "
                  "%d", expected, delivered - 1, delivered, self.tracked_seq, expected)
        metrics.consumer_repairs.labels(self.consumer, "sequence_gap").inc()
        applied = [delivery for delivery in deliveries if delivery.seq <= self.tracked_seq]
        if applied:
            await _ack_batch(applied)
        await source.repair(self.tracked_seq + 1)

    async def _apply(self, intake: Intake, stream_created: str | None,
                     stored_at_us: int) -> None:
        """Plan the fresh events, commit everything in one transaction (tracking their
        sequence with `stream_created`, the identity of the stream they came from, and
        `stored_at_us`, when NATS stored the message at it, UTC epoch microseconds), then
        publish."""
        self.uncommitted = True  # planning changes `self.state` in place, before the commit
        planned = await self._plan(intake)
        rows = publication.outbox_rows(self.prefix, planned.decisions)
        dead = [poisoned.dead_letter_row() for poisoned in intake.poisoned] + [
            (item.seq, item.subject, why, item.data) for item, why in planned.refused
        ]
        with_snapshot = self.snapshots.is_due(len(planned.applied))
        await self.store.commit_batch(
            [item.audit_row() for item in planned.applied],
            rows,
            intake.last_seq if intake.fresh and planned.is_planned else None,
            state.encode_state(planned.state) if with_snapshot else None,
            intake.last_seq,
            sorted(dead),
            self.unmarked,
            stream_created,
            stored_at_us,
        )
        self.unmarked = []
        self.state, self.tracked_seq = planned.state, intake.last_seq
        self.stream_created = stream_created or self.stream_created
        self.uncommitted = False
        self.snapshots.committed(len(planned.applied), with_snapshot=with_snapshot)
        self.counted_fresh = False
        self.count_pending()
        for seconds in self.scheduling_times.newly_scheduled(
                [item.event for item in planned.applied], self.state):
            metrics.podgroup_scheduling_duration_seconds.observe(seconds)
        faults.crash_after_commit_if_asked([split_key(GroupKey(d.group))[0]
                                            for d in planned.decisions])
        self.unmarked = await publication.publish_rows(self.publisher, rows)
        if dead:
            metrics.dead_letters.labels(self.consumer).inc(len(dead))
            self._count_refused(intake, len(planned.refused))
            await publication.publish_dead_letters(
                self.store, self.publisher, self.prefix, self.consumer
            )
        metrics.events_processed.labels(self.consumer).inc(len(planned.applied))

    async def _plan(self, intake: Intake) -> Round:
        """Run the (synchronous, CPU-bound) planning round of a batch, timed. If the core
        raises, isolate the events that make it raise, from the committed state restored."""
        if not intake.fresh:
            return Round(self.state, [], [])
        started = time.perf_counter()
        planned = plan_round(self.state, intake.fresh, self.config, intake.last_seq)
        if planned is None:
            before = await catchup.restore(self.store, self.config, self.prefix)
            planned = isolate(before.state, intake.fresh, self.config, intake.last_seq)
        metrics.scheduling_attempt_duration_seconds.observe(time.perf_counter() - started)
        _count_attempts(planned.decisions)
        if planned.refused:
            metrics.schedule_attempts.labels("error").inc()
        return planned

    def _count_refused(self, intake: Intake, planning_errors: int) -> None:
        """Count the batch's dead letters by reason class (`gangsched_events_refused_total`)."""
        refused = metrics.events_refused
        for poisoned in intake.poisoned:
            refused.labels(self.consumer, poisoned.reason_class).inc()
        if planning_errors:
            refused.labels(self.consumer, PLANNING_ERROR).inc(planning_errors)

    def count_pending(self, *, force: bool = False) -> None:
        """Set the pending-pods and PodGroups-by-phase gauges from the current state, if it
        changed since they were last set (`counted_fresh`) and at most once per
        `GAUGE_INTERVAL_SECONDS` (`force`: at once, as at start).

        Both counts scan every group (`census`), too much after every batch of a busy planner;
        the gauges are scraped every few seconds, so they may lag the state by up to
        `GAUGE_INTERVAL_SECONDS` (plus one `fetch_timeout_seconds`: a quiet planner calls this
        after every fetch that brings nothing, so its gauges catch up with its last batch).
        Nothing the planner decides reads them. At stop they are not recounted: a stopped
        planner sets them no more, however fresh.
        """
        if self.counted_fresh:
            return
        now = self.clock()
        if (not force and self.counted_at is not None
                and now - self.counted_at < GAUGE_INTERVAL_SECONDS):
            return
        metrics.pending_pods.set(census.pending_pods(self.state, self.config.scheduler_name))
        for phase, count in census.podgroups_by_phase(self.state).items():
            metrics.podgroups.labels(phase).set(count)
        self.counted_at, self.counted_fresh = now, True


DATABASE_RETRY_FIRST_SECONDS = 0.5
DATABASE_RETRY_MAX_SECONDS = 30.0
"""The planner retries a database it cannot reach after these waits, doubling (the
supervisor's backoff, `services.runtime.supervision`)."""


class DatabaseOutage:
    """What the planner says while its database cannot be reached, as for NATS
    (`services.runtime.unreachable`): one WARNING at the first failure of each kind, `cannot
    reach the database <URL>: <driver error>; retrying in 0.5s`, again every tenth failure of
    that kind with its count, no traceback (the error is no bug); one INFO line, `the
    database <URL> answers again`, once the planner has recovered from it. Meanwhile `ready`
    (if given) is held down with the last failure's message, which /readyz shows. Holds the
    backoff between attempts, which doubles up to `DATABASE_RETRY_MAX_SECONDS` and starts
    again at the first once it answers."""

    def __init__(self, ready: ReadyFlag | None = None) -> None:
        self._ready = ready
        self._repeats = Repeats()
        self._url = ""
        self._held = ""
        self.delay_seconds = DATABASE_RETRY_FIRST_SECONDS
        """The wait before the next attempt."""
        self._since: float | None = None

    def unreachable_seconds(self) -> float:
        """How long the database has failed without answering (monotonic seconds; 0 when it
        answered since its last failure)."""
        return 0.0 if self._since is None else time.monotonic() - self._since

    def failed(self, error: StoreUnavailable, url: str) -> None:
        """An attempt failed with `error` on the database at `url` (without its password)."""
        self._url = url
        if self._since is None:
            self._since = time.monotonic()
        count = self._repeats.count(error.why)
        repeats = f" ({count} such failures)" if count is not None and count > 1 else ""
        (log.debug if count is None else log.warning)(
            "%s; retrying in %gs%s", error, self.delay_seconds, repeats)
        if self._ready is not None:
            self._ready.set(False)
            self.release()
            self._held = str(error)
            self._ready.hold(self._held)

    async def wait(self) -> None:
        """Wait before the next attempt; the wait after it is twice as long (up to the max)."""
        await asyncio.sleep(self.delay_seconds)
        self.delay_seconds = min(self.delay_seconds * 2, DATABASE_RETRY_MAX_SECONDS)

    def answered(self) -> None:
        """The database answered (the planner recovered from it): say so if a failure was."""
        self.delay_seconds = DATABASE_RETRY_FIRST_SECONDS
        self._since = None
        self.release()
        if self._repeats.clear():
            log.info("the database %s answers again", self._url)

    def release(self) -> None:
        """End the hold on `ready`, if any (the planner stops, or the database answered)."""
        if self._ready is not None and self._held:
            self._ready.release(self._held)
        self._held = ""


async def run_planner(
    settings: Settings,
    js: JetStream,
    engine: AsyncEngine,
    ready: ReadyFlag | None = None,
    *,
    config: core_config.PlannerConfig | None = None,
) -> None:
    """Run the planner until cancelled: check the schema, recover, then serve batches.

    A database that cannot be reached (at the start or mid-run: `StoreUnavailable`) is
    waited for here, said as `DatabaseOutage` says, not ready meanwhile: each attempt
    starts over from the schema check and the committed state, as a restart would. Under
    leader election, once it has not answered for a lease's length
    (`leader_lease_seconds`), the StoreUnavailable is raised instead, so the leader lets its
    lease go and a standby that reaches the database takes over.
    `ready` is also held down while the NATS connection is lost, while the EVENTS consumer
    cannot consume, and while a stream it publishes to (DECISIONS, DEADLETTER) takes none of
    its publishes (`connection.hold_while_disconnected`, `PullConsumer.open(ready=...)`,
    `publishing.Publisher`: `publishing: stream <name> gone or leaderless`).
    Raises:
        services.store.errors.SchemaMismatch: the database needs `gangsched migrate`.
        StreamBehindTracking: the EVENTS stream ends before the tracked sequence, or is gone
            after the planner read from it (NATS store lost), or is another stream than the
            one the tracked sequence belongs to (`EventStreamRecreated`): no restart mends it.
        Anything else a batch raises (NATS failures, bugs): run it under a supervisor.
    """
    stop_following = (connection.hold_while_disconnected(connection.client_of(js), ready)
                      if ready is not None else None)
    outage = DatabaseOutage(ready)
    url = urls.shown(engine.url.render_as_string(hide_password=False))
    try:
        while True:
            try:
                await _run(settings, js, engine, ready, config, outage.answered)
                return
            except StoreUnavailable as error:
                outage.failed(error, url)
                if settings.planner.leader_election and (
                        outage.unreachable_seconds() >= settings.planner.leader_lease_seconds):
                    log.warning("stepping down as the leader: the database %s has not answered "
                                "for %.0fs; a planner that reaches it takes over", url,
                                outage.unreachable_seconds())
                    raise
            await outage.wait()
    finally:
        outage.release()  # stopped: its readiness no longer held down by the database
        if stop_following is not None:
            stop_following()


async def _run(settings: Settings, js: JetStream, engine: AsyncEngine, ready: ReadyFlag | None,
               config: core_config.PlannerConfig | None, answered: Callable[[], None]) -> None:
    """One attempt of `run_planner`; `answered` is called once the planner has recovered and
    served its first batch (a database that answers reads but refuses writes keeps backing off).

    Raises:
        StoreUnavailable: the database cannot be reached; else as `run_planner`.
    """
    with reaching(urls.shown(engine.url.render_as_string(hide_password=False))):
        await schema.check_schema(engine)
    await streams.ensure_streams(js, settings.bus)
    publisher = BusPublisher(js, signing_key=settings.decision_key, ready=ready,
                             stream_of=streams.stream_of(settings.bus))
    try:
        await _serve(js, engine, publisher, settings, ready, config, answered)
    finally:
        await publisher.close()


async def _serve(js: JetStream, engine: AsyncEngine, publisher: BusPublisher, settings: Settings,
                 ready: ReadyFlag | None, config: core_config.PlannerConfig | None,
                 answered: Callable[[], None]) -> None:
    """`run_planner` once its publisher exists: recover, then serve batches until cancelled."""
    prefix = settings.bus.prefix
    service = PlannerService(
        PlannerStore(engine, consumer=DURABLE, snapshot=DURABLE, planner=revision.PLANNER),
        publisher,
        prefix=prefix,
        config=config or core_config.PlannerConfig(scheduler_name=settings.scheduler_name),
        settings=settings.planner,
    )
    start_seq = await service.recover()
    events_stream = subjects.stream_name(prefix, "EVENTS")
    await _check_stream(js, events_stream, service)
    applied = await service.store.message_at(service.tracked_seq) if start_seq > 1 else None
    # the event applied at the tracked seq, with when NATS stored it (if recorded)
    try:
        consumer = await PullConsumer.open(
            js, stream=events_stream, durable=DURABLE,
            filter_subject=subjects.events_wildcard(prefix), start_seq=start_seq,
            ack_policy=consuming.ACK_ALL, ready=ready, stream_loss_fatal=True,
            stream_created=service.stream_created,
            landmark=None if applied is None else reading.Landmark(start_seq - 1, *applied),
        )
    except StreamRecreated as recreated:
        raise _recreated(recreated, service.tracked_seq) from None
    if consumer.stream_created not in (None, service.stream_created):
        await service.store.adopt_stream(consumer.stream_created)  # checked by its content
        service.stream_created = consumer.stream_created
    try:
        await service.serve(consumer, ready, answered)
    except StreamGone as gone:
        raise StreamBehindTracking(
            f"{gone}, but the planner database has applied up to seq {service.tracked_seq}: "
            f"a stream made anew would be read from the wrong place; {RESTORE_OR_REBUILD}"
        ) from None
    except StreamRecreated as recreated:
        raise _recreated(recreated, service.tracked_seq) from None
    finally:
        if ready is not None:
            ready.set(False)
        await consumer.close()


def _at_stop(error: Exception) -> Callable[..., None]:
    """How to log a write at stop that failed with `error`: at DEBUG when the database cannot
    be reached (the run's own failure says so, once: `DatabaseOutage`), else at WARNING."""
    return log.debug if isinstance(error, StoreUnavailable) else log.warning


async def _check_stream(js: JetStream, stream: str, service: PlannerService) -> None:
    """Refuse to start when `stream` ends before the service's tracked sequence
    (`StreamBehindTracking`). A database tracking a sequence without having recorded which
    stream it belongs to (written before schema revision 0003) is said to take the stream it
    finds (once, INFO; `_serve` records it once the consumer is open). Whether the stream
    holds the events the database applied is the consumer's check, by content
    (`PullConsumer.open(landmark=...)`).

    Raises:
        StreamBehindTracking: as said.
        services.bus.errors.NotFound: no such stream. BusUnavailable, BusRefused: NATS
            failed or refused.
    """
    found = await reading.stream_state(js, stream)
    tracked = service.tracked_seq
    if found.last_seq < tracked:
        raise _behind(stream, found.last_seq, tracked)
    if tracked > 0 and service.stream_created is None and found.created is not None:
        log.info("the planner database tracks seq %d of stream %s without saying which stream "
                 "it was (written before schema revision 0003): taking it to be this one, "
                 "created at %s", tracked, stream, found.created)


RESTORE_OR_REBUILD = ("restore the NATS store (or a backup of the stream) the database was "
                      "used with, or point the planner at a fresh database to rebuild its "
                      "state from this stream")
"""What the operator can do when the EVENTS stream is not the planner database's."""


def _behind(stream: str, last_seq: int, tracked_seq: int) -> StreamBehindTracking:
    """The planner's one line for an EVENTS stream ending before its tracked sequence."""
    return StreamBehindTracking(
        f"stream {stream} ends at seq {last_seq} but the planner database has applied up to "
        f"{tracked_seq}: the NATS store was lost or replaced, or restored from an older "
        f"backup; {RESTORE_OR_REBUILD}")


def _recreated(recreated: StreamRecreated, tracked_seq: int) -> StreamBehindTracking:
    """The planner's one line for an EVENTS stream made anew that does not hold the events its
    database applied (`EventStreamRecreated`), or ends before them (`_behind`), at start or
    while it runs, with what the operator can do."""
    if recreated.found == "ends_before":
        return _behind(recreated.stream, recreated.last_seq, tracked_seq)
    applied = f"the planner database applied (up to seq {tracked_seq})"
    told = (f"so it holds other events than {applied}" if recreated.found == "other"
            else f"so whether it holds the events {applied} cannot be told")
    return EventStreamRecreated(f"the event {recreated}: {told}; {RESTORE_OR_REBUILD}")


async def _ack_batch(deliveries: list[Delivery]) -> None:
    """Acknowledge a committed (or skipped) batch with one ack of its last delivery: the
    consumer's ack policy is ALL, and everything up to that sequence is committed, because
    the planner applies the stream strictly in order."""
    await max(deliveries, key=lambda delivery: delivery.seq).ack()


def _count_attempts(decisions: list[Decision]) -> None:
    """Count group scheduling attempts by result (placements and rejections), and preemptions
    with their victims."""
    for decision in decisions:
        if isinstance(decision, Placement):
            metrics.schedule_attempts.labels("scheduled").inc()
        elif isinstance(decision, Rejection):
            result = "unschedulable" if decision.is_unschedulable else "unresolvable"
            metrics.schedule_attempts.labels(result).inc()
        elif isinstance(decision, Preemption):
            metrics.preemption_attempts.inc()
            metrics.preemption_victims_chosen.observe(len(decision.victims))
