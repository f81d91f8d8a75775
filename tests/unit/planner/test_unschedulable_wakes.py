"""Core revision 37, found by a review (session 34): changes that must wake a gang found
unschedulable, or free the room a hold or nomination kept, and the churn and tight loops the
change must not bring."""

from __future__ import annotations

from services.contracts.decisions import Placement, Preemption
from services.contracts.events import PodGroupDeleted
from services.planner.core import reasons
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster
from tests.unit.planner.unschedulable import GIB, placed, plan_until_placed, victims_leave


def test_podgroup_recreated_with_a_smaller_min_member_wakes_its_gang() -> None:
    """A PodGroup deleted and created again (kubectl replace / apply --force, an operator
    that recreates it) with minMember 2 instead of 3: the 2 members that fit should be placed
    soon, as Coscheduling requeues on PodGroup Add. `_podgroup_changed` frees capacity only
    for an update (`old is not None`), so the gang waits for the 5-minute flush."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000), make_podgroup("g", 3),
                                *[make_pod(f"g-{i}").requests(cpu_milli=400).in_group("g")
                                  for i in range(3)])
    assert placed(cluster.plan()) == []
    cluster.advance(10)
    cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid="uid-pg-default-g", namespace="default",
                                  name="g"))
    cluster.plan()
    cluster.advance(1)
    cluster.observe(make_podgroup("g", 2).uid("uid-pg-default-g-again"))
    assert plan_until_placed(cluster, 30) is not None  # before the fix: None (placed at the flush)


def test_a_hold_that_shrinks_on_the_same_nodes_frees_room() -> None:
    """Gang `big` (minMember 1) starves and holds n0 for its first member big-0 (cpu 1000,
    mem 3Gi; cpu is what keeps it out). `small` (mem 2Gi) is found unschedulable beside the
    hold, then again when it starts starving. big-0 is deleted: the hold is now for big-1
    (mem 256Mi), on the same node, so 2.75Gi more memory is free and `small` fits. The hold
    neither ended nor moved (`Round.lift_hold` compares only the holder and its nodes), and
    nothing else frees capacity: `small` waits for its flush."""
    config = PlannerConfig(starvation_seconds=10, preemption=False)
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=2000, memory_bytes=4 * GIB),
        make_pod("r").requests(cpu_milli=1500).on_node("n0"),  # ours: it may drain
        make_podgroup("big", 1),
        make_pod("big-0").requests(cpu_milli=1000, memory_bytes=3 * GIB).in_group("big"),
        make_pod("big-1").requests(cpu_milli=1000, memory_bytes=GIB // 4).in_group("big"))
    cluster.plan()
    cluster.advance(10)
    cluster.plan()
    assert cluster.state.starving_group == "default/big"
    cluster.advance(2)
    cluster.observe(make_pod("small").requests(memory_bytes=2 * GIB))
    assert placed(cluster.plan()) == []
    cluster.advance(10)  # small starts starving: tried again, still behind big's hold
    assert placed(cluster.plan()) == []
    assert cluster.state.starving_group == "default/big"
    cluster.advance(3)
    cluster.delete_pod("big-0")
    assert plan_until_placed(cluster, 30) is not None  # before: small waited for its flush


def test_a_gang_told_it_never_fits_that_now_holds_is_not_told_it_reserves_nothing() -> None:
    """`p` (1200m) is found never-fitting at its starving retry: another scheduler's pod `o`
    pins 900m of n0's 2000m. `o` finishes (capacity freed): the early retry fails with the same
    node reason (Insufficient cpu: our `r` uses 900m), so nothing is told, yet the
    round makes `p` hold n0 (`_maybe_hold` at the end of `_plan_group`). Its told reason still
    says it reserves no capacity while it does, until its flush; and, that reason ending with
    NEVER_FITS, it is no longer retried every round as a holder."""
    config = PlannerConfig(starvation_seconds=10, preemption=False)
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=2000),
        make_pod("o").requests(cpu_milli=900).on_node("n0").scheduler("default-scheduler"),
        make_pod("r").requests(cpu_milli=900).on_node("n0"),  # ours
        make_pod("p").requests(cpu_milli=1200))
    cluster.plan()
    cluster.advance(10)
    cluster.plan()
    assert cluster.last_reason("default/pod:p").endswith(reasons.NEVER_FITS)
    cluster.advance(5)
    cluster.set_phase("o", "Succeeded")
    for _ in range(10):
        cluster.plan()
        cluster.advance(1)
    assert cluster.state.starving_group == "default/pod:p"  # it holds n0 now
    assert not cluster.last_reason("default/pod:p").endswith(reasons.NEVER_FITS)  # before: it did


def test_a_nominated_gang_is_not_told_anew_as_each_victim_leaves() -> None:
    """Gang `h` preempts 12 low-priority pods; while they leave one a second, its quiet retry
    (every round: it holds a nomination) fails with a reason that differs from the one told
    ('waiting for N preempted pod(s)'), and since core 37 that is told: 11 Rejections while
    11 victims leave (core 36: 3, at its timed retries)."""
    n = 12
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=1000 * n),
        *[make_pod(f"v{i}").requests(cpu_milli=1000).on_node("n0") for i in range(n)],
        make_podgroup("h", 1),
        make_pod("h-0").requests(cpu_milli=1000 * n).in_group("h").priority(10))
    told = victims_leave(cluster, n)
    assert len(told) <= 3  # before the fix: 11, one per victim gone


# --- tests the change lacks: each passes now, and fails under the mutation named ----------


def test_a_nomination_that_ends_frees_its_room_for_a_gang_found_unschedulable() -> None:
    """Catches removing `capacity_freed` from `Round.hold_nominations` (no test did): `h`
    preempts `v` and its nomination holds n0; `s` is found unschedulable beside it; h's
    PodGroup is deleted, so its nomination lapses: s fits in the room v never filled."""
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000),
        make_pod("v").requests(cpu_milli=3000).on_node("n0"),
        make_podgroup("h", 1),
        make_pod("h-0").requests(cpu_milli=4000).in_group("h").priority(10))
    assert any(isinstance(d, Preemption) for d in cluster.plan())
    cluster.advance(1)
    cluster.observe(make_pod("s").requests(cpu_milli=1000))
    assert placed(cluster.plan()) == []
    cluster.advance(5)
    cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid="uid-pg-default-h",
                                  namespace="default", name="h"))
    assert plan_until_placed(cluster, 5) is not None


def test_a_rolled_back_gang_is_not_woken_by_its_recreated_members_with_a_longer_backoff() -> None:
    """Catches `_wake_group_of` waking a rolled-back gang, which
    `test_a_rolled_back_gang_is_not_woken_by_its_recreated_members` cannot: its backoff (1 s)
    ends exactly when a wake's early retry would come (1 s after the rollback). Rolled back
    twice, the backoff is 2 s: placed at 2 s, not 1 s."""
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000), make_podgroup("g", 1),
        make_pod("g-0").requests(cpu_milli=500).in_group("g"))
    (placement,) = [d for d in cluster.plan() if isinstance(d, Placement)]
    cluster.roll_back(placement)
    cluster.advance(1)
    (placement,) = [d for d in cluster.plan() if isinstance(d, Placement)]
    cluster.roll_back(placement)
    cluster.delete_pod("g-0")
    cluster.observe(make_pod("g-0b").requests(cpu_milli=500).in_group("g"))
    assert plan_until_placed(cluster, 10) == 2



def test_a_holder_that_comes_to_fit_nowhere_even_emptied_is_not_retried_every_round() -> None:
    """`h` starves and holds n0 (our `r` there may drain). `r` finishes and another
    scheduler's pod takes its room at once (same batch): the node reason is unchanged, so the
    quiet retry tells nothing, and `h` would not fit even on emptied nodes now: it holds
    nothing. But `holding` looks at the told reason (it ends with the hold note, not
    NEVER_FITS): `h` is still retried every round, reference C.2's tight loop, until its flush
    5 minutes later; and its told reason still says it reserves capacity."""
    config = PlannerConfig(starvation_seconds=10, preemption=False)
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=2000), make_node("n1").capacity(cpu_milli=2000),
        make_pod("r").requests(cpu_milli=1500).on_node("n0"),  # ours
        make_pod("o1").requests(cpu_milli=1500).on_node("n1").scheduler("default-scheduler"),
        make_pod("h").requests(cpu_milli=1000))
    cluster.plan()
    cluster.advance(10)
    cluster.plan()
    assert cluster.state.starving_group == "default/pod:h"
    cluster.advance(2)
    cluster.set_phase("r", "Succeeded")
    cluster.observe(make_pod("o0").requests(cpu_milli=1500).on_node("n0")
                    .scheduler("default-scheduler"))
    attempts = []
    for _ in range(60):
        cluster.plan()
        if cluster.state.groups["default/pod:h"].last_attempt_ms == cluster.now_ms:
            attempts.append(cluster.now_ms // 1000)
        cluster.advance(1)
    assert cluster.state.starving_group is None  # it holds nothing
    assert len(attempts) <= 10  # before the fix: 60, one per round
    assert "reserving capacity" not in cluster.last_reason("default/pod:h")  # before the fix: it is


def test_a_min_resources_requirement_swapped_for_one_met_wakes_its_gang() -> None:
    """minResources {cpu: 8} (n0 has 4 cpu: shortfall, found unschedulable) updated to
    {memory: 1}, met. `_may_let_through` sees no amount lowered (memory was 0, not absent:
    `old.min_resources.get(name, 0)`) and the new keys are not a subset of the old, so no
    wake: the gang waits for its flush (before core 37, its 1 s backoff)."""
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000, memory_bytes=4 * GIB),
        make_podgroup("g", 1).min_resources(cpu=8000),
        make_pod("g-0").requests(cpu_milli=500).in_group("g"))
    assert placed(cluster.plan()) == []
    cluster.advance(10)
    cluster.observe(make_podgroup("g", 1).min_resources(memory=1))
    assert plan_until_placed(cluster, 30) is not None  # before the fix: None (the flush)
