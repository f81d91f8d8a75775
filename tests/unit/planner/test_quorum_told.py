"""A gang short of quorum is told so once its members stop arriving (`quorum.told_from_ms`)."""

from __future__ import annotations

import itertools

from services.contracts.decisions import Rejection, StatusUpdate
from services.planner.core import backoff, quorum
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, recorded
from tests.unit.planner.test_properties import replay_through_snapshots


def member(name: str):  # type: ignore[no-untyped-def]
    return make_pod(name).in_group("g")


def test_members_arriving_in_a_burst_are_placed_without_a_word_of_waiting() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 4))
    for i in range(4):
        cluster.advance(0.2).observe(member(f"g-{i}"))
        cluster.plan()
    assert [len(p.members) for p in cluster.placements()] == [4]
    assert cluster.rejections() == []
    assert recorded(cluster) == replay_through_snapshots(cluster.log, cluster.config)


def test_a_gang_short_of_quorum_is_told_a_quiet_second_after_its_newest_member() -> None:
    cluster = Cluster(now_ms=10_000).observe(make_node("n0"), make_podgroup("g", 3),
                                             member("g-0"))
    cluster.advance(0.5).observe(member("g-1"))  # newest member seen at 10.5 s
    cluster.plan()
    assert cluster.state.groups["default/g"].quorum_told_from_ms == 10_500 + quorum.QUIET_MS
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) == 11_500
    assert not [d for d in cluster.advance(0.9).plan() if isinstance(d, Rejection)]
    told = cluster.advance(0.1).plan()  # 11.5 s: a quiet second since g-1
    rejections = [d for d in told if isinstance(d, Rejection)]
    assert [(r.reason, [p.name for p in r.pods]) for r in rejections] == [
        ("gang default/g: 2 of 3 members exist; waiting for quorum (minMember 3)",
         ["g-0", "g-1"])]
    status = next(d for d in told if isinstance(d, StatusUpdate))
    assert (status.condition_reason, status.condition_message) == (
        "Unschedulable", rejections[0].reason)
    assert cluster.state.groups["default/g"].quorum_told_from_ms is None
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) is None
    assert recorded(cluster) == replay_through_snapshots(cluster.log, cluster.config)


def test_a_member_arriving_later_holds_the_next_telling_again() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 4), member("g-0"))
    cluster.advance(1).plan()
    assert "1 of 4 members exist" in cluster.last_reason("default/g")
    cluster.advance(5).observe(member("g-1"))
    cluster.plan()
    assert len(cluster.rejections("default/g")) == 1  # the old word stands meanwhile
    cluster.advance(1).plan()
    assert "2 of 4 members exist" in cluster.last_reason("default/g")


def test_a_gang_whose_members_trickle_in_is_told_again_no_sooner_than_its_backoff() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(pods=100), make_podgroup("g", 20))
    for i in range(15):  # a member every 1.2 s: each arrival leaves a quiet second
        cluster.observe(member(f"g-{i}"))
        for _ in range(12):
            cluster.advance(0.1).plan()
    told = [r.at_ms for r in cluster.rejections("default/g")]
    gaps = [b - a for a, b in itertools.pairwise(told)]
    assert told[0] == 1000  # a quiet second after the first member
    assert len(gaps) >= 4
    for n, gap in enumerate(gaps, start=1):  # 1 s, 2 s, 4 s, 8 s, then 10 s at most often
        assert gap >= min(1000 * 2 ** (n - 1), 10_000), (n, gaps)
    assert len(told) < 15 - 5  # not once per member
    cluster.advance(10).plan()
    assert "15 of 20 members exist" in cluster.last_reason("default/g")
    assert recorded(cluster) == replay_through_snapshots(cluster.log, cluster.config)


def test_a_member_updated_again_and_again_does_not_hold_the_telling_forever() -> None:
    # a controller re-writes a waiting member every half second: each update is a new
    # observation (a later at_ms), but no member joins; the gang is told all the same
    cluster = Cluster(now_ms=10_000).observe(
        make_node("n0"), make_podgroup("g", 3), member("g-0").created(10_000),
        member("g-1").created(10_000))
    version = 1
    for _ in range(20):  # 10 s of updates
        version += 1
        cluster.advance(0.5).observe(
            member("g-1").created(10_000)._with(resource_version=str(version)))
        cluster.plan()
    assert "2 of 3 members exist" in cluster.last_reason("default/g")
    assert recorded(cluster) == replay_through_snapshots(cluster.log, cluster.config)
