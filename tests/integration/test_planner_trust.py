"""The planner trusts an event only from its producer, and time only as far as NATS vouches for
it (docs/design-notes.md, "Events bound to their producer", "Time cannot be pushed"), on a real
nats-server and database: forged events and a tick ten years ahead are dead-lettered with their
reasons, planning goes on, and `replay --verify` still reproduces every decision from the
database and from NATS.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import msgspec
import pytest
import sqlalchemy
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import codec, dead_letters, subjects
from services.contracts.decisions import Placement, Rejection
from services.contracts.events import ClockTicked, Event, GroupBound, PodObserved
from services.contracts.signing import DecisionKey
from services.planner import intake
from services.planner.service import DURABLE
from services.runtime import metrics
from services.store import tables
from tests.integration.audit_harness import Feeder, gangsched, placements
from tests.integration.planner_harness import planner_settings, read_stream, running_planner
from tests.unit.planner.builders import make_node, make_pod, make_podgroup

pytestmark = pytest.mark.integration

TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000


def refused(reason_class: str) -> float:
    return float(metrics.events_refused.labels(DURABLE, reason_class)._value.get())


async def inject(feeder: Feeder, subject: str, event: Event, msg_id: str) -> None:
    """Publish `event` on `subject` as a user allowed to publish there would."""
    await Publisher(feeder.js).publish(subject, codec.encode(event), msg_id=msg_id)
    feeder.seq += 1
    await feeder.caught_up()


async def test_forged_events_and_a_future_tick_are_dead_lettered_and_planning_goes_on(
        js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
        migrated_db_url: str, tmp_path: Path) -> None:
    prefix = bus_settings.prefix
    feeder = Feeder(js, prefix, engine)
    before = {name: refused(name) for name in (intake.WRONG_PRODUCER, intake.AHEAD_OF_TIME)}
    now_ms = int(time.time() * 1000)  # the events' times must be near when NATS stores them
    big = [make_pod(f"train-{i}").requests(cpu_milli=6000).in_group("train")
           .created(now_ms).build(now_ms) for i in range(2)]
    async with running_planner(planner_settings(bus_settings, tmp_path), js, engine):
        # the binder's user stores a huge node on an outcome subject: never placed on
        phantom = make_node("phantom").capacity(cpu_milli=10**6).build(now_ms)
        await inject(feeder, subjects.events_subject(prefix, "outcome", "default", "train"),
                     phantom, "forged/node")
        await feeder.publish([make_node("n1").capacity(cpu_milli=8000).build(now_ms),
                              make_podgroup("train", 2).created(now_ms).build(now_ms), *big])
        assert any(isinstance(d, Rejection) and d.group == "default/train"
                   for d in await feeder.decisions())
        # a tick ten years ahead would put the gang's retry in ten years
        await inject(feeder, subjects.events_subject(prefix, "clock", "", "tick"),
                     ClockTicked(at_ms=now_ms + TEN_YEARS_MS), "forged/tick")
        # the watcher's user claims the gang bound, on a pod subject
        await inject(feeder, subjects.events_subject(prefix, "pod", "default", "train-0"),
                     GroupBound(at_ms=now_ms, decision_id="1-0", group="default/train"),
                     "forged/bound")
        shrunk: list[Event] = [msgspec.structs.replace(
            pod, requests={"cpu": 1000, "pods": 1}, resource_version="2", at_ms=now_ms + 500)
            for pod in big]
        await feeder.publish(shrunk)
        placed: list[Placement] = []
        for tick in range(1, 8):  # the backoff expires in the real clock's time
            await feeder.publish([ClockTicked(at_ms=now_ms + 500 + tick * 1000)])
            placed = placements(await feeder.decisions(), "default/train")
            if placed:
                break
    (placement,) = placed
    assert {member.node for member in placement.members} == {"n1"}
    assert all(isinstance(pod, PodObserved) for pod in shrunk)

    async with engine.connect() as connection:
        dead = (await connection.execute(sqlalchemy.select(tables.dead_letters)
                                         .order_by(tables.dead_letters.c.seq))).all()
        audited = set((await connection.execute(
            sqlalchemy.select(tables.audit_events.c.seq))).scalars())
    assert [row.seq for row in dead] == [1, 6, 7]
    assert dead[0].reason.startswith(f"NodeObserved on subject {prefix}.events.outcome."
                                     f"default.train: only the watcher publishes")
    assert "ahead of the time NATS stored it" in dead[1].reason
    assert f"only the binder publishes GroupBound (on {prefix}.events.outcome.>)" in \
        dead[2].reason
    assert not audited & {1, 6, 7}
    letters = await read_stream(js, subjects.stream_name(prefix, "DEADLETTER"))
    assert len(letters) == 3
    assert refused(intake.WRONG_PRODUCER) == before[intake.WRONG_PRODUCER] + 2
    assert refused(intake.AHEAD_OF_TIME) == before[intake.AHEAD_OF_TIME] + 1

    from_db = await gangsched("replay", "--verify", "--db", migrated_db_url)
    assert from_db.exit_code == 0, from_db.output
    from_nats = await gangsched("replay", "--source", "nats", "--verify", "--nats",
                                str(bus_settings.url), "--prefix", prefix)
    assert from_nats.exit_code == 0, from_nats.output
    # both sources name what they went past, as the planner's dead letters give it
    for replayed in (from_db, from_nats):
        (note,) = [line for line in replayed.output.splitlines() if line.startswith("note:")]
        assert note.startswith("note: 3 event(s) of the log were dead-lettered by the planner "
                               "and are in no planning round (seq 1: NodeObserved on subject "
                               f"{prefix}.events.outcome.default.train: only the watcher "), note
        assert "; seq 6: ClockTicked on subject" in note and "; seq 7: GroupBound on" in note


async def test_a_forged_planner_dead_letter_does_not_make_nats_replay_skip_the_event(
        js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
        tmp_path: Path) -> None:
    prefix = bus_settings.prefix
    key_file = tmp_path / "decision.key"
    key_file.write_text("k" * 64)
    key_file.chmod(0o600)
    settings = dataclasses.replace(planner_settings(bus_settings, tmp_path),
                                   decision_key=DecisionKey.from_text("k" * 64))
    feeder = Feeder(js, prefix, engine)
    now_ms = int(time.time() * 1000)
    async with running_planner(settings, js, engine):
        await feeder.publish([make_node("n1").capacity(cpu_milli=8000).build(now_ms),
                              make_podgroup("train", 2).created(now_ms).build(now_ms),
                              *[make_pod(f"train-{i}").requests(cpu_milli=1000).in_group("train")
                                .created(now_ms).build(now_ms) for i in range(2)]])
        assert placements(await feeder.decisions(), "default/train")
    # the binder's user may publish dead letters: it claims the planner refused the PodGroup
    podgroup_seq = 2
    await Publisher(js).publish(
        subjects.dead_letter_subject(prefix), b"forged", msg_id="deadletter/planner/2",
        headers={dead_letters.CONSUMER_HEADER: DURABLE, dead_letters.SEQ_HEADER: str(podgroup_seq),
                 dead_letters.REASON_HEADER: "planner core raised: forged"})
    for extra in ([], ["--decision-key-file", str(key_file)]):
        from_nats = await gangsched("replay", "--source", "nats", "--verify", "--nats",
                                    str(bus_settings.url), "--prefix", prefix, *extra)
        assert from_nats.exit_code == 0, from_nats.output
        assert "verified" in from_nats.output
