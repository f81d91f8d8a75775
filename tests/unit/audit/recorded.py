"""A recorded log for audit tests: run the planner core like the live planner, round by round,
and keep what the database would hold (events with sequences, plan points, encoded decisions)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from services.contracts import codec
from services.contracts.decisions import Decision, Placement, decision_subject
from services.contracts.events import (
    ClockTicked,
    Event,
    GroupBound,
    GroupRolledBack,
    MemberBound,
    PodObserved,
)
from services.planner.core import plan
from services.planner.core.config import PlannerConfig
from services.planner.core.state import PlannerState, empty_state
from services.planner.rederive.rounds import LoggedEvent, RecordedDecision, RoundInput
from tests.unit.planner.builders import make_node, make_pod, make_podgroup

PREFIX = "gangsched"
T0 = 1_700_000_000_000


class Recorder:
    """The live planner's side: feed rounds of events, get decisions, keep the record."""

    def __init__(self, config: PlannerConfig | None = None) -> None:
        self.config = config or PlannerConfig()
        self.state: PlannerState = empty_state()
        self.seq = 0
        self.rounds: list[RoundInput] = []
        self.decisions: list[Decision] = []

    def round(self, *events: Event) -> list[Decision]:
        """Apply `events` as one batch, plan at its last sequence, record everything."""
        logged = []
        for event in events:
            self.seq += 1
            logged.append(LoggedEvent(self.seq, f"{PREFIX}.events.x", event))
        self.state, decisions = plan.step(self.state, events, self.config, self.seq)
        recorded = [RecordedDecision(d.id, d.plan_seq, index,
                                     decision_subject(PREFIX, d), codec.encode(d))
                    for index, d in enumerate(decisions)]
        self.rounds.append(RoundInput(self.seq, logged, recorded))
        self.decisions.extend(decisions)
        return decisions

    def pod(self, name: str) -> PodObserved:
        """The last observation of pod `name` (namespace default)."""
        return next(p for p in self.state.pods.values() if p.name == name)


def bind_all(placement: Placement, at_ms: int, *, member_outcomes: bool = False) -> list[Event]:
    """What the binder reports after binding every member of `placement`: its GroupBound;
    `member_outcomes`: a MemberBound per member first, as binders before it did (old logs)."""
    events: list[Event] = []
    if member_outcomes:
        events += [MemberBound(at_ms=at_ms, decision_id=placement.id, group=placement.group,
                               pod_uid=member.pod_uid, node=member.node)
                   for member in placement.members]
    events.append(GroupBound(at_ms=at_ms, decision_id=placement.id, group=placement.group))
    return events


def observed_bound(recorder: Recorder, placement: Placement, at_ms: int) -> list[Event]:
    """The watcher's PodObserved for each member, now on its node and Running."""
    out: list[Event] = []
    for member in placement.members:
        pod = next(p for p in recorder.state.pods.values() if p.uid == member.pod_uid)
        out.append(make_pod(pod.name).requests(cpu_milli=pod.requests.get("cpu", 0))
                   .in_group(pod.group_name or "").created(pod.created_at_ms)
                   .priority(pod.priority).on_node(member.node).build(at_ms))
    return out


def seed_gang(min_member: int = 3) -> list[Event]:
    """The seed example: one 10-CPU node; a PodGroup; six 3-CPU pods."""
    return [make_node("kwok-node-0").capacity(cpu_milli=10_000).build(T0),
            make_podgroup("nginx", min_member).created(T0).build(T0),
            *[make_pod(f"nginx-{i}").requests(cpu_milli=3000).in_group("nginx").created(T0)
              .build(T0 + i) for i in range(6)]]


def placements(decisions: Sequence[Decision]) -> list[Placement]:
    return [d for d in decisions if isinstance(d, Placement)]


def scenario(config: PlannerConfig | None = None, *, member_outcomes: bool = False) -> Recorder:
    """Seed gang bound; a second, small node; gang `train` placed, rolled back, re-placed and
    bound after its backoff (clock ticks). `member_outcomes`: as `bind_all`."""
    rec = Recorder(config)
    (nginx,) = placements(rec.round(*seed_gang()))
    rec.round(*bind_all(nginx, T0 + 100, member_outcomes=member_outcomes),
              *observed_bound(rec, nginx, T0 + 150))
    train: list[Event] = [make_podgroup("train", 2).created(T0 + 200).build(T0 + 200),
             *[make_pod(f"train-{i}").requests(cpu_milli=1000).in_group("train")
               .created(T0 + 200).build(T0 + 200) for i in range(2)]]
    (first,) = placements(rec.round(make_node("kwok-node-1").capacity(cpu_milli=2000)
                                    .build(T0 + 200), *train))
    rec.round(GroupRolledBack(at_ms=T0 + 300, decision_id=first.id, group=first.group,
                              reason="binding refused: node kwok-node-1 is full"))
    retried: list[Placement] = []
    for tick in range(1, 6):
        retried = retried or placements(rec.round(ClockTicked(at_ms=T0 + 300 + tick * 1000)))
    assert retried, "the rolled-back gang was never retried"
    rec.round(*bind_all(retried[0], T0 + 6000, member_outcomes=member_outcomes),
              *observed_bound(rec, retried[0], T0 + 6100))
    return rec


async def iterate(rounds: Sequence[RoundInput]) -> AsyncIterator[RoundInput]:
    for rnd in rounds:
        yield rnd
