"""The chart's NATS users on a real nats-server with the rendered nats.conf (docs/deploy.md,
"NATS security"): every service creates and checks the streams at start, none may update, delete
or purge them, and a damaged stream stops every service with one line until a user allowed to
update repairs it; no user may rewrite another's durable through the nameless consumer create.

Renders the chart with the testbed's helm (`tests/cluster/testbed build`, as `make test` does).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import AckPolicy

from services.binder.outcome_log import StreamOutcomeLog
from services.binder.view_feed import ViewFeed
from services.binder.wiring import open_consumers
from services.bus import reading, streams
from services.bus.consuming import PullConsumer, differences
from services.bus.errors import BusMisconfigured
from services.config.settings import BusSettings
from services.contracts import codec, subjects
from services.contracts.decisions import (
    Assignment,
    Placement,
    Rejection,
    StatusUpdate,
    decision_subject,
)
from services.watcher import recovery
from tests.support import docs_scripts
from tests.support.chart_nats import ChartNats
from tests.unit.deploy import chart

pytestmark = pytest.mark.integration

SERVICES = ("watcher", "planner", "binder")
PREFIX = "gangsched"


@pytest.fixture(scope="module")
def default_render() -> list[dict[str, Any]]:
    return chart.render()


@pytest.fixture(scope="module")
def updating_render() -> list[dict[str, Any]]:
    return chart.render("nats.auth.allowStreamUpdates=true")


@pytest.fixture
async def chart_nats(default_render: list[dict[str, Any]], tmp_path: Path
                     ) -> AsyncIterator[ChartNats]:
    async with ChartNats(default_render, tmp_path / "nats") as server:
        yield server


class User:
    """One chart user's connection, with the errors the server reported to it."""

    def __init__(self, server: ChartNats, name: str) -> None:
        self.server, self.name = server, name
        self.errors: list[Exception] = []
        self.nc: Client | None = None

    async def __aenter__(self) -> User:
        async def on_error(error: Exception) -> None:
            self.errors.append(error)

        self.nc = await nats.connect(self.server.url, user=self.name,
                                     password=self.server.passwords[self.name],
                                     inbox_prefix=f"_INBOX_{self.name}", error_cb=on_error,
                                     allow_reconnect=False)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.nc is not None
        await self.nc.close()

    @property
    def js(self) -> JetStreamContext:
        assert self.nc is not None
        return self.nc.jetstream(timeout=1)

    def violations(self) -> list[str]:
        return [str(e) for e in self.errors if "permissions violation" in str(e).lower()]


def bus(server: ChartNats, user: str) -> BusSettings:
    return BusSettings(url=server.url, prefix=PREFIX, user=user,
                       password=server.passwords[user])


async def test_every_service_user_creates_or_checks_the_streams_without_a_refusal(
        chart_nats: ChartNats) -> None:
    for name in SERVICES:  # the first creates them, the others find them as wanted
        async with User(chart_nats, name) as user:
            await streams.ensure_streams(user.js, bus(chart_nats, name))
            assert user.violations() == [], name
    async with User(chart_nats, "planner") as planner:
        for spec in streams.stream_specs(bus(chart_nats, "planner")):
            info = await planner.js.stream_info(spec.name)
            assert streams.differences(info.config, spec) == []


async def test_the_planner_user_reads_the_events_message_at_its_tracked_seq(
        chart_nats: ChartNats) -> None:
    """An EVENTS stream of another creation time is checked by content: the planner reads
    the message at its tracked sequence (`reading.holding`, `$JS.API.STREAM.MSG.GET`)."""
    events = subjects.stream_name(PREFIX, "EVENTS")
    tick = f"{PREFIX}.events.clock._.tick"
    async with User(chart_nats, "watcher") as watcher:
        await streams.ensure_streams(watcher.js, bus(chart_nats, "watcher"))
        ack = await watcher.js.publish(tick, b"{}")
    async with User(chart_nats, "planner") as planner:
        state = await reading.stream_state(planner.js, events)
        found = await reading.holding(planner.js, events, reading.Landmark(ack.seq, tick, b"{}"),
                                      state)
        assert (found, planner.violations()) == (reading.Holding.SAME, [])


async def test_no_service_user_may_update_delete_or_purge_a_stream(
        chart_nats: ChartNats) -> None:
    async with User(chart_nats, "watcher") as watcher:
        await streams.ensure_streams(watcher.js, bus(chart_nats, "watcher"))
        ack = await watcher.js.publish(f"{PREFIX}.events.clock._.tick", b"{}")
    # each refused request waits out its timeout: all users' at once
    await asyncio.gather(*(_attempt_damage(chart_nats, name, ack.seq) for name in SERVICES))


async def _attempt_damage(server: ChartNats, name: str, seq: int) -> None:
    decisions = subjects.stream_name(PREFIX, "DECISIONS")
    events = subjects.stream_name(PREFIX, "EVENTS")
    async with User(server, name) as user:
        wanted = (await user.js.stream_info(decisions)).config
        attempts = await asyncio.gather(
            user.js.update_stream(config=dataclasses.replace(wanted, max_msgs=1)),
            user.js.delete_stream(decisions),
            user.js.purge_stream(events),
            user.js.delete_msg(events, seq),
            return_exceptions=True,
        )
        assert all(isinstance(a, nats.errors.TimeoutError) for a in attempts), (name, attempts)
        assert (await user.js.stream_info(decisions)).config.max_msgs == -1
        assert (await user.js.stream_info(events)).state.messages == 1
    assert len(user.violations()) == len(attempts), (name, user.errors)


async def test_a_stream_damaged_by_a_user_allowed_to_update_stops_every_service_until_repaired(
        updating_render: list[dict[str, Any]], tmp_path: Path) -> None:
    async with ChartNats(updating_render, tmp_path / "nats") as server:
        decisions = subjects.stream_name(PREFIX, "DECISIONS")
        async with User(server, "planner") as planner:
            await streams.ensure_streams(planner.js, bus(server, "planner"))
            damaged = (await planner.js.stream_info(decisions)).config
            await planner.js.update_stream(config=dataclasses.replace(damaged, max_msgs=1))
        for name in ("watcher", "binder"):
            async with User(server, name) as user:
                with pytest.raises(BusMisconfigured) as refused:
                    await streams.ensure_streams(user.js, bus(server, name))
            assert str(refused.value).startswith(
                f"stream {decisions} differs (max_msgs 1 -> -1) and cannot update: no answer "
                f"from NATS"), refused.value
            assert "nats.auth.allowStreamUpdates=true" in str(refused.value)
        async with User(server, "planner") as planner:
            await streams.ensure_streams(planner.js, bus(server, "planner"))
            assert (await planner.js.stream_info(decisions)).config.max_msgs == -1
            assert planner.violations() == []



async def _create_nameless(user: User, stream: str, name: str, filter_subject: str) -> object:
    """The 5-token create, the consumer's name only in the body (no `durable_name`)."""
    assert user.nc is not None
    body = {"stream_name": stream, "config": {"name": name, "filter_subject": filter_subject,
                                              "ack_policy": "explicit", "ack_wait": 30 * 10**9}}
    try:
        return await user.nc.request(f"$JS.API.CONSUMER.CREATE.{stream}",
                                     json.dumps(body).encode(), timeout=1)
    except nats.errors.TimeoutError as refused:
        return refused


async def test_no_user_may_rewrite_another_services_durable_through_the_nameless_create(
        chart_nats: ChartNats) -> None:
    events = subjects.stream_name(PREFIX, "EVENTS")
    decisions = subjects.stream_name(PREFIX, "DECISIONS")
    async with User(chart_nats, "planner") as planner, User(chart_nats, "binder") as binder:
        await streams.ensure_streams(planner.js, bus(chart_nats, "planner"))
        await PullConsumer.open(planner.js, stream=events, durable="planner",
                                filter_subject=subjects.events_wildcard(PREFIX),
                                start_seq=1, ack_policy=AckPolicy.ALL)
        await open_consumers(binder.js, PREFIX)
        before = {name: (await binder.js.consumer_info(decisions, name)).config
                  for name in ("binder", "binder-reports")}
        attacks = [(name, events, "planner") for name in ("watcher", "binder")]
        attacks += [("subscriber", decisions, name) for name in ("binder", "binder-reports")]
        for attacker, stream, victim in attacks:
            async with User(chart_nats, attacker) as user:
                answer = await _create_nameless(user, stream, victim,
                                                f"{PREFIX}.decisions.Nothing.>")
                assert isinstance(answer, nats.errors.TimeoutError), (attacker, answer)
                assert user.violations(), attacker
        planner_config = (await planner.js.consumer_info(events, "planner")).config
        assert planner_config.filter_subject == subjects.events_wildcard(PREFIX)
        for name, config in before.items():
            after = (await binder.js.consumer_info(decisions, name)).config
            assert differences(config, after) == [], name
        assert planner.violations() == [] and binder.violations() == []


async def test_every_reader_the_services_create_is_allowed_by_name(chart_nats: ChartNats
                                                                   ) -> None:
    events = subjects.stream_name(PREFIX, "EVENTS")
    async with User(chart_nats, "watcher") as watcher:
        await streams.ensure_streams(watcher.js, bus(chart_nats, "watcher"))
        await watcher.js.publish(f"{PREFIX}.events.pod.ml.p1", b"{}")
        assert await recovery.last_known(watcher.js, PREFIX, "pod") == {}
        assert watcher.violations() == []
    async with User(chart_nats, "binder") as binder:
        feed = ViewFeed(binder.js, PREFIX)
        await feed.start()
        try:
            assert await feed.caught_up(1, timeout_seconds=5)
            outcome_log = StreamOutcomeLog(binder.js, PREFIX, feed)  # the stream's newest
            assert await outcome_log.newest("ml/g") is None
            assert (outcome_log.tail.reads, outcome_log.direct_reads) == (1, 0)
        finally:
            await feed.stop()
        assert [m.seq async for m in reading.read(binder.js, events, f"{PREFIX}.events.>",
                                                  owner="binder-outcomes")] == [1]
        assert binder.violations() == []


@pytest.mark.parametrize("shipped", ["chart", "manifests"])
async def test_the_docs_nats_py_subscriber_reads_one_groups_decisions_as_the_subscriber(
        shipped: str, default_render: list[dict[str, Any]], tmp_path: Path) -> None:
    # docs/decisions.md's script, as printed, under the chart's permissions (and the plain
    # manifests'): the subscriber may create no nameless consumer, only named ones
    objects = default_render if shipped == "chart" else chart.manifest_objects()
    train = (StatusUpdate(id="1-0", plan_seq=1, at_ms=1, group="default/train",
                          phase="Scheduling", running=0, succeeded=0, failed=0),
             Placement(id="2-0", plan_seq=2, at_ms=2, group="default/train", attempt=1,
                       deadline_ms=60_002,
                       members=(Assignment(pod_uid="u0", namespace="default", name="w-0",
                                         node="n1"),)))
    other = Rejection(id="3-0", plan_seq=3, at_ms=3, group="default/other",
                      reason="0/1 nodes are available", pods=())
    async with ChartNats(objects, tmp_path / "nats") as server:
        async with User(server, "planner") as planner:
            await streams.ensure_streams(planner.js, bus(server, "planner"))
            seqs = [(await planner.js.publish(decision_subject(PREFIX, d), codec.encode(d))).seq
                    for d in (train[0], other, train[1])]
            assert planner.violations() == []
        script = docs_scripts.write_python_block("decisions.md", tmp_path / "subscribe.py")
        printed = await _subscribed(script, server, "default/train", lines=len(train))
    assert printed == [
        f"{seqs[0]} StatusUpdate 1-0 default/train phase Scheduling, running 0",
        f"{seqs[2]} Placement 2-0 default/train default/w-0->n1",
    ]


async def _subscribed(script: Path, server: ChartNats, group: str, lines: int) -> list[str]:
    """The first `lines` lines `script` prints following `group` as the `subscriber` user
    (NATS_USER, NATS_PASSWORD); then it is stopped.

    Raises:
        AssertionError: it exited first, or printed nothing for 30 s (with its stderr).
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), server.url, PREFIX, group,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "NATS_USER": "subscriber",
             "NATS_PASSWORD": server.passwords["subscriber"]})
    assert process.stdout is not None and process.stderr is not None
    printed: list[str] = []
    try:
        while len(printed) < lines:
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            if not line:
                break
            printed.append(line.decode().rstrip("\n"))
    finally:
        if process.returncode is None:
            process.terminate()
        errors = (await process.communicate())[1].decode()
    assert len(printed) == lines, f"printed {printed}; stderr:\n{errors}"
    assert "reading again" not in errors, errors  # no refusal retried
    return printed
