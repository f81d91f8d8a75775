"""Pending pods are counted the same whether the derived indexes are built or not."""

from __future__ import annotations

from services.contracts.events import Event
from services.planner.core import census, plan, state
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, make_podgroup


def observed() -> state.PlannerState:
    current = state.empty_state()
    events: tuple[Event, ...] = (
        make_node("n1").capacity(cpu_milli=1000).build(),
        make_podgroup("big", 3).build(),
        *[make_pod(f"big-{i}").requests(cpu_milli=1000).in_group("big").build() for i in range(3)],
        make_pod("small").requests(cpu_milli=500).build(),
        make_pod("gated").gated().build(),
        make_pod("bound").on_node("n1").build(),
        make_pod("theirs").scheduler("default-scheduler").build(),
    )
    for event in events:
        current = plan.apply(current, event)
    return current


def test_only_our_unbound_ungated_pods_count_as_pending_before_any_round() -> None:
    assert census.pending_pods(observed(), "gangsched") == 4


def test_a_placed_pod_stops_counting_and_the_count_matches_a_full_scan() -> None:
    current, _ = plan.plan(observed(), PlannerConfig(), plan_seq=1)
    from_index = census.pending_pods(current, "gangsched")
    rescanned = census.pending_pods(state.decode_state(state.encode_state(current)), "gangsched")
    assert from_index == rescanned == 3  # "small" is reserved; the gang of 3 does not fit


def test_pods_of_another_scheduler_name_are_counted_for_that_name() -> None:
    current, _ = plan.plan(observed(), PlannerConfig(), plan_seq=1)
    assert census.pending_pods(current, "default-scheduler") == 1


def test_podgroups_count_as_pending_until_a_round_judges_them() -> None:
    assert census.podgroups_by_phase(observed()) == {
        "Pending": 1, "Scheduling": 0, "Running": 0, "Finished": 0, "Failed": 0}


def test_podgroups_by_phase_follow_the_phase_each_round_decided() -> None:
    current = observed()
    events: tuple[Event, ...] = (
        make_podgroup("done", 2).build(),
        *[make_pod(f"done-{i}").in_group("done").on_node("n1", "Succeeded").build()
          for i in range(2)],
        make_podgroup("live", 1).build(),
        make_pod("live-0").in_group("live").on_node("n1").build())
    for event in events:
        current = plan.apply(current, event)
    current, _ = plan.plan(current, PlannerConfig(), plan_seq=1)
    assert census.podgroups_by_phase(current) == {
        "Pending": 0, "Scheduling": 1, "Running": 1, "Finished": 1, "Failed": 0}
