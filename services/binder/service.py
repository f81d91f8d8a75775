"""The binder's dispatch loop: deliveries in, carried out in their lanes, acked or dead-lettered.

Layer: binder shell (one job of three: `wiring` builds and runs the binder, this dispatches,
`memory` remembers what placements did; docs/architecture.md). Two durable work-queue
consumers on DECISIONS (several binder processes share them, so each decision is handled by one
of them): `binder` takes Placements and Preemptions, `binder-reports` takes Rejections and
StatusUpdates, so neither waits in the stream behind reports (which cost several API writes each
and, under contention, outnumber placements a hundred to one). Placements and Preemptions of
different groups run concurrently and those of one group in stream order, in one lane
(`preempting` evicts a Preemption's victims); reports run per (type, group) lane with
only the newest waiting one kept (`coalescing`), and their API requests yield to binding
(`yielding`: few in flight while any placement binds). A decision is acked only after it is
carried out (a placement: after its outcomes are published) or superseded. A poisoned decision
is dead-lettered and terminated; nothing a decision contains can crash the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from services.binder import outcomes, placing, preempting
from services.binder.coalescing import Coalescer
from services.binder.consumption import Consumer, Delivery, GroupLocks, heartbeat
from services.binder.member_budget import MemberBudget
from services.binder.memory import OutcomeLog, PlacementMemory
from services.binder.placing import Policy
from services.binder.ports import Kube, Publisher, WallClock
from services.binder.reporter import Reporter, StatusLog
from services.binder.view import ClusterView
from services.binder.view_feed import ViewFeed
from services.binder.yielding import ReportGate, YieldingKube
from services.config.settings import Settings
from services.contracts import codec, dead_letters, subjects
from services.contracts.decisions import (
    Decision,
    Placement,
    Preemption,
    Rejection,
    StatusUpdate,
)
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey
from services.runtime import metrics

log = logging.getLogger(__name__)

CONSUMER = "binder"
"""The Placement and Preemption consumer (named as before reports had their own, so upgrades
keep its place)."""
MAIN_TYPES = (Placement, Preemption)
"""The decision types `binder` takes (`wiring.open_consumers` filters for them)."""
REPORTS_CONSUMER = "binder-reports"
REPORT_TYPES = (Rejection, StatusUpdate)
"""The decision types `binder-reports` takes; with MAIN_TYPES, every decision type, once."""
ACK_WAIT_SECONDS = 6.0
"""How soon JetStream redelivers a placement whose binder stopped reporting it in progress
(crashed, killed): well within a gang's timeout (default 60 s), so a restarted or other binder
resumes it within seconds (`placing.carry_out` on a redelivery) instead of a minute later, when
the gang had sat partly bound past its timeout (docs/design-notes.md, "Deadlines, rollback
and expiry"). Placements beyond `MAX_PLACEMENTS_IN_FLIGHT` are not delivered yet, so their
ack wait does not run; those held and waiting for room in the member budget are reported in
progress like the ones binding."""
HEARTBEAT_SECONDS = ACK_WAIT_SECONDS / 3
"""A decision in progress is reported to JetStream this often, so it is not redelivered."""

FETCH_BATCH = 64
FETCH_TIMEOUT_SECONDS = 1.0
MAX_PLACEMENTS_IN_FLIGHT = 512
"""Placements one binder holds at once, taken in stream order. Many, so that the serial waits
inside each (its NATS reads, its post-bind node check, its outcome's publish ack) overlap other
placements' binds: holding 32, the binder was full through workload b of the cluster benchmark
and bound 167-172 pods/s in three runs; holding 256 (with the planner's limit at 512), 191-224
(bench/README.md, "Session 21"). At 5,000 nodes, where a post-bind node check (a consistent
LIST) takes seconds, 256 still filled up while pods were created and queued the rest: in
workload b the last bind came 7 s after the last creation and gangs waited 10 s at p99; holding
512 (as many as the planner hands out), 1 s and 4-4.5 s, with pods/s within the noise (0.88x and
0.93x the trivial binder's in the same rounds against 0.84x and 1.02x; two rounds each,
bench/README.md, "Session 36"). What binds at once is bounded by members instead
(`MAX_MEMBERS_BINDING`)."""
MAX_MEMBERS_BINDING = 2048
"""Members the placements of one binder bind at once (`member_budget.MemberBudget`): a
placement starts binding, and its timeout starts running, only once its members fit behind the
placements that asked before it. Few enough that the API server serves the oldest placements
first: with thousands of binds at once every placement progressed at the same slow pace and all
of them missed their deadline together, each then rolled back and placed again. A full budget
drains within a gang's default timeout (60 s) at 35 binds/s or more; workload c bound 141-155
pods/s with 1,024, 152 with 2,048 and 162-165 with 4,096 (two runs each)."""
MAX_REPORTS_IN_FLIGHT = 32
"""Rejections (and, apart, status updates) being written at once; a rejection is up to two
API calls per pod it names."""
VIEW_WAIT_SECONDS = 1.0
"""How long a placement waits for the bus view to reach its plan point before reading the API."""
REJECTION_SETTLE_SECONDS = 1.0
"""A rejection waits this long before it is written, and only the newest of its group is: a gang
told it waits for quorum may be told again as its next members arrive, two API calls per pod
each time (the planner holds the first telling until members stop arriving,
`planner.core.quorum.QUIET_MS`)."""
REJECTION_MAX_SETTLE_SECONDS = 10.0
"""The longest wait of a group rejected again and again (each next wait doubles): as
kube-scheduler's pod backoff (1 s doubling to its default podMaxBackoffSeconds, 10 s), which
bounds how often it writes a failing pod's FailedScheduling and PodScheduled=False. Under
contention (workload c of the cluster benchmark) rejections were half the binder's writes."""
STATUS_SETTLE_SECONDS = 3.0
"""The same for PodGroup status (a PATCH each): it changes with every member created,
placed, bound and started, about five times per gang within seconds."""
REPORTS_ACK_WAIT_SECONDS = 300.0
"""A report may wait behind its lane's running one; redelivered meanwhile, it is superseded."""
MAX_ATTEMPTS = 5
"""Deliveries after which a decision whose handling keeps failing is dead-lettered."""

RETRY_DELAY_SECONDS = 5.0
MAX_REASON_CHARS = 512
"""The longest reason a dead letter carries (its header); longer ones are cut."""


class MissingDecisionKey(Exception):
    """The binder was started without the key that proves decisions are the planner's."""

    def __init__(self) -> None:
        super().__init__(
            "the binder acts only on decisions signed by the planner: give the planner and the "
            "binder the same --decision-key-file (GANGSCHED_DECISION_KEY_FILE), e.g. made with "
            "`openssl rand -hex 32 > decision.key`")


class Binder:
    """Handles decisions; `consume` runs the fetch loop, `process` one delivery.

    Collaborators: `outcome_log` reads the outcomes any binder published (EVENTS),
    `status_log` the newest StatusUpdate of a group (DECISIONS), `view` is the bus view of
    pods, nodes and PodGroups (`wiring` opens all three). The binder builds its reporter on
    them, with a gate that makes reports yield to binding (`yielding`); `close` stops it.
    Only a delivery signed with `settings.decision_key` is decoded and acted on; any other is
    dead-lettered with the reason (`services.contracts.signing`).
    Raises (constructor): MissingDecisionKey when `settings.decision_key` is None.
    """

    def __init__(
        self,
        kube: Kube,
        publisher: Publisher,
        settings: Settings,
        *,
        outcome_log: OutcomeLog,
        status_log: StatusLog,
        view: ViewFeed,
        clock: WallClock = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        if settings.decision_key is None:
            raise MissingDecisionKey()
        self._gate = ReportGate()
        self._budget = MemberBudget(MAX_MEMBERS_BINDING)
        budget = self._budget  # read at each scrape (the newest binder's, in tests)
        metrics.binder_members_binding.set_function(lambda: budget.in_use)
        metrics.binder_placements_waiting.set_function(lambda: budget.waiting)
        self._key: DecisionKey = settings.decision_key
        self._kube = kube
        self._publisher = publisher
        self._prefix = settings.bus.prefix
        self._policy = Policy(
            scheduler_name=settings.scheduler_name,
            concurrency=max(1, settings.binder.concurrency),
            rollback_bare_pods=settings.binder.rollback_bare_pods,
        )
        self._memory = PlacementMemory(outcome_log)
        self._clock = clock
        self._reporter = Reporter(
            YieldingKube(kube, self._gate),
            event_interval_seconds=settings.binder.event_interval_seconds,
            concurrency=self._policy.concurrency,
            status_log=status_log,
            placing_kube=kube,
            view=view,
            urgent=self._gate.urgent,
        )
        self._view = view
        self._groups = GroupLocks()
        self._rejections: Coalescer[tuple[Delivery, Decision]] = Coalescer(
            self._write_report, self._superseded, MAX_REPORTS_IN_FLIGHT,
            settle_seconds=REJECTION_SETTLE_SECONDS,
            max_settle_seconds=REJECTION_MAX_SETTLE_SECONDS)
        self._statuses: Coalescer[tuple[Delivery, Decision]] = Coalescer(
            self._write_report, self._superseded, MAX_REPORTS_IN_FLIGHT,
            settle_seconds=STATUS_SETTLE_SECONDS)

    async def close(self) -> None:
        """Stop what the binder runs beside its loops: the reporter's owed events."""
        await self._reporter.close()

    async def consume(self, placements: Consumer, reports: Consumer) -> None:
        """Fetch and handle decisions from both consumers forever (module docstring)."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self.consume_placements(placements))
            group.create_task(self.consume_reports(reports))

    async def consume_placements(self, consumer: Consumer) -> None:
        """Fetch and handle placements and preemptions forever; each in its own task, bounded
        in number.

        Only as many as there are free slots are fetched, so every delivery this process holds
        is being worked on and reported in progress; the rest stay with JetStream for any
        binder replica to take.
        """
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                free = MAX_PLACEMENTS_IN_FLIGHT - len(tasks)
                if free <= 0:
                    await asyncio.wait(set(tasks), return_when=asyncio.FIRST_COMPLETED)
                    continue
                for delivery in await consumer.fetch(min(FETCH_BATCH, free),
                                                     FETCH_TIMEOUT_SECONDS):
                    metrics.consumer_lag.labels(CONSUMER).set(delivery.num_pending)
                    task = asyncio.create_task(self._process_logged(delivery))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def consume_reports(self, consumer: Consumer) -> None:
        """Fetch reports forever and hand them to the coalescer (newest per lane wins)."""
        try:
            while True:
                for delivery in await consumer.fetch(FETCH_BATCH, FETCH_TIMEOUT_SECONDS):
                    metrics.consumer_lag.labels(REPORTS_CONSUMER).set(delivery.num_pending)
                    try:
                        await self.submit_report(delivery)
                    except Exception:  # e.g. NATS refused the dead letter: redelivered later
                        log.exception("report seq %d (%s) left unacknowledged", delivery.seq,
                                      delivery.subject)
        finally:
            await self._rejections.close()
            await self._statuses.close()

    async def submit_report(self, delivery: Delivery) -> None:
        """Check, decode and queue a report in its lane; a forged or poisoned one is
        dead-lettered."""
        decision = await self._decision(delivery, REPORTS_CONSUMER)
        if decision is None:
            return
        reports = self._statuses if isinstance(decision, StatusUpdate) else self._rejections
        reports.submit(lane(decision), delivery.seq, (delivery, decision))

    async def reports_idle(self) -> None:
        """Wait until every submitted report was written or superseded."""
        await self._rejections.idle()
        await self._statuses.idle()

    async def _write_report(self, item: tuple[Delivery, Decision]) -> None:
        delivery, decision = item
        async with heartbeat(delivery, HEARTBEAT_SECONDS):
            await self._carry_out(delivery, decision)

    async def _superseded(self, item: tuple[Delivery, Decision]) -> None:
        delivery, decision = item
        log.debug("report %s of %s superseded by a newer one", decision.id, decision.group)
        metrics.reports_superseded.inc()
        await delivery.ack()

    async def _process_logged(self, delivery: Delivery) -> None:
        """`process`, with anything it raises logged: one decision never stops the others."""
        try:
            await self.process(delivery)
        except Exception:
            log.exception("decision seq %d (%s) left unacknowledged", delivery.seq,
                          delivery.subject)

    async def process(self, delivery: Delivery) -> None:
        """Check, decode, handle (in order within the group), then ack; dead-letter what
        cannot be."""
        decision = await self._decision(delivery, CONSUMER)
        if decision is None:
            return
        async with heartbeat(delivery, HEARTBEAT_SECONDS), self._groups.hold(lane(decision)):
            await self._carry_out(delivery, decision)

    async def _decision(self, delivery: Delivery, consumer: str) -> Decision | None:
        """The delivery's decision when the planner signed it and it decodes; else None, after
        dead-lettering it with the reason (a forged decision is never decoded, let alone
        carried out)."""
        forged = self._key.check(delivery.subject, delivery.data,
                                 delivery.headers.get(SIGNATURE_HEADER))
        if forged is not None:
            await self._dead_letter(delivery, f"not the planner's decision: {forged}", consumer)
            return None
        try:
            return codec.decode_decision(delivery.data)
        except codec.PoisonedMessage as error:
            await self._dead_letter(delivery, f"PoisonedMessage: {error}", consumer)
            return None

    async def _carry_out(self, delivery: Delivery, decision: Decision) -> None:
        """Handle, then ack; on failure retry later or dead-letter."""
        try:
            await self.handle(decision, is_redelivery=delivery.num_delivered > 1)
        except Exception as error:
            await self._failed(delivery, decision, error)
            return
        await delivery.ack()

    async def handle(self, decision: Decision, *, is_redelivery: bool) -> None:
        """Carry out one decision; returns once its outcomes (if any) are published.
        `is_redelivery`: JetStream delivered it before (a placement then resumes)."""
        if isinstance(decision, Placement):
            await self._place(decision, is_redelivery)
        elif isinstance(decision, Preemption):
            await self._preempt(decision)
        elif isinstance(decision, Rejection):
            await self._reporter.rejected(decision)
        elif isinstance(decision, StatusUpdate):
            await self._reporter.status(decision)

    async def _place(self, placement: Placement, is_redelivery: bool) -> None:
        """Bind or roll back, publish the outcomes, then start writing what users see (in the
        background: `Reporter.placed_in_background`)."""
        prior = await self._memory.prior_outcomes(placement, is_redelivery)
        if any(outcomes.is_final(outcome) for outcome in prior):
            log.info("placement %s already settled; acknowledging", placement.id)
            return
        if not prior and await self._memory.is_stale(placement):
            return
        log.debug("placement %s of %s (attempt %d, %d members, delivery %s) due in %.1fs",
                  placement.id, placement.group, placement.attempt, len(placement.members),
                  "again" if is_redelivery else "first",
                  (placement.deadline_ms - self._clock()) / 1000)
        known = await self._known_at(placement.plan_seq)
        async with self._room(placement, is_redelivery), self._gate.binding():
            started = time.monotonic()
            settled = await placing.carry_out(
                placement, self._kube, self._policy, self._clock, is_redelivery=is_redelivery,
                known=known,
            )
        await self._publisher.publish_many(outcomes.publish_items(self._prefix, settled.outcomes))
        self._memory.remember(placement.id, settled.outcomes)
        if settled.rolled_back is None:
            metrics.bind_duration_seconds.observe(time.monotonic() - started)
            log.debug("placement %s of %s bound", placement.id, placement.group)
        else:
            metrics.rollbacks.inc()
        await self._reporter.placed_in_background(placement, settled)

    def _room(self, placement: Placement,
              is_redelivery: bool) -> contextlib.AbstractAsyncContextManager[None]:
        """Room for the placement's members in the member budget, taken in turn. None is needed
        by a redelivery (it resumes or undoes what an earlier delivery bound, and an undo must
        end within the rollback margin, `contracts.binding_window`, not queue behind new binds)
        nor by a placement whose binding window has closed (it binds nothing)."""
        if is_redelivery or placing.Window.of(placement).stop_ms <= self._clock():
            return contextlib.nullcontext()
        return self._budget.take(len(placement.members))

    async def _preempt(self, preemption: Preemption) -> None:
        """Evict the victims and nominate the preemptor's nodes (`preempting.carry_out`);
        while it runs, reports yield to it as they do to binding."""
        log.debug("preemption %s of %s (priority %d): %d victims, %d nominated",
                  preemption.id, preemption.group, preemption.priority,
                  len(preemption.victims), len(preemption.nominated))
        async with self._gate.binding():
            done = await preempting.carry_out(
                preemption, self._kube, scheduler_name=self._policy.scheduler_name,
                clock=self._clock, concurrency=self._policy.concurrency)
        if done.is_expired:
            return
        metrics.preemptions.inc()
        log.info("preemption %s of %s: %d victims evicted, %d skipped, %d pods nominated",
                 preemption.id, preemption.group, len(done.evicted), len(done.skipped),
                 len(done.nominated))

    async def _known_at(self, plan_seq: int) -> ClusterView | None:
        """The bus view of pods and nodes, if it has applied the events up to `plan_seq` (so it
        is at least as new as what the planner saw) within a short wait; else None."""
        if await self._view.caught_up(plan_seq, VIEW_WAIT_SECONDS):
            return self._view.view
        log.debug("view at seq %d is behind plan point %d; reading from the API",
                  self._view.view.applied_seq, plan_seq)
        return None

    async def _failed(self, delivery: Delivery, decision: Decision, error: Exception) -> None:
        """Handling raised (a bug or an unexpected error): retry later, dead-letter at the end."""
        if delivery.num_delivered >= MAX_ATTEMPTS:
            log.exception("decision %s failed %d times", decision.id, delivery.num_delivered)
            await self._dead_letter(delivery, f"{type(error).__name__}: {error}",
                                    CONSUMER if isinstance(decision, MAIN_TYPES)
                                    else REPORTS_CONSUMER)
            return
        log.exception("decision %s failed (delivery %d); retrying in %.0fs",
                      decision.id, delivery.num_delivered, RETRY_DELAY_SECONDS)
        await delivery.nak(RETRY_DELAY_SECONDS)

    async def _dead_letter(self, delivery: Delivery, reason: str, consumer: str) -> None:
        """Republish the message to the dead-letter subject with the reason, then term() it."""
        reason = " ".join(reason.split())[:MAX_REASON_CHARS]
        log.error("dead-lettering decision seq %d (%s): %s", delivery.seq, delivery.subject, reason)
        await self._publisher.publish(
            subjects.dead_letter_subject(self._prefix),
            delivery.data,
            msg_id=dead_letters.msg_id(consumer, delivery.seq),
            headers=dead_letters.headers(consumer, reason, delivery.subject, delivery.seq),
        )
        metrics.dead_letters.labels(consumer).inc()
        await delivery.term()


def lane(decision: Decision) -> str:
    """The ordering lane of a decision: placements and preemptions of a group in order (one
    lane, named `Placement:<group>`); Rejections of a group in order; StatusUpdates of a group
    in order. A Placement never waits behind reports, which
    are best-effort API writes that can take their whole request timeout when the API server is
    slow, while the Placement's deadline runs. Reports may run out of order with placements
    safely: a rejection of a pod bound meanwhile is skipped, and status writes always write the
    newest status."""
    kind = Placement if isinstance(decision, Preemption) else type(decision)
    return f"{kind.__name__}:{decision.group}"
