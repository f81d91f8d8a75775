"""Bind outcomes and backoff: rollback releases and backs off; permanent failures wait for it."""

from __future__ import annotations

from services.contracts.decisions import Placement, Rejection
from services.contracts.events import Event, GroupBound, MemberBindFailed
from services.planner.core import backoff
from services.planner.core import plan as planner
from services.planner.core.config import PlannerConfig
from services.planner.core.state import GroupState
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster


def gang_cluster(config: PlannerConfig | None = None) -> tuple[Cluster, Placement]:
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=4000), make_podgroup("g", 2),
        *[make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g") for i in range(2)])
    placement = next(d for d in cluster.plan() if isinstance(d, Placement))
    return cluster, placement


def test_rollback_releases_reservations_and_backs_the_group_off() -> None:
    cluster, placement = gang_cluster()
    cluster.advance(3)
    cluster.roll_back(placement, "node n0 went away")
    assert cluster.state.reservations == {}
    rejection = cluster.plan()[0]
    assert isinstance(rejection, Rejection)
    assert rejection.reason == (
        f"gang default/g: placement {placement.id} rolled back: node n0 went away")
    assert rejection.retry_at_ms == 4000
    cluster.advance(0.5)
    assert cluster.plan() == []
    cluster.advance(0.5)
    retried = next(d for d in cluster.plan() if isinstance(d, Placement))
    assert retried.attempt == 2


def test_a_rolled_back_group_queues_at_its_failure_time() -> None:
    cluster, placement = gang_cluster()
    cluster.advance(1).roll_back(placement)
    cluster.observe(make_pod("newer").requests(cpu_milli=3000).created(500))
    cluster.advance(1)
    decisions = cluster.plan()
    # both fit only one at a time: the singleton created at 0.5 s queues before the failure at 1 s
    assert [d.group for d in decisions if isinstance(d, Placement)] == ["default/pod:newer"]


def test_a_duplicate_rollback_changes_nothing() -> None:
    cluster, placement = gang_cluster()
    cluster.roll_back(placement)
    failures = cluster.state.groups["default/g"].failures
    cluster.roll_back(placement)
    assert cluster.state.groups["default/g"].failures == failures


def test_permanent_bind_failure_keeps_reservations_until_the_rollback() -> None:
    cluster, placement = gang_cluster()
    member = placement.members[0]
    cluster.apply(MemberBindFailed(at_ms=0, decision_id=placement.id, group="default/g",
                                   pod_uid=member.pod_uid, node=member.node, reason="gone",
                                   is_permanent=True))
    cluster.plan()
    assert len(cluster.state.reservations) == 2
    cluster.roll_back(placement)
    assert cluster.state.reservations == {}


def test_group_bound_clears_the_in_flight_placement() -> None:
    cluster, placement = gang_cluster()
    cluster.apply(GroupBound(at_ms=0, decision_id=placement.id, group="default/g"))
    assert cluster.state.placements == {}
    assert cluster.state.groups["default/g"].in_flight == []


def test_expired_placement_backs_off_the_group() -> None:
    cluster, _ = gang_cluster(PlannerConfig(release_grace_seconds=5))
    cluster.advance(60 + 5)
    cluster.plan()
    group = cluster.state.groups["default/g"]
    assert group.failures == 1 and group.failed_at_ms == 65000


def test_backoff_is_exponential_and_capped() -> None:
    config = PlannerConfig(backoff_initial_seconds=1, backoff_max_seconds=10)
    assert [backoff.backoff_ms(n, config) for n in range(1, 7)] == [
        1000, 2000, 4000, 8000, 10000, 10000]
    group = GroupState(failures=3, failed_at_ms=5000)
    assert backoff.retry_at_ms(group, config) == 9000
    assert backoff.is_backed_off(group, 8999, config)
    assert not backoff.is_backed_off(group, 9000, config)


def test_an_unschedulable_group_is_retried_on_no_timer_before_the_flush() -> None:
    """Core revision 37: with nothing in the cluster changed, a group found unschedulable is
    tried again only after kube-scheduler's unschedulable flush (5 minutes), not on a backoff
    of 1 s doubling (which tried it at 1, 3, 7, 15, 31 and 63 s)."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000),
                                make_pod("big").requests(cpu_milli=2000))
    retries: list[int | None] = []
    attempts: list[int] = []
    for second in range(660):
        for decision in cluster.plan():
            assert isinstance(decision, Rejection)
            retries.append(decision.retry_at_ms)
        if cluster.state.groups["default/pod:big"].last_attempt_ms == second * 1000:
            attempts.append(second)
        cluster.advance(1)
    assert (attempts, retries) == ([0, 300, 600], [300_000, 600_000, 900_000])


def test_a_rolled_back_group_keeps_its_growing_backoff() -> None:
    group = GroupState(failures=3, failed_at_ms=5000, may_retry_early=False)
    assert backoff.retry_at_ms(group, PlannerConfig()) == 9000
    found = GroupState(failures=3, failed_at_ms=5000, may_retry_early=True)
    assert backoff.retry_at_ms(found, PlannerConfig()) == 5000 + backoff.UNSCHEDULABLE_FLUSH_MS
    no_backoff = PlannerConfig(backoff_initial_seconds=0, backoff_max_seconds=0)
    assert backoff.retry_at_ms(found, no_backoff) == 5000  # as configured: every round


def test_next_wakeup_is_the_earliest_retry() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000),
                                make_pod("big").requests(cpu_milli=2000))
    cluster.plan()
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) == 300_000


def test_an_unschedulable_group_is_retried_early_once_capacity_frees() -> None:
    blocker = make_pod("blocker").scheduler("default-scheduler").requests(cpu_milli=3000)
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                blocker.on_node("n0"), make_pod("p").requests(cpu_milli=2000))
    for _ in range(5):  # fail at 0 s: not tried again before the flush
        cluster.plan()
        cluster.advance(1)
    assert cluster.state.groups["default/pod:p"].failures == 1
    cluster.set_phase("blocker", "Succeeded")  # at 5 s
    decisions = cluster.plan()
    assert [type(d).__name__ for d in decisions] == ["Placement"]


def test_a_group_that_never_fits_is_retried_early_at_most_once_per_capped_backoff() -> None:
    """Reference C.2: capacity freeing every second does not make a gang that can never fit
    be searched every second; its failed early retries back off (1, 2, 4, 8 s, then 10 s), as
    kube-scheduler's backoff queue paces a pod that events keep moving."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_pod("p").requests(cpu_milli=6000))
    attempts: list[int] = []
    for second in range(60):
        cluster.observe(make_pod(f"t{second}").scheduler("other").requests(cpu_milli=10)
                        .on_node("n0"))
        cluster.delete_pod(f"t{second}")  # capacity freed every second
        before = cluster.state.groups.get("default/pod:p")
        last = before.last_attempt_ms if before is not None else None
        cluster.plan()
        group = cluster.state.groups["default/pod:p"]
        if group.last_attempt_ms != last:
            attempts.append(cluster.now_ms // 1000)
        cluster.advance(1)
    # early retries 1, 2, 4, 8 s and then 10 s after each attempt: 9 in a minute, not 60
    assert attempts == [0, 1, 3, 7, 15, 25, 35, 45, 55]


def test_an_early_retry_that_still_fails_is_not_told_again() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_pod("p").requests(cpu_milli=6000))
    for _ in range(4):  # fail at 0 s
        cluster.plan()
        cluster.advance(1)
    cluster.observe(make_pod("tiny").scheduler("other").requests(cpu_milli=10).on_node("n0"))
    cluster.delete_pod("tiny")  # capacity freed at 4 s, but not enough
    told = len(cluster.rejections("default/pod:p"))
    assert cluster.plan() == []
    assert len(cluster.rejections("default/pod:p")) == told
    group = cluster.state.groups["default/pod:p"]
    assert (group.failures, group.last_attempt_ms) == (1, 4000)  # tried early, not counted


def test_step_applies_every_event_then_plans_once() -> None:
    cluster = Cluster()
    events: list[Event] = [make_node("n0").build(), make_pod("p").build(1500)]
    state, decisions = planner.step(cluster.state, events, cluster.config, 2)
    assert [d.id for d in decisions] == ["2-0"]
    assert decisions[0].at_ms == 1500 and state.now_ms == 1500


def test_a_gang_whose_min_member_is_lowered_is_retried_without_waiting_out_its_backoff() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000), make_podgroup("g", 3),
        *[make_pod(f"g-{i}").requests(cpu_milli=2000).in_group("g") for i in range(3)])
    for _ in range(20):  # 2 of 3 fit: failing at 0 s, not tried again before the flush
        cluster.plan()
        cluster.advance(1)
    group = cluster.state.groups["default/g"]
    assert group.failures == 1 and backoff.retry_at_ms(group, cluster.config) == 300_000
    cluster.observe(make_podgroup("g", 2))  # at 20 s: two members make the gang now
    placed = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert [sorted(m.name for m in p.members) for p in placed] == [["g-0", "g-1"]]


def test_a_gang_whose_min_member_is_raised_keeps_its_backoff() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000), make_podgroup("g", 3),
        *[make_pod(f"g-{i}").requests(cpu_milli=2000).in_group("g") for i in range(3)])
    for _ in range(20):
        cluster.plan()
        cluster.advance(1)
    cluster.observe(make_podgroup("g", 4))
    assert not [d for d in cluster.plan() if isinstance(d, Placement)]
    group = cluster.state.groups["default/g"]
    assert (group.failures, group.last_attempt_ms) == (1, 0)  # not tried again
