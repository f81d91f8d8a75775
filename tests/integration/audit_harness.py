"""Record a real log for audit tests: the real planner service on a real nats-server and
database, fed like the watcher and the binder would (node, the seed gang, a rollback, a retry),
then drive the `gangsched` commands in a thread (they run their own event loop)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import sqlalchemy
from click.testing import CliRunner, Result
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine

from services.binder import outcomes
from services.bus.publishing import Publisher
from services.cli.main import app
from services.config.settings import BusSettings
from services.contracts import codec, subjects
from services.contracts.decisions import Decision, Placement, Rejection
from services.contracts.events import (
    ClockTicked,
    Event,
    GroupBound,
    GroupRolledBack,
    MemberBound,
    Outcome,
    PodObserved,
)
from services.store import tables
from services.store.planner_store import PlannerStore
from tests.integration.planner_harness import (
    event_item,
    planner_settings,
    published_decisions,
    running_planner,
)
from tests.support.waiting import eventually_async
from tests.unit.planner.builders import make_node, make_pod, make_podgroup

T0 = 1_700_000_000_000


@dataclass
class Recording:
    """What a recorded run left: the database URL, the bus, and how much it holds."""

    db_url: str
    bus: BusSettings
    events: int
    decisions: list[Decision]


class Feeder:
    """Publishes like the watcher and the binder, and waits for the planner to catch up."""

    def __init__(self, js: JetStreamContext, prefix: str, engine: AsyncEngine) -> None:
        self.js, self.prefix, self.engine = js, prefix, engine
        self.seq = 0

    async def publish(self, events: Sequence[Event]) -> None:
        items = [self._item(event) for event in events]
        await Publisher(self.js).publish_many(items)
        self.seq += len(items)
        await self.caught_up()

    async def caught_up(self) -> None:
        async def tracked() -> bool:
            return (await PlannerStore(self.engine).load())[1] >= self.seq

        await eventually_async(tracked, timeout=30, what=f"planner at seq {self.seq}")

    async def decisions(self) -> list[Decision]:
        async def published() -> list[Decision] | None:
            found = await published_decisions(self.js, self.prefix)
            return found if len(found) >= await self.outbox_size() else None

        found = await eventually_async(published, timeout=30, what="outbox published")
        assert found is not None  # `eventually_async` returns only a truthy value
        return found

    async def outbox_size(self) -> int:
        async with self.engine.connect() as connection:
            query = sqlalchemy.select(sqlalchemy.func.count()).select_from(tables.outbox)
            return int((await connection.execute(query)).scalar_one())

    def _item(self, event: Event) -> tuple[str, bytes, str]:
        if isinstance(event, ClockTicked):
            subject = subjects.events_subject(self.prefix, "clock", "", "clock")
            return subject, codec.encode(event), f"clock/{event.at_ms}"
        if isinstance(event, MemberBound | GroupBound | GroupRolledBack):
            outcome: Outcome = event
            return outcomes.publish_items(self.prefix, [outcome])[0]
        return event_item(self.prefix, event)


def seed_gang(min_member: int, name: str = "nginx") -> list[Event]:
    """The seed example: one 10-CPU node, a PodGroup, six 3-CPU pods of a ReplicaSet."""
    return [make_node("kwok-node-0").capacity(cpu_milli=10_000).build(T0),
            make_podgroup(name, min_member).created(T0).build(T0),
            *[make_pod(f"{name}-{i}").requests(cpu_milli=3000).in_group(name).created(T0)
              .owned_by(name).build(T0 + i) for i in range(6)]]


def bound(placement: Placement, pods: dict[str, PodObserved], at_ms: int) -> list[Event]:
    """A fully bound placement: the watcher's bound pods, then the binder's outcomes.

    In this order, wherever the planner's fetch splits the batch, every round decides
    something, so the NATS log (which records no quiet round) replays exactly; outcomes first
    would leave a quiet round that changes the bookkeeping when the split falls after
    GroupBound (`tests/unit/audit/test_quiet_rounds.py`)."""
    events: list[Event] = []
    for member in placement.members:
        pod = pods[member.pod_uid]
        events.append(msgspec.structs.replace(
            pod, at_ms=at_ms, node_name=member.node, phase="Running",
            resource_version=str(int(pod.resource_version) + 1)))
    events.extend(MemberBound(at_ms=at_ms + 50, decision_id=placement.id,
                              group=placement.group, pod_uid=m.pod_uid, node=m.node)
                  for m in placement.members)
    events.append(GroupBound(at_ms=at_ms + 50, decision_id=placement.id, group=placement.group))
    return events


def placements(decisions: Sequence[Decision], group: str) -> list[Placement]:
    return [d for d in decisions if isinstance(d, Placement) and d.group == group]


async def record_scenario(js: JetStreamContext, bus: BusSettings, engine: AsyncEngine,
                          db_url: str, tmp_path: Path) -> Recording:
    """Seed gang (minMember 3) bound; a 2-CPU node and gang `train` (2 x 1 CPU) placed,
    rolled back, retried after its backoff (clock ticks) and bound."""
    feeder = Feeder(js, bus.prefix, engine)
    async with running_planner(planner_settings(bus, tmp_path), js, engine):
        seed = seed_gang(3)
        await feeder.publish(seed)
        pods = {e.uid: e for e in seed if isinstance(e, PodObserved)}
        (nginx,) = placements(await feeder.decisions(), "default/nginx")
        await feeder.publish(bound(nginx, pods, T0 + 100))
        train: list[Event] = [make_podgroup("train", 2).created(T0 + 200).build(T0 + 200),
                 *[make_pod(f"train-{i}").requests(cpu_milli=1000).in_group("train")
                   .created(T0 + 200).owned_by("train").build(T0 + 200) for i in range(2)]]
        pods.update({e.uid: e for e in train if isinstance(e, PodObserved)})
        await feeder.publish([make_node("kwok-node-1").capacity(cpu_milli=2000)
                              .build(T0 + 200), *train])
        (first,) = placements(await feeder.decisions(), "default/train")
        await feeder.publish([GroupRolledBack(
            at_ms=T0 + 300, decision_id=first.id, group=first.group,
            reason="binding refused: node kwok-node-1 went away", failed_pod=first.members[0]
            .pod_uid)])
        retry = await _tick_until_retried(feeder)
        await feeder.publish(bound(retry, pods, T0 + 9000))
        await feeder.publish([ClockTicked(at_ms=T0 + 10_000)])
        decisions = await feeder.decisions()
    return Recording(db_url, bus, feeder.seq, decisions)


async def _tick_until_retried(feeder: Feeder) -> Placement:
    for tick in range(1, 8):
        await feeder.publish([ClockTicked(at_ms=T0 + 300 + tick * 1000)])
        found = placements(await feeder.decisions(), "default/train")
        if len(found) == 2:
            return found[1]
    raise AssertionError("the rolled-back gang was never placed again")


async def record_pending_gang(js: JetStreamContext, bus: BusSettings, engine: AsyncEngine,
                              tmp_path: Path) -> list[Decision]:
    """The seed's minMember 4 variant: nothing fits, every pod waits."""
    feeder = Feeder(js, bus.prefix, engine)
    async with running_planner(planner_settings(bus, tmp_path), js, engine):
        await feeder.publish(seed_gang(4))
        decisions = await feeder.decisions()
    assert any(isinstance(d, Rejection) for d in decisions)
    return decisions


async def gangsched(*args: str) -> Result:
    """Run `gangsched ARGS...` in a thread (it runs its own event loop) and capture it."""
    runner = CliRunner()
    return await asyncio.to_thread(runner.invoke, app, list(args), catch_exceptions=False)


def json_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]
