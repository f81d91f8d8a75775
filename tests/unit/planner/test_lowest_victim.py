"""`preemption.lowest` from the priorities counted as pods change equals a scan of every
charged bound pod, as pods bind, change, leave and are rebuilt from a snapshot."""

from __future__ import annotations

from services.contracts.events import Event, PodDeleted
from services.planner.core import derived, plan, pods, preemption, state
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, pod_uid

OURS = PlannerConfig()
ANY = PlannerConfig(preempt_other_schedulers=True)


def _scan(current: state.PlannerState, config: PlannerConfig) -> int:
    """The former definition: a look at every charged pod."""
    return min((pod.priority for uid in current.charges
                if (pod := current.pods.get(uid)) is not None and pod.node_name is not None
                and (config.preempt_other_schedulers
                     or pods.is_ours(pod, config.scheduler_name))), default=2**31)


def _check(current: state.PlannerState) -> tuple[int, int]:
    index = derived.ensure(current, OURS.scheduler_name)
    rebuilt = derived.ensure(state.decode_state(state.encode_state(current)),
                             OURS.scheduler_name)
    for config in (OURS, ANY):
        assert preemption.lowest(index, config) == _scan(current, config)
        assert preemption.lowest(rebuilt, config) == _scan(current, config)
    return preemption.lowest(index, OURS), preemption.lowest(index, ANY)


def test_lowest_follows_pods_binding_changing_and_leaving() -> None:
    current = state.empty_state()
    events: list[tuple[Event, tuple[int, int]]] = [
        (make_node("n1").build(), (2**31, 2**31)),
        (make_pod("a").priority(5).build(), (2**31, 2**31)),  # pending: not a victim
        (make_pod("a").priority(5).on_node("n1").build(), (5, 5)),
        (make_pod("theirs").scheduler("default-scheduler").priority(-3).on_node("n1").build(),
         (5, -3)),
        (make_pod("b").priority(1).on_node("n1").build(), (1, -3)),
        (make_pod("b").priority(1).on_node("n1", phase="Succeeded").build(), (5, -3)),
        (PodDeleted(at_ms=1, uid=pod_uid("theirs"), namespace="default", name="theirs"),
         (5, 5)),
        (PodDeleted(at_ms=2, uid=pod_uid("a"), namespace="default", name="a"),
         (2**31, 2**31)),
    ]
    derived.ensure(current, OURS.scheduler_name)
    for event, expected in events:
        current = plan.apply(current, event)
        assert _check(current) == expected


def test_a_placed_member_counts_once_bound() -> None:
    current = state.empty_state()
    for event in (make_node("n1").build(), make_pod("low").priority(2).on_node("n1").build(),
                  make_pod("p").priority(1).build()):
        current = plan.apply(current, event)
    current, decisions = plan.plan(current, OURS, plan_seq=1)
    assert decisions  # "p" reserved on n1: charged, not bound yet
    assert _check(current) == (2, 2)
    current = plan.apply(current, make_pod("p").priority(1).on_node("n1").build())
    assert _check(current) == (1, 1)
