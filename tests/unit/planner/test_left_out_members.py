"""Core revision 30 under review: members left out of their gang, early retries that start
over, the anti-starvation fallback; each against what it must tell and against replay."""
from __future__ import annotations

from services.contracts.decisions import Decision, Placement, Rejection
from services.planner.core import backoff
from services.planner.core.config import PlannerConfig
from services.planner.core.state import decode_state, encode_state
from tests.unit.planner.builders import (
    PodBuilder,
    make_claim,
    make_node,
    make_pod,
    make_podgroup,
    make_volume,
    pod_uid,
)
from tests.unit.planner.harness import Cluster, recorded
from tests.unit.planner.test_properties import replay_through_snapshots
from tests.unit.planner.test_queue import starvation_cluster


def members(group: str, count: int, cpu_milli: int = 1000, first: int = 0) -> list[PodBuilder]:
    return [make_pod(f"{group}-{i}").requests(cpu_milli=cpu_milli).in_group(group)
            for i in range(first, first + count)]


def churn(cluster: Cluster, tag: int) -> None:
    cluster.observe(make_pod(f"t{tag}").scheduler("other").requests(cpu_milli=1).on_node("n0"))
    cluster.delete_pod(f"t{tag}")


def placed_after_failed_early_retries() -> tuple[Cluster, list[Decision]]:
    """Gang g (minMember 1, two 3-cpu members) failing early retries for 40 s on a 4-cpu node
    another scheduler half fills, capacity freed every second; then that pod leaves and the
    gang is planned until g-0 is placed (g-1 an extra that does not fit). The cluster and the
    decisions of the round that placed it."""
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000),
        make_pod("big").scheduler("other").requests(cpu_milli=2000).on_node("n0"),
        make_podgroup("g", 1), *members("g", 2, cpu_milli=3000))
    cluster.plan()  # 0 of 1 fit: backed off
    for second in range(1, 40):  # capacity freed every second: failed early retries count up
        cluster.advance(1)
        churn(cluster, second)
        cluster.plan()
    assert cluster.state.groups["default/g"].early_retries > 0
    cluster.advance(1)
    cluster.delete_pod("big")
    for _ in range(30):
        decisions = cluster.plan()
        if any(isinstance(d, Placement) for d in decisions):
            return cluster, decisions
        cluster.advance(1)
    raise AssertionError("g-0 was never placed")


# 1. early_retries survives a placement that leaves extra members unplaced
def test_early_retries_start_over_when_the_gang_is_placed_with_extras_unplaced() -> None:
    cluster, decisions = placed_after_failed_early_retries()
    group = cluster.state.groups["default/g"]
    placement = next(d for d in decisions if isinstance(d, Placement))
    assert [m.name for m in placement.members] == ["g-0"]  # placed; g-1 is an extra unplaced
    # design notes: "The count starts over when the gang is placed"
    assert group.early_retries == 0, group.early_retries


# 2. a left-out member's priority still orders its gang
def test_a_left_out_members_priority_does_not_queue_its_gang_ahead() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000), make_podgroup("g", 1),
        make_pod("g-0").requests(cpu_milli=4000).in_group("g").priority(0),
        make_pod("g-1").requests(cpu_milli=4000).in_group("g").priority(100)
        .unsupported("spec.resourceClaims"),
        make_pod("p").requests(cpu_milli=4000).priority(50))
    decisions = cluster.plan()
    placed = [d.group for d in decisions if isinstance(d, Placement)]
    # Coscheduling: g-1 fails its own filters; g-0 (priority 0) queues behind p (priority 50)
    assert placed == ["default/pod:p"], placed


# 3. a left-out member gets no report while its gang's placement is in flight
def test_a_left_out_member_is_told_in_the_round_its_gang_is_placed() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 1), *members("g", 1),
                                members("g", 1, first=1)[0].unsupported("spec.resourceClaims"))
    decisions = cluster.plan()
    assert any(isinstance(d, Placement) for d in decisions)
    cluster.bind(decisions, skip_group_bound=True)  # binds; GroupBound slow to come
    for _ in range(30):
        cluster.advance(10)
        cluster.plan()
        told = [r for r in cluster.rejections("default/g")
                if pod_uid("g-1") in {p.uid for p in r.pods}]
        if told:
            break
    assert cluster.now_ms == 10_000, "g-1 pending with no report until " + str(cluster.now_ms)


# determinism: decisions equal a replay restoring snapshots every round
def check_replay(cluster: Cluster) -> None:
    assert replay_through_snapshots(cluster.log, cluster.config) == recorded(cluster)


def test_replay_left_out_claim_member_and_early_retries() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000),
        make_pod("big").scheduler("other").requests(cpu_milli=2000).on_node("n0"),
        make_podgroup("g", 1), *members("g", 1, cpu_milli=3000),
        make_pod("g-1").requests(cpu_milli=100).in_group("g").claims("missing"))
    cluster.plan()
    for second in range(1, 40):
        cluster.advance(1)
        if second % 3 == 0:
            churn(cluster, second)
        if second == 20:
            cluster.observe(make_volume("v"), make_claim("missing", volume="v"))
        cluster.plan()
    cluster.delete_pod("big")
    cluster.bind(cluster.plan())
    for _ in range(40, 60):
        cluster.advance(1)
        cluster.plan()
    check_replay(cluster)


def test_replay_hold_fallback() -> None:
    cluster = starvation_cluster(starvation_seconds=10, never_fitting_first=True)
    check_replay(cluster)


def test_a_left_out_member_is_told_behind_busy_binders() -> None:
    cluster = Cluster(PlannerConfig(max_placements_in_flight=1)).observe(
        make_node("n0"), make_pod("first").requests(cpu_milli=100))
    cluster.bind(cluster.plan(), skip_group_bound=True)  # one placement in flight: busy
    cluster.observe(make_podgroup("g", 1), *members("g", 1),
                    members("g", 1, first=1)[0].unsupported("spec.resourceClaims"))
    cluster.plan()
    told = {p.name for r in cluster.rejections("default/g") for p in r.pods}
    # before revision 30: "gang default/g: pod default/g-1: unsupported constraint" at once
    assert "g-1" in told, "g-1, which can never be placed, is told nothing while binders are busy"


def backed_off_behind_busy_binders(restart: bool) -> Cluster:
    """Gang a (minMember 1): a-0 never fits, a-1 unsupported (left out); rejected and backed
    off, then asleep; a singleton placed and never bound keeps the binders busy (limit 1).
    `restart`: the state is restored from its snapshot (indexes rebuilt) before the last round.
    The singleton's placement lasts an hour, so the binders are still busy at a's flush."""
    cluster = Cluster(PlannerConfig(max_placements_in_flight=1,
                                    default_timeout_seconds=3600)).observe(
        make_node("n1").capacity(cpu_milli=1000), make_podgroup("a", 1),
        make_pod("a-0").requests(cpu_milli=2000).in_group("a"),
        make_pod("a-1").requests(cpu_milli=100).in_group("a").unsupported("spec.foo"))
    cluster.plan()  # a-0 does not fit: rejected (a-1 named in a note), backed off
    cluster.plan()  # backed off: asleep until its backoff ends
    cluster.observe(make_pod("s").requests(cpu_milli=100))
    cluster.plan()  # s placed, not bound: the binders are busy
    if restart:
        cluster.state = decode_state(encode_state(cluster.state))
    cluster.observe(make_pod("t").requests(cpu_milli=100))
    cluster.plan()  # a planned again after the restart (its sleep is not in the snapshot)
    return cluster


def test_a_restart_tells_a_backed_off_gang_behind_busy_binders_nothing_new() -> None:
    """Found by a fuzzing review: planned after a restart, the asleep gang told a-1 alone
    behind the busy binders (a Rejection the live planner, skipping it, never made), so the
    catch-up diverged. While its backoff runs it tells nothing new, asleep or not."""
    live, restarted = backed_off_behind_busy_binders(False), backed_off_behind_busy_binders(True)
    assert recorded(restarted) == recorded(live)
    assert [[p.name for p in r.pods] for r in live.rejections("default/a")] == [["a-0", "a-1"]]
    for cluster in (live, restarted):
        # its backoff ends (found unschedulable: the flush), the binders still busy: a-1 is
        # told alone now
        cluster.advance(backoff.UNSCHEDULABLE_FLUSH_MS / 1000)
        cluster.plan()
        assert [p.name for p in cluster.rejections("default/a")[-1].pods] == ["a-1"]
    assert recorded(restarted) == recorded(live)
    check_replay(live)


def test_extras_first_early_retry_after_the_gang_is_placed() -> None:
    cluster, decisions = placed_after_failed_early_retries()
    cluster.bind(decisions)          # g-0 bound, GroupBound: failures = 0
    group = cluster.state.groups["default/g"]
    attempts: list[int] = []
    start = cluster.now_ms
    for second in range(0, 12):
        if second == 4:
            cluster.set_phase("g-0", "Succeeded")   # capacity freed at T+4: g-1 fits now
        last = group.last_attempt_ms
        decisions = cluster.plan()
        if group.last_attempt_ms != last or any(isinstance(d, Placement) for d in decisions):
            attempts.append((cluster.now_ms - start) // 1000)
        if any(isinstance(d, Placement) for d in decisions):
            break
        cluster.advance(1)
    # timed retries at 0, 1, 3, 7; capacity frees at 4: the first early retry 1 s after the
    # attempt at 3, i.e. at 4 (the count started over when the gang was placed)
    assert 4 in attempts, attempts


def test_a_member_waiting_alone_is_not_told_the_same_again_after_each_extra_placement() -> None:
    bad = members("g", 1, first=1)[0].unsupported("spec.resourceClaims")
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 1), *members("g", 1), bad)
    cluster.bind(cluster.plan())
    cluster.plan()  # g-1 waits alone, told
    for i in range(2, 5):  # extra members arrive one by one, each placed
        cluster.advance(1)
        cluster.observe(*members("g", 1, first=i))
        cluster.bind(cluster.plan())
        cluster.plan()
    alone = [r.reason for r in cluster.rejections("default/g")
             if [p.name for p in r.pods] == ["g-1"]]
    assert len(alone) == 1, f"told the same {len(alone)} times"


def test_a_member_left_out_of_a_backed_off_gang_behind_busy_binders_is_told_at_once() -> None:
    """Found by a review of core 36: a member left out (unsupported) that joins a gang backed
    off behind busy binders was told nothing until the backoff ended (up to a minute), and the
    gang was planned again every round meanwhile. It is told with the gang's failure (the
    note names its own field) in the round it joins, and the gang sleeps until its backoff
    ends; a restart decides the same."""
    def run(restart: bool) -> tuple[Cluster, int]:
        cluster = backed_off_behind_busy_binders(restart)
        cluster.observe(make_pod("a-2").requests(cpu_milli=100).in_group("a")
                        .unsupported("spec.bar"))
        decisions = cluster.plan()
        [told] = [d for d in decisions if isinstance(d, Rejection) and d.group == "default/a"]
        assert [p.name for p in told.pods] == ["a-0", "a-1", "a-2"]
        assert "pod default/a-2 waits apart" in told.reason and "spec.bar" in told.reason
        planned = 0
        for number in range(5):  # the binders stay busy, other pods come: a sleeps
            cluster.observe(make_pod(f"x{number}").requests(cpu_milli=1).scheduler("other"))
            cluster.advance(0.1)
            before = cluster.state.derived.asleep.get("default/a") if cluster.state.derived \
                else None
            planned += before is None
            assert cluster.plan() == []
        return cluster, planned
    (live, planned), (restarted, _) = run(False), run(True)
    assert planned == 0
    assert recorded(restarted) == recorded(live)
    check_replay(live)
