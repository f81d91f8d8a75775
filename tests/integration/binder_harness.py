"""A binder wired as `services.binder.wiring` wires it, on the test's nats-server.

Its outcome log, status log and bus view read the test's streams; the Kubernetes API is the
in-memory `FakeKube`, and what the binder publishes is recorded (`FakePublisher`), so a test
sees exactly what it said. `observe` publishes a cluster's nodes and pods as the watcher does
(the plan point a decision then names is the last of them), `publish_outcomes` what another
binder published for a decision.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Sequence

from nats.js import JetStreamContext

from services.binder import outcomes
from services.binder.outcome_log import StreamOutcomeLog
from services.binder.ports import WallClock
from services.binder.service import Binder
from services.binder.status_log import StreamStatusLog
from services.binder.view_feed import ViewFeed
from services.bus import reading
from services.bus.publishing import Publisher
from services.config.settings import BusSettings, Settings
from services.contracts import subjects
from services.contracts.events import Outcome
from services.contracts.signing import DecisionKey
from services.watcher import slim
from tests.integration.planner_harness import publish_events
from tests.unit.binder.fakes import DECISION_KEY, FakeKube, FakePublisher

NOW_MS = 1_700_000_000_000
"""The binders' wall clock unless a test gives another (UTC epoch ms)."""


class BinderBus:
    """The test's streams as binders see them, and the binders built on them."""

    def __init__(self, js: JetStreamContext, bus: BusSettings, feed: ViewFeed) -> None:
        self._js = js
        self.settings = Settings(decision_key=DECISION_KEY, bus=bus)
        self._feed = feed
        self._built: list[Binder] = []

    @property
    def prefix(self) -> str:
        """The subject prefix of the test's streams."""
        return self.settings.bus.prefix

    def binder(self, kube: FakeKube, publisher: FakePublisher | None = None,
               clock: WallClock = lambda: NOW_MS,
               decision_key: DecisionKey | None = DECISION_KEY) -> Binder:
        """A binder on `kube`, publishing to `publisher` (a new one by default), checking
        decisions with `decision_key`.

        Raises:
            MissingDecisionKey: `decision_key` is None.
        """
        built = Binder(
            kube, publisher or FakePublisher(),
            dataclasses.replace(self.settings, decision_key=decision_key),
            outcome_log=StreamOutcomeLog(self._js, self.prefix, self._feed),
            status_log=StreamStatusLog(self._js, self.prefix, DECISION_KEY),
            view=self._feed, clock=clock,
        )
        self._built.append(built)
        return built

    async def observe(self, kube: FakeKube) -> int:
        """Publish every node and pod of `kube` to EVENTS as the watcher does; the stream
        sequence of the last one (the plan point of a planner that saw them)."""
        await publish_events(self._js, self.prefix, [
            *(slim.node_event(node, 0) for node in kube.nodes.values()),
            *(slim.pod_event(pod, 0) for pod in kube.pods.values()),
        ])
        return (await reading.stream_state(
            self._js, subjects.stream_name(self.prefix, "EVENTS"))).last_seq

    async def publish_outcomes(self, published: Sequence[Outcome]) -> None:
        """Publish outcomes to EVENTS as the binder that settled their decision did."""
        await Publisher(self._js).publish_many(outcomes.publish_items(self.prefix, published))

    async def close(self) -> None:
        """Close every binder built here."""
        for built in self._built:
            await built.close()


@contextlib.asynccontextmanager
async def open_binder_bus(js: JetStreamContext, bus: BusSettings) -> AsyncIterator[BinderBus]:
    """A `BinderBus` whose bus view follows EVENTS until the block ends."""
    feed = ViewFeed(js, bus.prefix)
    await feed.start()
    opened = BinderBus(js, bus, feed)
    try:
        yield opened
    finally:
        await opened.close()
        await feed.stop()
