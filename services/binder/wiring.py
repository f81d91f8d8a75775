"""Wiring of the binder: its consumers, its collaborators, and the loop that runs them.

Layer: binder shell (one job of the three the binder's rooms split: this builds, `service`
dispatches deliveries, `memory` remembers placements). Opens the two durable consumers on
DECISIONS, the bus view, the Kubernetes client and the logs the binder reads back (outcomes on
EVENTS, the newest status on DECISIONS), hands them to `Binder`, and closes them when it stops.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Protocol

from services.binder.outcome_log import StreamOutcomeLog
from services.binder.service import (
    ACK_WAIT_SECONDS,
    CONSUMER,
    MAIN_TYPES,
    REPORT_TYPES,
    REPORTS_ACK_WAIT_SECONDS,
    REPORTS_CONSUMER,
    Binder,
    MissingDecisionKey,
)
from services.binder.status_log import StreamStatusLog
from services.binder.view_feed import ViewFeed
from services.bus import connection, consuming, streams
from services.bus.connection import Connection, JetStream
from services.bus.consuming import PullConsumer
from services.bus.publishing import Publisher as BusPublisher
from services.config.settings import Settings
from services.contracts import subjects
from services.kube import client as kube_client
from services.kube.api import KubeApi

log = logging.getLogger(__name__)


class ReadyFlag(Protocol):
    """Readiness of this service (`services.runtime.health.ReadyFlag`)."""

    def set(self, is_ready: bool = True) -> None: ...

    def hold(self, reason: str) -> None: ...

    def release(self, reason: str) -> None: ...


async def run_binder(settings: Settings, nc: Connection, ready: ReadyFlag) -> None:
    """Run the binder until cancelled: connect to Kubernetes, open the consumer, handle decisions.

    `ready` is held down while the NATS connection is lost, while a consumer of decisions
    cannot consume, and while a stream it publishes to (DECISIONS, DEADLETTER) takes none of
    its publishes (`connection.hold_while_disconnected`, `PullConsumer.open(ready=...)`,
    `publishing.Publisher`: `publishing: stream <name> gone or leaderless`).
    Raises:
        KubeError: no Kubernetes credentials. BusMisconfigured: the streams cannot be set up.
        MissingDecisionKey: `settings.decision_key` is None.
    """
    if settings.decision_key is None:
        raise MissingDecisionKey()
    ready.set(False)
    js = nc.jetstream()
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(connection.hold_while_disconnected(nc, ready))
        await streams.ensure_streams(js, settings.bus)
        client = await kube_client.connect(settings.kube)
        stack.push_async_callback(client.close)
        checks = await kube_client.connect(settings.kube)  # its own slots (`KubeApi`)
        stack.push_async_callback(checks.close)
        placements, reports = await open_consumers(js, settings.bus.prefix, ready=ready)
        view = ViewFeed(js, settings.bus.prefix)
        await view.start()
        publisher = BusPublisher(js, ready=ready, stream_of=streams.stream_of(settings.bus))
        stack.push_async_callback(publisher.close)
        binder = Binder(
            KubeApi(client, controller=settings.scheduler_name, checks=checks),
            publisher,
            settings,
            outcome_log=StreamOutcomeLog(js, settings.bus.prefix, view),
            status_log=StreamStatusLog(js, settings.bus.prefix, settings.decision_key),
            view=view,
        )
        ready.set()
        log.info("binder consuming decisions (prefix %s)", settings.bus.prefix)
        try:
            await binder.consume(placements, reports)
        finally:
            await binder.close()
            await view.stop()
            await placements.close()
            await reports.close()


async def open_consumers(js: JetStream, prefix: str, *, ready: connection.ReadyHold | None = None
                         ) -> tuple[PullConsumer, PullConsumer]:
    """The Placement and Preemption consumer `binder` and the report consumer
    `binder-reports` (Rejections, StatusUpdates) on DECISIONS: every decision type has one.

    An existing `binder` keeps its position (its filter narrowed to Placements and
    Preemptions when it predates `binder-reports`, which then starts after what it
    acknowledged; widened to Preemptions when it predates them). `ready`, if given, is held
    down while either cannot consume.
    Raises:
        NotFound: no DECISIONS stream. BusRefused: NATS refused a consumer.
        BusUnavailable: NATS could not be reached.
    """
    stream = subjects.stream_name(prefix, "DECISIONS")
    reports = await PullConsumer.open(  # first: its start is read from `binder` as it was
        js, stream=stream, durable=REPORTS_CONSUMER,
        filter_subject=[subjects.decisions_of_type_wildcard(prefix, kind.__name__)
                        for kind in REPORT_TYPES],
        ack_wait_seconds=REPORTS_ACK_WAIT_SECONDS,
        start_seq=await _reports_start(js, stream, prefix), start_seq_if_new=True,
        eager=True, ready=ready,
    )
    placements = await PullConsumer.open(
        js, stream=stream, durable=CONSUMER,
        filter_subject=[subjects.decisions_of_type_wildcard(prefix, kind.__name__)
                        for kind in MAIN_TYPES],
        ack_wait_seconds=ACK_WAIT_SECONDS, eager=True,  # a placement waits for no batch
        ready=ready,
    )
    return placements, reports


async def _reports_start(js: JetStream, stream: str, prefix: str) -> int | None:
    """Where a new `binder-reports` consumer starts: after what the old all-decisions `binder`
    consumer acknowledged, when upgrading from a version without it; else None (an existing
    reports consumer keeps its place; a fresh install reads the stream from its start).

    Raises:
        BusUnavailable, BusRefused: NATS failed or refused the request.
    """
    if await consuming.durable_state(js, stream, REPORTS_CONSUMER) is not None:
        return None
    old = await consuming.durable_state(js, stream, CONSUMER)
    if old is None or old.filter_subject != subjects.decisions_wildcard(prefix):
        return None  # none, or not the all-decisions consumer of before
    return old.acked_stream_seq + 1
