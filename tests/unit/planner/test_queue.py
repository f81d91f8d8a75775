"""Queue order (priority, queue time, key) and anti-starvation reservation."""

from __future__ import annotations

from services.contracts.decisions import Decision, Placement
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import NodeBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster


def one_slot() -> NodeBuilder:
    return make_node("n0").capacity(cpu_milli=1000)


def placed_groups(decisions: list[Decision]) -> list[str]:
    return [d.group for d in decisions if isinstance(d, Placement)]


def test_higher_priority_goes_first_even_if_newer() -> None:
    cluster = Cluster().observe(one_slot(),
                                make_pod("old").requests(cpu_milli=1000).priority(1),
                                make_pod("new").requests(cpu_milli=1000).priority(5).created(9))
    assert placed_groups(cluster.plan()) == ["default/pod:new"]


def test_equal_priority_goes_by_creation_time_then_by_key() -> None:
    cluster = Cluster().observe(one_slot(),
                                make_pod("b").requests(cpu_milli=1000).created(5),
                                make_pod("a").requests(cpu_milli=1000).created(7),
                                make_pod("c").requests(cpu_milli=1000).created(5))
    assert placed_groups(cluster.plan()) == ["default/pod:b"]


def test_podgroup_creation_time_orders_gangs() -> None:
    pods = [make_pod(f"{g}-0").requests(cpu_milli=1000).in_group(g) for g in ("a", "z")]
    cluster = Cluster().observe(one_slot(), make_podgroup("a", 1).created(10),
                                make_podgroup("z", 1).created(3), *pods)
    assert placed_groups(cluster.plan()) == ["default/z"]


def test_a_group_that_does_not_fit_does_not_block_the_next() -> None:
    cluster = Cluster().observe(one_slot(), make_pod("big").requests(cpu_milli=5000).priority(9),
                                make_pod("small").requests(cpu_milli=500))
    assert placed_groups(cluster.plan()) == ["default/pod:small"]


def starvation_cluster(starvation_seconds: float, never_fitting_first: bool = False) -> Cluster:
    """Three 4-cpu nodes each running two 2-cpu pods; one finishes every 5 s while a new
    2-cpu pod arrives every 5 s; a gang needs two whole nodes (`never_fitting_first`: and has
    a third member, first by name, of 8 cpu, which no node can ever take)."""
    config = PlannerConfig(starvation_seconds=starvation_seconds)
    running = [make_pod(f"r{i}").requests(cpu_milli=2000).on_node(f"n{i % 3}")
               for i in range(6)]
    gang = [make_pod(f"g-{i}").requests(cpu_milli=4000).in_group("g") for i in range(1, 3)]
    if never_fitting_first:
        gang.insert(0, make_pod("g-0").requests(cpu_milli=8000).in_group("g"))
    cluster = Cluster(config).observe(
        *[make_node(f"n{i}").capacity(cpu_milli=4000) for i in range(3)], *running,
        make_podgroup("g", 2), *gang)
    cluster.run()
    for second in range(1, 61):
        cluster.advance(1)
        if second % 5 == 0 and second // 5 <= 6:
            cluster.set_phase(f"r{second // 5 - 1}", "Succeeded")
        if second % 5 == 0:
            cluster.observe(make_pod(f"s{second}").requests(cpu_milli=2000)
                            .created(second * 1000))
        cluster.run()
    return cluster


def test_without_anti_starvation_small_pods_keep_taking_the_gangs_capacity() -> None:
    cluster = starvation_cluster(starvation_seconds=1000)
    assert "g-1" not in cluster.bound()


def test_a_starving_gang_reserves_capacity_and_is_placed() -> None:
    cluster = starvation_cluster(starvation_seconds=10)
    assert {"g-1", "g-2"} <= set(cluster.bound())
    assert any("reserving capacity on 2 node(s) for this gang" in r.reason
               for r in cluster.rejections("default/g"))
    assert any("node(s) had capacity reserved for waiting gang default/g" in r.reason
               for r in cluster.rejections())
    assert cluster.state.starving_group != "default/g"  # placed: it holds nothing any more


def test_a_starving_gang_holds_for_the_members_that_fit_whatever_their_names() -> None:
    """Reference C.3: the member that can never fit (g-0, first by name) does not make the
    gang hold nothing, or it starves while its two other members would fit."""
    cluster = starvation_cluster(starvation_seconds=10, never_fitting_first=True)
    assert {"g-1", "g-2"} <= set(cluster.bound())
    assert "g-0" not in cluster.bound()
    assert any("reserving capacity on 2 node(s) for this gang" in r.reason
               for r in cluster.rejections("default/g"))
    assert not any("would not fit even on nodes emptied" in r.reason
                   for r in cluster.rejections("default/g"))


def test_a_podgroup_seen_again_with_a_later_creation_keeps_its_place() -> None:
    """The watcher's Kueue PodGroup takes its creation from the member it was seen through:
    a later member's must not move the gang behind a group created after it. Judged from
    every pod (no index built yet, as after a snapshot) and from the group index alike."""
    for builds_index_first in (False, True):
        busy = make_pod("busy").requests(cpu_milli=1000).on_node("n0")
        cluster = Cluster().observe(one_slot(), busy)
        if builds_index_first:
            cluster.plan()
            assert cluster.state.derived is not None
        pods = [make_pod(f"{g}-0").requests(cpu_milli=1000).in_group(g) for g in ("a", "z")]
        cluster.observe(make_podgroup("z", 1).created(3), make_podgroup("a", 1).created(5),
                        *pods, make_podgroup("z", 1).created(9))
        cluster.delete_pod("busy")
        assert placed_groups(cluster.plan()) == ["default/z"], builds_index_first


def test_a_group_run_again_under_its_name_after_its_members_went_is_new() -> None:
    """The Kueue PodGroup is never deleted: a group run again under the same name, its
    earlier members gone, queues by its new creation, behind a group that waited before."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=2000),
                                make_podgroup("train", 1).created(1),
                                make_pod("train-0").requests(cpu_milli=2000).in_group("train"))
    cluster.bind(cluster.plan())
    cluster.observe(make_pod("train-0").requests(cpu_milli=2000).in_group("train")
                    .on_node("n0").phase("Succeeded"))
    cluster.delete_pod("train-0")
    cluster.observe(make_node("n0").capacity(cpu_milli=1000),
                    make_podgroup("other", 1).created(5),
                    make_pod("other-0").requests(cpu_milli=1000).in_group("other"),
                    make_podgroup("train", 1).created(9),
                    make_pod("train-1").requests(cpu_milli=1000).in_group("train"))
    assert placed_groups(cluster.plan()) == ["default/other"]


def test_a_run_again_whose_member_is_seen_before_its_group_event_is_new() -> None:
    """The watcher publishes a Kueue member's group event before the pod's, but a retried
    publish may be stored after it: the new run's member, live when its group event comes,
    was created after the earlier run, so the group takes its new creation all the same."""
    for builds_index_first in (False, True):
        cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=2000),
                                    make_podgroup("train", 1).created(1),
                                    make_pod("train-0").requests(cpu_milli=2000)
                                    .in_group("train").created(1))
        cluster.bind(cluster.plan())
        cluster.observe(make_pod("train-0").requests(cpu_milli=2000).in_group("train")
                        .on_node("n0").phase("Succeeded").created(1))
        if builds_index_first:
            cluster.plan()
            assert cluster.state.derived is not None
        cluster.observe(make_node("n0").capacity(cpu_milli=1000),
                        make_podgroup("other", 1).created(5),
                        make_pod("other-0").requests(cpu_milli=1000).in_group("other")
                        .created(5),
                        make_pod("train-1").requests(cpu_milli=1000).in_group("train")
                        .created(9),
                        make_podgroup("train", 1).created(9))
        assert placed_groups(cluster.plan()) == ["default/other"], builds_index_first


def test_a_gang_whose_oldest_member_was_replaced_queues_by_its_oldest_live_member() -> None:
    """Kueue replaces a failed member of a plain pod group: the replacement's group event
    states its own, later creation, but members older than it still wait, so the gang keeps
    its place ahead of a group created after them (found in review)."""
    for builds_index_first in (False, True):
        busy = make_pod("busy").requests(cpu_milli=1000).on_node("n0")
        cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000), busy)
        if builds_index_first:
            cluster.plan()
            assert cluster.state.derived is not None
        train = [make_pod(f"train-{n}").requests(cpu_milli=1000).in_group("train").created(at)
                 for n, at in ((0, 1000), (1, 2000))]
        cluster.observe(make_podgroup("train", 1).created(1000), train[0],
                        make_podgroup("train", 1).created(2000), train[1],
                        make_podgroup("other", 1).created(5000),
                        make_pod("other-0").requests(cpu_milli=1000).in_group("other")
                        .created(5000))
        cluster.set_phase("train-0", "Failed")
        cluster.observe(make_podgroup("train", 1).created(10000),
                        make_pod("train-0b").requests(cpu_milli=1000).in_group("train")
                        .created(10000))
        assert cluster.state.podgroups["default/train"].created_at_ms == 2000
        cluster.delete_pod("busy")
        assert placed_groups(cluster.plan()) == ["default/train"], builds_index_first
