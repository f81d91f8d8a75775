"""A gang in backoff whose pending members change is looked at again (quietly: the backoff is
not lengthened): the reason it is told counts the members it has now, so a scale-down does not
leave "3 more member(s) do not fit" on 2 waiting pods."""

from __future__ import annotations

from services.contracts.decisions import Decision, Placement, Rejection
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, recorded, replay


def seed(size: int, min_member: int) -> Cluster:
    """One 10-CPU node, a gang of `size` 3-CPU pods with minMember `min_member`."""
    return Cluster().observe(
        make_node("n0").capacity(cpu_milli=10_000), make_podgroup("g", min_member),
        *[make_pod(f"g-{i}").requests(cpu_milli=3000).in_group("g").created(i)
          for i in range(size)])


def rejections(decisions: list[Decision]) -> list[Rejection]:
    return [d for d in decisions if isinstance(d, Rejection)]


def test_a_scale_down_in_backoff_is_told_with_the_members_left() -> None:
    cluster = seed(6, 3)
    first = cluster.plan()
    assert [len(p.members) for p in first if isinstance(p, Placement)] == [3]
    cluster.bind(first)
    (told,) = (rejections(first) + rejections(cluster.plan()))[-1:]
    assert len(told.pods) == 3 and "3 more member(s) do not fit" in told.reason
    cluster.advance(0.2)  # still backed off
    cluster.delete_pod("g-5")
    (again,) = rejections(cluster.plan())
    assert len(again.pods) == 2
    assert "2 more member(s) do not fit" in again.reason
    assert again.retry_at_ms == told.retry_at_ms  # a quiet look: the backoff is not lengthened
    assert rejections(cluster.plan()) == []  # nothing new: told once
    assert replay(cluster.log, cluster.config) == recorded(cluster)


def test_a_rolled_back_partial_placement_waits_its_backoff_and_is_told_why() -> None:
    cluster = seed(4, 2)  # 3 of the 4 fit: a partial placement past minMember
    first = cluster.plan()
    (placed,) = [d for d in first if isinstance(d, Placement)]
    assert len(placed.members) == 3
    cluster.roll_back(placed, "admission webhook refused")
    for _ in range(5):  # well inside the backoff
        cluster.advance(0.1)
        decisions = cluster.plan()
        assert [d for d in decisions if isinstance(d, Placement)] == []
    told = [r for r in rejections(cluster.decisions) if "rolled back" in r.reason]
    assert len(told) == 1 and len(told[0].pods) == 4
    assert "admission webhook refused" in told[0].reason


def test_an_expired_partial_placement_is_not_placed_again_in_the_same_round() -> None:
    cluster = seed(4, 2)
    (placed,) = [d for d in cluster.plan() if isinstance(d, Placement)]
    cluster.advance((placed.deadline_ms - placed.at_ms) / 1000 + 91)  # deadline + grace
    decisions = cluster.plan()
    assert [d for d in decisions if isinstance(d, Placement)] == []
    (told,) = rejections(decisions)
    assert "neither bound nor rolled back" in told.reason and len(told.pods) == 4


def test_members_recreated_after_a_rollback_do_not_end_its_backoff() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=12_000), make_podgroup("g", 4),
        *[make_pod(f"g-{i}").requests(cpu_milli=3000).in_group("g").created(i)
          for i in range(4)])
    (placed,) = [d for d in cluster.plan() if isinstance(d, Placement)]
    cluster.roll_back(placed, "deadline passed with 2 of 4 members bound")
    cluster.plan()
    cluster.advance(0.2)
    cluster.delete_pod("g-0")  # the binder deleted an owned member; its controller recreates it
    cluster.observe(make_pod("g-9").requests(cpu_milli=3000).in_group("g").created(200))
    decisions = cluster.plan()
    assert [d for d in decisions if isinstance(d, Placement)] == []
    (told,) = rejections(decisions)  # the members changed: told again, with the rollback's reason
    assert "rolled back" in told.reason and len(told.pods) == 4
    cluster.advance(5)  # past the backoff
    assert [len(p.members) for p in cluster.plan() if isinstance(p, Placement)] == [4]
