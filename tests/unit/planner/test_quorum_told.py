"""A gang short of quorum is told so once its members stop arriving (`quorum.told_from_ms`)."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from services.contracts.decisions import Decision, Placement, Rejection, StatusUpdate
from services.contracts.events import ClaimDeleted
from services.planner.core import backoff, quorum
from services.planner.core.attempt import Round
from tests.unit.planner.builders import (
    make_claim,
    make_node,
    make_pod,
    make_podgroup,
    make_volume,
)
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


def test_a_gang_still_joining_is_skipped_until_its_telling_is_due_or_it_changes() -> None:
    cluster = Cluster(now_ms=10_000).observe(make_node("n0"), make_podgroup("g", 3),
                                             member("g-0"))
    cluster.plan()
    joining = cluster.state.derived.joining  # type: ignore[union-attr]
    assert joining == {"default/g": 11_000}
    assert not cluster.advance(0.5).plan()
    assert joining == {"default/g": 11_000}  # not looked at: nothing was due
    cluster.advance(0.2).observe(member("g-1"))  # a change: looked at, due a second later
    assert not [d for d in cluster.plan() if isinstance(d, Rejection)]
    assert joining == {"default/g": 11_700}
    told = [d for d in cluster.advance(1).plan() if isinstance(d, Rejection)]
    assert [r.reason for r in told] == [
        "gang default/g: 2 of 3 members exist; waiting for quorum (minMember 3)"]
    assert joining == {}


def test_a_gang_with_a_claim_among_its_joining_members_is_looked_at_every_round() -> None:
    # a claim deleted meanwhile must be told at once (VolumeBinding's PreFilter), not when
    # the quorum telling is due: no change to the gang's pods marks it
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3),
                                make_claim("data", volume="pv"), make_volume("pv", claim=(
                                    "default", "data")),
                                member("g-0").claims("data"))
    cluster.plan()
    assert cluster.state.derived.joining == {}  # type: ignore[union-attr]
    cluster.advance(0.3).apply(ClaimDeleted(at_ms=cluster.now_ms, uid="uid-claim-default-data",
                                            namespace="default", name="data"))
    told = [d for d in cluster.plan() if isinstance(d, Rejection)]
    assert len(told) == 1 and "persistentvolumeclaim \"data\" not found" in told[0].reason


def test_skipping_joining_gangs_changes_no_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    def scenario() -> list[Decision]:
        rng = random.Random(7)
        arrivals = [(rng.uniform(0, 6), f"g{g}", f"g{g}-{i}")
                    for g in range(8) for i in range(rng.randint(2, 6))]
        cluster = Cluster().observe(make_node("n0").capacity(pods=20),
                                    make_node("n1").capacity(pods=6),
                                    *(make_podgroup(f"g{g}", 4) for g in range(8)))
        for at, group, name in sorted(arrivals):
            while cluster.now_ms < at * 1000:
                cluster.bind(cluster.advance(0.1).plan())
            cluster.observe(make_pod(name).in_group(group))
        for _ in range(150):
            cluster.bind(cluster.advance(0.1).plan())
        assert any(isinstance(d, Rejection) for d in cluster.decisions)
        assert any(isinstance(d, Placement) for d in cluster.decisions)
        return cluster.decisions

    slept: list[str] = []
    sleep = Round.sleep

    def counted(self: Round, key: str, *args: Any, **kwargs: Any) -> None:
        slept.append(key)
        sleep(self, key, *args, **kwargs)

    monkeypatch.setattr(Round, "sleep", counted)
    skipping = scenario()
    assert len(slept) > 20  # the scenario has gangs joining for a while
    monkeypatch.setattr(Round, "sleep", lambda *args, **kwargs: None)
    assert scenario() == skipping
