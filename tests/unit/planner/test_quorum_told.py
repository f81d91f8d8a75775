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
from services.planner.core.config import PlannerConfig
from services.planner.core.indexes import Asleep
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
    asleep = cluster.state.derived.asleep  # type: ignore[union-attr]
    assert asleep == {"default/g": Asleep(11_000)}
    assert not cluster.advance(0.5).plan()
    assert asleep == {"default/g": Asleep(11_000)}  # not looked at: nothing was due
    cluster.advance(0.2).observe(member("g-1"))  # a change: looked at, due a second later
    assert not [d for d in cluster.plan() if isinstance(d, Rejection)]
    assert asleep == {"default/g": Asleep(11_700)}
    told = [d for d in cluster.advance(1).plan() if isinstance(d, Rejection)]
    assert [r.reason for r in told] == [
        "gang default/g: 2 of 3 members exist; waiting for quorum (minMember 3)"]
    assert asleep == {}


def test_a_gang_with_a_claim_among_its_joining_members_is_looked_at_every_round() -> None:
    # a claim deleted meanwhile must be told at once (VolumeBinding's PreFilter), not when
    # the quorum telling is due: no change to the gang's pods marks it
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3),
                                make_claim("data", volume="pv"), make_volume("pv", claim=(
                                    "default", "data")),
                                member("g-0").claims("data"))
    cluster.plan()
    assert cluster.state.derived.asleep == {}  # type: ignore[union-attr]
    cluster.advance(0.3).apply(ClaimDeleted(at_ms=cluster.now_ms, uid="uid-claim-default-data",
                                            namespace="default", name="data"))
    told = [d for d in cluster.plan() if isinstance(d, Rejection)]
    assert len(told) == 1 and "persistentvolumeclaim \"data\" not found" in told[0].reason


def _contended(seed: int) -> list[Decision]:
    """Gangs arriving at random onto too little room; bound members finish now and then
    (capacity freed: early retries), and gangs wait long enough to starve (and hold)."""
    rng = random.Random(seed)
    arrivals = [(rng.uniform(0, 6), f"g{g}", f"g{g}-{i}")
                for g in range(10) for i in range(rng.randint(2, 6))]
    cluster = Cluster(PlannerConfig(starvation_seconds=3, backoff_initial_seconds=1,
                                    backoff_max_seconds=30))
    cluster.observe(make_node("n0").capacity(pods=12), make_node("n1").capacity(pods=6),
                    *(make_podgroup(f"g{g}", 4) for g in range(10)))
    bound: list[str] = []

    def tick() -> None:
        decisions = cluster.advance(0.1).plan()
        cluster.bind(decisions)
        bound.extend(m.pod_uid for d in decisions if isinstance(d, Placement)
                     for m in d.members)
        if bound and rng.random() < 0.05:  # a member finishes: its room is freed
            cluster.set_phase(cluster.state.pods[bound.pop(0)].name, "Succeeded")

    for at, group, name in sorted(arrivals):
        while cluster.now_ms < at * 1000:
            tick()
        cluster.observe(make_pod(name).in_group(group))
    for _ in range(300):
        tick()
    assert any(isinstance(d, Rejection) for d in cluster.decisions)
    assert any(isinstance(d, Placement) for d in cluster.decisions)
    return cluster.decisions


@pytest.mark.parametrize("seed", range(8))
def test_skipping_groups_that_wait_for_time_changes_no_decision(
        monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    def scenario() -> list[Decision]:
        return _contended(seed)

    slept: list[str] = []
    sleep = Round.sleep

    def counted(self: Round, key: str, *args: Any, **kwargs: Any) -> None:
        slept.append(key)
        sleep(self, key, *args, **kwargs)

    monkeypatch.setattr(Round, "sleep", counted)
    skipping = scenario()
    assert len(slept) > 20  # gangs joining, and backed off, for a while
    monkeypatch.setattr(Round, "sleep", lambda *args, **kwargs: None)
    assert scenario() == skipping


def _starving_scenario(monkeypatch: pytest.MonkeyPatch | None) -> Cluster:
    if monkeypatch is not None:
        monkeypatch.setattr(Round, "sleep", lambda *args, **kwargs: None)
    cluster = Cluster(PlannerConfig(starvation_seconds=5, backoff_max_seconds=30))
    cluster.observe(make_node("n0").capacity(pods=4), make_podgroup("a", 2),
                    make_podgroup("b", 4))
    cluster.observe(*(make_pod(f"a-{i}").in_group("a") for i in range(2)))
    cluster.bind(cluster.plan())
    cluster.advance(0.1).observe(*(make_pod(f"b-{i}").in_group("b") for i in range(4)))
    while cluster.now_ms < 6000:
        cluster.bind(cluster.advance(0.1).plan())
    cluster.observe(make_podgroup("c", 2).created(cluster.now_ms),
                    *(make_pod(f"c-{i}").in_group("c") for i in range(2)))
    for _ in range(5):
        cluster.bind(cluster.advance(0.1).plan())
    return cluster


def test_a_backed_off_gang_is_looked_at_again_when_it_starts_starving(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # b (4 members) cannot fit beside a; backed off 1, 2, 4, 8 s, it starts starving at 5.1 s,
    # mid-backoff, and from then on reserves n0 every round: c, arriving at 6 s, fits the two
    # free slots but is not placed there
    cluster = _starving_scenario(None)
    assert not [p for p in cluster.placements() if p.group == "default/c"]
    assert cluster.state.starving_group == "default/b"
    assert cluster.decisions == _starving_scenario(monkeypatch).decisions
