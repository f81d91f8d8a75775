"""The planner service: fetch a batch → ONE transaction (audit, apply, plan, outbox, tracking)
→ publish → ack.

Layer: planner shell. Reads EVENTS, writes DECISIONS and the state store; never calls the
Kubernetes API and never reads the wall clock for planning (time comes from events).

Exactly-once effects: a batch is committed whole or not at all; deliveries at or below the
tracked sequence are acknowledged and skipped; decisions are published from the outbox after
the commit, with `Nats-Msg-Id` = decision id, so a crash between commit and publish re-publishes
on restart and JetStream drops the duplicate. Any failure in a batch ends the run (the
supervisor restarts it): the restart reloads the committed state and re-reads the stream from
the tracked sequence, so no delivery is ever skipped out of order.
"""

from __future__ import annotations

import logging
import time

from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus import streams
from services.bus.consuming import Delivery, PullConsumer
from services.bus.publishing import Publisher as BusPublisher
from services.config.settings import PlannerServiceSettings, Settings
from services.contracts import subjects
from services.contracts.decisions import Decision, Placement, Rejection
from services.planner import faults, publication
from services.planner.core import config as core_config
from services.planner.core import state
from services.planner.intake import Intake, sort_batch
from services.planner.isolation import Round, plan_round
from services.planner.ports import EventSource, Publisher, Store
from services.runtime import metrics
from services.runtime.health import ReadyFlag
from services.store import schema
from services.store.planner_store import PlannerStore

log = logging.getLogger(__name__)

DURABLE = "planner"


class StreamBehindTracking(Exception):
    """The EVENTS stream ends before the planner's tracked sequence (NATS store lost or
    replaced): new events would be skipped, so the planner refuses to start."""


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
        self.tracked_seq = 0
        self._committed = state.encode_state(self.state)

    async def recover(self) -> int:
        """Load the committed state, publish what a crash left unpublished; return the first
        stream sequence still to apply (1 for an empty database: rebuild from the stream)."""
        data, self.tracked_seq = await self.store.load()
        if data is not None:
            self.state, self._committed = state.decode_state(data), data
        published = await publication.publish_outbox(self.store, self.publisher)
        await publication.publish_dead_letters(
            self.store, self.publisher, self.prefix, self.consumer
        )
        log.info("planner resumes after seq %d (%d decisions re-published)",
                 self.tracked_seq, published)
        return self.tracked_seq + 1

    async def serve(self, source: EventSource, ready: ReadyFlag | None = None) -> None:
        """Process batches from `source` until cancelled. Raises whatever a batch raises."""
        if ready is not None:
            ready.set()
        while True:
            await self.run_once(source)

    async def run_once(self, source: EventSource) -> int:
        """Fetch one batch, commit it, publish its decisions, ack it; return its size."""
        deliveries = await source.fetch(
            self.settings.batch_size, self.settings.fetch_timeout_seconds
        )
        if not deliveries:
            return 0
        intake = sort_batch(deliveries, self.tracked_seq)
        if intake.has_news:
            await self._apply(intake)
        await _ack_all(deliveries)
        metrics.consumer_lag.labels(self.consumer).set(deliveries[-1].num_pending)
        return len(deliveries)

    async def _apply(self, intake: Intake) -> None:
        """Plan the fresh events, commit everything in one transaction, then publish."""
        planned = self._plan(intake)
        rows = publication.outbox_rows(self.prefix, planned.decisions)
        dead = intake.poisoned + [
            (item.seq, item.subject, why, item.data) for item, why in planned.refused
        ]
        state_bytes = state.encode_state(planned.state)
        await self.store.commit_batch(
            [item.audit_row() for item in planned.applied],
            rows,
            intake.last_seq if intake.fresh else None,
            state_bytes,
            intake.last_seq,
            sorted(dead),
        )
        self.state, self._committed, self.tracked_seq = planned.state, state_bytes, intake.last_seq
        faults.crash_after_commit_if_asked(len(rows))
        await publication.publish_outbox(self.store, self.publisher)
        if dead:
            metrics.dead_letters.labels(self.consumer).inc(len(dead))
            await publication.publish_dead_letters(
                self.store, self.publisher, self.prefix, self.consumer
            )
        metrics.events_processed.labels(self.consumer).inc(len(planned.applied))

    def _plan(self, intake: Intake) -> Round:
        """Run the (synchronous, CPU-bound) planning round of a batch, timed."""
        if not intake.fresh:
            return Round(self.state, [], [])
        started = time.perf_counter()
        planned = plan_round(
            self.state, self._committed, intake.fresh, self.config, intake.last_seq
        )
        metrics.scheduling_attempt_duration_seconds.observe(time.perf_counter() - started)
        _count_attempts(planned.decisions)
        if planned.refused:
            metrics.schedule_attempts.labels("error").inc()
        return planned


async def run_planner(
    settings: Settings,
    js: JetStreamContext,
    engine: AsyncEngine,
    ready: ReadyFlag | None = None,
    *,
    config: core_config.PlannerConfig | None = None,
) -> None:
    """Run the planner until cancelled: check the schema, recover, then serve batches.

    Raises:
        services.store.errors.SchemaMismatch: the database needs `gangsched migrate`.
        StreamBehindTracking: the EVENTS stream ends before the tracked sequence.
        Anything a batch raises (database or NATS failures): run it under a supervisor.
    """
    await schema.check_schema(engine)
    await streams.ensure_streams(js, settings.bus)
    prefix = settings.bus.prefix
    service = PlannerService(
        PlannerStore(engine, consumer=DURABLE, snapshot=DURABLE),
        BusPublisher(js),
        prefix=prefix,
        config=config or core_config.PlannerConfig(scheduler_name=settings.scheduler_name),
        settings=settings.planner,
    )
    start_seq = await service.recover()
    events_stream = subjects.stream_name(prefix, "EVENTS")
    await _check_stream_reaches(js, events_stream, service.tracked_seq)
    consumer = await PullConsumer.open(
        js, stream=events_stream, durable=DURABLE,
        filter_subject=subjects.events_wildcard(prefix), start_seq=start_seq,
    )
    try:
        await service.serve(consumer, ready)
    finally:
        if ready is not None:
            ready.set(False)
        await consumer.close()


async def _check_stream_reaches(js: JetStreamContext, stream: str, tracked_seq: int) -> None:
    """Refuse to start when `stream` ends before `tracked_seq` (see `StreamBehindTracking`)."""
    info = await js.stream_info(stream)
    if info.state.last_seq < tracked_seq:
        raise StreamBehindTracking(
            f"stream {stream} ends at seq {info.state.last_seq} but the planner database has "
            f"applied up to {tracked_seq}: the NATS store was lost or replaced; point the "
            f"planner at a fresh database to rebuild from the stream"
        )


async def _ack_all(deliveries: list[Delivery]) -> None:
    """Acknowledge every delivery of a committed (or skipped) batch."""
    for delivery in deliveries:
        await delivery.ack()


def _count_attempts(decisions: list[Decision]) -> None:
    """Count group scheduling attempts by result (placements and rejections)."""
    for decision in decisions:
        if isinstance(decision, Placement):
            metrics.schedule_attempts.labels("scheduled").inc()
        elif isinstance(decision, Rejection):
            result = "unschedulable" if decision.is_unschedulable else "unresolvable"
            metrics.schedule_attempts.labels(result).inc()
