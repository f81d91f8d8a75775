"""The timeline shows events, decisions and outcomes in log order, for a pod or a PodGroup."""

from __future__ import annotations

from services.audit.timeline import Entry, Focus, Timeline, Window
from services.planner.core.config import PlannerConfig
from services.planner.rederive.replay import Replay
from tests.unit.audit.recorded import T0, scenario


def entries(timeline: Timeline, *, member_outcomes: bool = False) -> list[Entry]:
    replay, shown = Replay(PlannerConfig()), []
    for rnd in scenario(member_outcomes=member_outcomes).rounds:
        shown.extend(timeline.entries(replay.play(rnd)))
    return shown


def test_every_event_and_decision_is_shown_in_log_order() -> None:
    rec = scenario()
    shown = entries(Timeline(show_ticks=True))
    assert sum(1 for e in shown if e.kind != "decision") == rec.seq
    assert sum(1 for e in shown if e.kind == "decision") == len(rec.decisions)
    order = [(e.seq, e.kind == "decision") for e in shown]
    assert order == sorted(order)
    assert {e.kind for e in shown} == {"event", "outcome", "decision"}


def test_a_podgroup_focus_shows_its_podgroup_members_decisions_and_outcomes_only() -> None:
    shown = entries(Timeline(focus=Focus("podgroup", "default", "train")))
    assert shown and all("nginx" not in e.summary and "kwok-node-0: allocatable" not in e.summary
                         for e in shown)
    types = [e.type for e in shown]
    assert types[:3] == ["PodGroupObserved", "PodObserved", "PodObserved"]
    assert "GroupRolledBack" in types and types.count("Placement") == 2


def test_a_pod_focus_follows_its_placements_outcomes_through_the_decision_id() -> None:
    shown = entries(Timeline(focus=Focus("pod", "default", "train-1")))
    types = [e.type for e in shown]
    assert "StatusUpdate" not in types and "PodGroupObserved" not in types
    assert types.count("Placement") == 2 and "GroupRolledBack" in types
    assert types.count("GroupBound") == 1 and "MemberBound" not in types
    bound = next(e for e in shown if e.type == "GroupBound")
    assert bound.summary.startswith("gang default/train bound (decision ")


def test_a_pod_focus_shows_its_own_member_outcome_of_an_old_log() -> None:
    shown = entries(Timeline(focus=Focus("pod", "default", "train-1")), member_outcomes=True)
    types = [e.type for e in shown]
    assert "GroupBound" in types and types.count("MemberBound") == 1
    bound = next(e for e in shown if e.type == "MemberBound")
    assert bound.summary.startswith("bound default/train-1 to ")


def test_the_window_hides_what_came_before_from_seq_and_since() -> None:
    later = entries(Timeline(Window(from_seq=17)))
    assert later and min(e.seq for e in later) == 17
    recent = entries(Timeline(Window(since_ms=T0 + 6000)))
    assert recent and all(e.at_ms >= T0 + 6000 for e in recent)


def test_json_lines_carry_the_time_the_summary_and_the_whole_message() -> None:
    decision = next(e for e in entries(Timeline()) if e.kind == "decision")
    body = decision.to_json()
    assert body["kind"] == "decision" and body["id"] == decision.id
    assert body["at"].endswith("Z") and body["message"]["type"] == decision.type


def test_clock_ticks_are_left_out_unless_asked_for() -> None:
    rec = scenario()
    shown = entries(Timeline())
    assert "ClockTicked" not in {e.type for e in shown}
    ticks = sum(1 for e in entries(Timeline(show_ticks=True)) if e.type == "ClockTicked")
    assert ticks > 0
    assert sum(1 for e in shown if e.kind != "decision") == rec.seq - ticks
