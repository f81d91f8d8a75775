"""Quiet rounds (a planning round that decided nothing) and the two audit sources.

The database records every round; NATS only the rounds that published a decision. A quiet
round can still change the planner's bookkeeping, so the database replays exactly wherever the
live planner's fetch split a batch, while the NATS log (quiet rounds merged into the next)
can diverge: the documented reason the database is the authoritative audit source."""

from __future__ import annotations

from services.contracts.decisions import Placement
from services.contracts.events import Event
from services.planner.core.config import PlannerConfig
from services.planner.rederive.replay import Replay
from services.planner.rederive.rounds import LoggedEvent, RoundInput
from services.planner.rederive.verify import Verifier
from tests.unit.audit.recorded import PREFIX, T0, Recorder, bind_all, observed_bound
from tests.unit.planner.builders import make_node, make_pod, make_podgroup

CONFIG = PlannerConfig(starvation_seconds=3600)


def seed_beyond_quorum() -> list[Event]:
    """One 16-CPU node; PodGroup nginx (minMember 3) whose first three 3-CPU members already run
    there; three more members, of which two fit."""
    node = make_node("kwok-node-0").capacity(cpu_milli=16_000).build(T0)
    members = [make_pod(f"nginx-{i}").requests(cpu_milli=3000).in_group("nginx").created(T0)
               for i in range(6)]
    return [node, make_podgroup("nginx", 3).created(T0).build(T0),
            *[pod.on_node("kwok-node-0", "Running").build(T0 + i)
              for i, pod in enumerate(members[:3])],
            *[pod.build(T0 + 3 + i) for i, pod in enumerate(members[3:])]]


def bound_rounds(outcomes_first: bool, split: int) -> Recorder:
    """Two members beyond a running quorum placed, the third refused, then the placement's bind
    reported as two rounds cut after `split` events. The refused member's retry is the
    unschedulable flush, 5 minutes after each failure (starvation an hour away does not come
    first); GroupBound starts the backoff over, quietly while the watch trails the binder (the
    status, Scheduled since quorum ran, does not change), so the attempt once the pods are
    observed tells nothing new when it follows in a round of its own, and a new retry time when
    planned together with GroupBound."""
    rec = Recorder(CONFIG)
    (nginx,) = [d for d in rec.round(*seed_beyond_quorum()) if isinstance(d, Placement)]
    # an old log's outcomes (a MemberBound per member), so that a split can fall among them
    outcomes = bind_all(nginx, T0 + 100, member_outcomes=True)
    pods = observed_bound(rec, nginx, T0 + 150)
    events: list[Event] = [*outcomes, *pods] if outcomes_first else [*pods, *outcomes]
    rec.round(*events[:split])
    rec.round(*events[split:])
    return rec


def as_nats_holds_it(rounds: list[RoundInput]) -> list[RoundInput]:
    """Rounds without a recorded decision merged into the next one (NATS has no record of
    them: its plan points are the decisions' `plan_seq`)."""
    merged: list[RoundInput] = []
    carried: list[LoggedEvent] = []
    for rnd in rounds:
        if not rnd.recorded:
            carried.extend(rnd.events)
            continue
        merged.append(RoundInput(rnd.plan_seq, [*carried, *rnd.events], rnd.recorded))
        carried = []
    return merged


def verified(rounds: list[RoundInput]) -> Verifier:
    replay, verifier = Replay(CONFIG), Verifier(PREFIX)
    for rnd in rounds:
        if verifier.check(replay.play(rnd)) is not None:
            break
    return verifier


def test_a_quiet_round_after_group_bound_replays_exactly_from_every_round() -> None:
    rec = bound_rounds(outcomes_first=True, split=3)  # 2 MemberBound + GroupBound, then pods
    assert [rnd.recorded for rnd in rec.rounds[1:2]] == [[]]  # the quiet round
    verifier = verified(rec.rounds)
    assert verifier.divergence is None
    assert verifier.decisions == len(rec.decisions)


def test_without_its_quiet_round_the_same_log_diverges() -> None:
    rec = bound_rounds(outcomes_first=True, split=3)
    verifier = verified(as_nats_holds_it(rec.rounds))
    assert verifier.divergence is not None
    assert verifier.divergence.plan_seq == rec.rounds[-1].plan_seq
    assert verifier.divergence.index == 0
    recorded, derived = verifier.divergence.recorded, verifier.divergence.derived
    assert recorded is not None and derived is not None
    assert ".decisions.StatusUpdate." in recorded[0]  # live: the rejection was not news
    assert ".decisions.Rejection." in derived[0]  # merged: it is


def test_pods_observed_before_the_outcomes_leave_no_quiet_round_wherever_the_split() -> None:
    for split in range(1, 5):
        rec = bound_rounds(outcomes_first=False, split=split)
        assert all(rnd.recorded for rnd in rec.rounds), split
        assert verified(as_nats_holds_it(rec.rounds)).divergence is None, split
