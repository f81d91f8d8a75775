"""A gang in backoff whose pending members change is looked at again (quietly: the backoff is
not lengthened): the reason it is told counts the members it has now, so a scale-down does not
leave "3 more member(s) do not fit" on 2 waiting pods."""

from __future__ import annotations

from services.contracts import codec
from services.contracts.decisions import Decision, Placement, Rejection
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, replay


def seed(size: int, min_member: int) -> Cluster:
    """One 10-CPU node, a gang of `size` 3-CPU pods with minMember `min_member`."""
    return Cluster().observe(
        make_node("n0").capacity(cpu_milli=10_000), make_podgroup("g", min_member),
        *[make_pod(f"g-{i}").requests(cpu_milli=3000).in_group("g").created(i)
          for i in range(size)])


def rejections(decisions: list[Decision]) -> list[Rejection]:
    return [d for d in decisions if isinstance(d, Rejection)]


def test_a_scale_down_in_backoff_is_told_with_the_members_left():
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
    assert replay(cluster.log, cluster.config) == b"".join(
        codec.encode(d) + b"\n" for d in cluster.decisions)
