"""Intake: events bound to their producer's subjects, and time that cannot be pushed.

Pure: messages are plain records with the time NATS stored them; no server, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from services.contracts import codec
from services.contracts.events import (
    ClockTicked,
    Event,
    GroupBound,
    GroupRolledBack,
    MemberBindFailed,
    MemberBound,
    NodeDeleted,
    PodDeleted,
    PodGroupDeleted,
)
from services.planner import intake
from services.planner.intake import Checks
from tests.unit.planner.builders import make_node, make_pod, make_podgroup

PREFIX = "gangsched"
STORED_MS = 1_800_000_000_000
TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000
CHECKS = Checks(PREFIX, max_lead_ms=60_000)
SUBJECTS = {
    "node": "gangsched.events.node._.n1",
    "pod": "gangsched.events.pod.default.p1",
    "podgroup": "gangsched.events.podgroup.default.pg1",
    "clock": "gangsched.events.clock._.tick",
    "outcome": "gangsched.events.outcome.default.pg1",
}


@dataclass(frozen=True)
class Stored:
    """A delivery as intake sees it."""

    seq: int
    subject: str
    data: bytes
    stored_at_ms: int = STORED_MS


def stored(seq: int, kind: str, event: Event, stored_at_ms: int = STORED_MS) -> Stored:
    return Stored(seq, SUBJECTS[kind], codec.encode(event), stored_at_ms)


EVERY_TYPE: list[tuple[str, Event]] = [
    ("node", make_node("n1").build(STORED_MS)),
    ("node", NodeDeleted(at_ms=STORED_MS, name="n1", uid="u")),
    ("pod", make_pod("p1").build(STORED_MS)),
    ("pod", PodDeleted(at_ms=STORED_MS, uid="u", namespace="default", name="p1")),
    ("podgroup", make_podgroup("pg1", 2).build(STORED_MS)),
    ("podgroup", PodGroupDeleted(at_ms=STORED_MS, uid="u", namespace="default", name="pg1")),
    ("clock", ClockTicked(at_ms=STORED_MS)),
    ("outcome", MemberBound(at_ms=STORED_MS, decision_id="4-0", group="default/pg1",
                            pod_uid="u", node="n1")),
    ("outcome", MemberBindFailed(at_ms=STORED_MS, decision_id="4-0", group="default/pg1",
                                 pod_uid="u", node="n1", reason="gone", is_permanent=True)),
    ("outcome", GroupBound(at_ms=STORED_MS, decision_id="4-0", group="default/pg1")),
    ("outcome", GroupRolledBack(at_ms=STORED_MS, decision_id="4-0", group="default/pg1",
                                reason="deadline")),
]


@pytest.mark.parametrize(("kind", "event"), EVERY_TYPE,
                         ids=[f"{type(e).__name__}-{k}" for k, e in EVERY_TYPE])
def test_every_event_type_is_applied_on_its_own_subject_kind_and_refused_on_every_other(
        kind: str, event: Event) -> None:
    others = [other for other in SUBJECTS if other != kind]
    batch = [stored(1, kind, event)] + [
        stored(seq, other, event) for seq, other in enumerate(others, start=2)]
    sorted_batch = intake.sort_batch(batch, 0, CHECKS)
    assert [fresh.seq for fresh in sorted_batch.fresh] == [1]
    assert [p.reason_class for p in sorted_batch.poisoned] == [intake.WRONG_PRODUCER] * 4


def test_a_node_observed_on_an_outcome_subject_is_dead_lettered_naming_the_watcher() -> None:
    phantom = make_node("phantom").capacity(cpu_milli=10**6).build(STORED_MS)
    sorted_batch = intake.sort_batch([stored(7, "outcome", phantom)], 6, CHECKS)
    assert sorted_batch.fresh == [] and sorted_batch.last_seq == 7
    (poisoned,) = sorted_batch.poisoned
    assert poisoned.reason == (
        "NodeObserved on subject gangsched.events.outcome.default.pg1: only the watcher "
        "publishes NodeObserved (on gangsched.events.node.>)")
    assert poisoned.dead_letter_row() == (7, SUBJECTS["outcome"], poisoned.reason,
                                          codec.encode(phantom))


def test_a_group_bound_on_a_pod_subject_is_dead_lettered_naming_the_binder() -> None:
    forged = GroupBound(at_ms=STORED_MS, decision_id="9-0", group="default/pg1")
    (poisoned,) = intake.sort_batch([stored(3, "pod", forged)], 2, CHECKS).poisoned
    assert poisoned.reason_class == intake.WRONG_PRODUCER
    assert "only the binder publishes GroupBound (on gangsched.events.outcome.>)" in \
        poisoned.reason


def test_an_event_under_another_prefix_is_not_its_producers() -> None:
    tick = ClockTicked(at_ms=STORED_MS)
    message = Stored(1, "other.events.clock._.tick", codec.encode(tick))
    (poisoned,) = intake.sort_batch([message], 0, CHECKS).poisoned
    assert poisoned.reason_class == intake.WRONG_PRODUCER


def test_a_tick_ten_years_ahead_of_its_stored_time_is_dead_lettered_and_the_rest_applied(
        ) -> None:
    ahead = ClockTicked(at_ms=STORED_MS + TEN_YEARS_MS)
    batch = [stored(1, "clock", ClockTicked(at_ms=STORED_MS - 1000)),
             stored(2, "clock", ahead),
             stored(3, "clock", ClockTicked(at_ms=STORED_MS))]
    sorted_batch = intake.sort_batch(batch, 0, CHECKS)
    assert [fresh.seq for fresh in sorted_batch.fresh] == [1, 3]
    (poisoned,) = sorted_batch.poisoned
    assert poisoned.seq == 2 and poisoned.reason_class == intake.AHEAD_OF_TIME
    assert "is 315360000.000 s ahead of the time NATS stored it" in poisoned.reason
    assert "(2027-01-15T08:00:00.000Z)" in poisoned.reason
    assert "the bound is 60 s (--max-event-lead-seconds)" in poisoned.reason


def test_an_observation_ahead_of_the_bound_is_dead_lettered_like_a_tick() -> None:
    pod = make_pod("p1").build(STORED_MS + 61_000)
    (poisoned,) = intake.sort_batch([stored(1, "pod", pod)], 0, CHECKS).poisoned
    assert poisoned.reason_class == intake.AHEAD_OF_TIME
    assert poisoned.reason.startswith("PodObserved on subject gangsched.events.pod.default.p1")


def test_a_lead_up_to_the_bound_is_applied() -> None:
    batch = [stored(1, "clock", ClockTicked(at_ms=STORED_MS + 60_000)),
             stored(2, "node", make_node("n1").build(STORED_MS + 59_999))]
    assert [fresh.seq for fresh in intake.sort_batch(batch, 0, CHECKS).fresh] == [1, 2]


def test_an_outcome_ahead_of_its_stored_time_is_applied_since_it_never_moves_the_clock(
        ) -> None:
    bound = GroupBound(at_ms=STORED_MS + TEN_YEARS_MS, decision_id="4-0", group="default/pg1")
    assert [f.seq for f in intake.sort_batch([stored(1, "outcome", bound)], 0, CHECKS).fresh] \
        == [1]


def test_a_zero_bound_applies_any_lead() -> None:
    ahead = stored(1, "clock", ClockTicked(at_ms=STORED_MS + TEN_YEARS_MS))
    assert len(intake.sort_batch([ahead], 0, Checks(PREFIX, max_lead_ms=0)).fresh) == 1


def test_the_last_time_an_event_may_hold_is_told_as_a_date() -> None:
    last = stored(1, "clock", ClockTicked(at_ms=253402300799999))  # 9999's last millisecond
    (poisoned,) = intake.sort_batch([last], 0, CHECKS).poisoned
    assert poisoned.reason_class == intake.AHEAD_OF_TIME
    assert poisoned.reason.startswith("ClockTicked on subject gangsched.events.clock._.tick: "
                                      "at_ms 253402300799999 (9999-12-31T23:59:59.999Z) is ")


def test_a_date_beyond_what_python_holds_is_still_a_one_line_reason() -> None:
    far = stored(1, "clock", ClockTicked(at_ms=2**62))  # past year 9999: refused at decoding
    (poisoned,) = intake.sort_batch([far], 0, CHECKS).poisoned
    assert poisoned.reason_class == intake.UNDECODABLE
    assert poisoned.reason == ("PoisonedMessage: Expected `int` <= 253402300799999 - at "
                               "`$.at_ms`")


def test_an_undecodable_message_keeps_its_decoders_reason_and_class() -> None:
    garbage = Stored(5, SUBJECTS["pod"], b"\xff not json")
    (poisoned,) = intake.sort_batch([garbage], 4, CHECKS).poisoned
    assert poisoned.reason_class == intake.UNDECODABLE
    assert poisoned.reason.startswith("PoisonedMessage")


def test_sequences_at_or_below_the_tracked_one_are_skipped_before_any_check() -> None:
    forged = stored(2, "outcome", make_node("phantom").build(STORED_MS))
    sorted_batch = intake.sort_batch([forged, forged], 2, CHECKS)
    assert sorted_batch.skipped == 2 and not sorted_batch.has_news


def test_a_gap_ends_the_fresh_part_and_retention_explains_only_what_it_removed() -> None:
    batch = [stored(seq, "clock", ClockTicked(at_ms=STORED_MS)) for seq in (3, 4, 6, 7)]
    gapped = intake.sort_batch(batch, 2, CHECKS)
    assert [f.seq for f in gapped.fresh] == [3, 4] and gapped.last_seq == 4
    assert gapped.gap == (5, 6) and gapped.beyond_gap == 2
    expired = intake.sort_batch(batch[2:], 2, CHECKS, floor_seq=6)
    assert [f.seq for f in expired.fresh] == [6, 7] and expired.gap is None


def test_redeliveries_at_or_below_the_tracked_sequence_are_still_skipped() -> None:
    batch = [stored(seq, "clock", ClockTicked(at_ms=STORED_MS)) for seq in (1, 2, 3, 3, 4)]
    sorted_batch = intake.sort_batch(batch, 2, CHECKS)
    assert [f.seq for f in sorted_batch.fresh] == [3, 4]
    assert sorted_batch.skipped == 3 and sorted_batch.gap is None
