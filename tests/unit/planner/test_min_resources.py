"""A PodGroup's minResources, as Coscheduling's PreFilter checks them (`CheckClusterResource`):
the free capacity of every node in the cluster, whatever the gang's own filters say of the node,
with what the group's own pods take counted as free, and a pod slot per minMember."""

from __future__ import annotations

from services.contracts.decisions import Placement
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster


def _gang(cluster: Cluster, min_member: int = 2, **min_resources: int) -> Cluster:
    """Gang g of two 1-cpu members that may only use nodes labelled pool=a."""
    cluster.observe(make_podgroup("g", min_member).min_resources(**min_resources))
    for i in range(2):
        cluster.observe(make_pod(f"g-{i}").requests(cpu_milli=1000).selector(pool="a")
                        .in_group("g"))
    return cluster


def _placed(cluster: Cluster) -> list[str]:
    return sorted(m.name for d in cluster.plan() if isinstance(d, Placement) for m in d.members)


def test_nodes_the_gang_cannot_use_still_count_toward_min_resources() -> None:
    # a1 has 4 cpu free and is the only node the members may use; b1 has 4 more. Coscheduling
    # sums both (8 >= 6) and lets the gang through to its filters, which place it on a1.
    cluster = Cluster().observe(make_node("a1").capacity(cpu_milli=4000).labels(pool="a"),
                                make_node("b1").capacity(cpu_milli=4000).labels(pool="b"))
    assert _placed(_gang(cluster, cpu=6000)) == ["g-0", "g-1"]


def test_a_cordoned_node_counts_toward_min_resources() -> None:
    cluster = Cluster().observe(make_node("a1").capacity(cpu_milli=4000).labels(pool="a"),
                                make_node("a2").capacity(cpu_milli=4000).labels(pool="a")
                                .unschedulable())
    assert _placed(_gang(cluster, cpu=6000)) == ["g-0", "g-1"]


def test_min_resources_beyond_the_whole_cluster_keep_the_gang_out() -> None:
    cluster = Cluster().observe(make_node("a1").capacity(cpu_milli=4000).labels(pool="a"),
                                make_node("b1").capacity(cpu_milli=4000).labels(pool="b"))
    assert _placed(_gang(cluster, cpu=9000)) == []
    assert cluster.last_reason("default/g") == (
        "gang default/g: minResources do not fit: cpu 9 requested, 8 free on 2 node(s)")


def test_other_pods_take_from_the_free_capacity_and_the_groups_own_do_not() -> None:
    # b1 is full of another pod (4 cpu); a1 holds member g-0 (bound, 1 cpu): free is 3 on a1
    # and 0 on b1, plus g-0's own 1 = 4, short of 5.
    cluster = Cluster().observe(make_node("a1").capacity(cpu_milli=4000).labels(pool="a"),
                                make_node("b1").capacity(cpu_milli=4000).labels(pool="b"),
                                make_pod("other").requests(cpu_milli=4000).on_node("b1"))
    cluster.observe(make_podgroup("g", 2).min_resources(cpu=5000),
                    make_pod("g-0").requests(cpu_milli=1000).in_group("g").on_node("a1"),
                    make_pod("g-1").requests(cpu_milli=1000).selector(pool="a").in_group("g"))
    assert _placed(cluster) == []
    reason, note = cluster.last_reason("default/g").split("; ", 1)
    assert reason == "gang default/g: minResources do not fit: cpu 5 requested, 4 free on 2 node(s)"
    assert note.startswith("1 member(s) already bound")


def test_min_resources_ask_a_free_pod_slot_per_min_member() -> None:
    # Coscheduling adds `pods: minMember` to minResources: 3 slots for 4 cpu of requests
    cluster = Cluster().observe(make_node("a1").capacity(cpu_milli=4000, pods=3).labels(pool="a"),
                                make_pod("other").requests(cpu_milli=100).on_node("a1"))
    cluster.observe(make_podgroup("g", 3).min_resources(cpu=1000))
    for i in range(3):
        cluster.observe(make_pod(f"g-{i}").requests(cpu_milli=100).in_group("g"))
    assert _placed(cluster) == []
    assert cluster.last_reason("default/g") == (
        "gang default/g: minResources do not fit: pods 3 requested, 2 free on 1 node(s)")


def test_a_member_on_an_over_committed_node_gives_back_only_what_is_there() -> None:
    # a1 (4 cpu) holds another scheduler's 4-cpu pod and member g-0 (2 cpu): without g-0 a1
    # has 0 free, b1 has 4, short of 6. Adding g-0's 2 to the whole cluster's total gave 6.
    cluster = Cluster().observe(
        make_node("a1").capacity(cpu_milli=4000), make_node("b1").capacity(cpu_milli=4000),
        make_pod("other").requests(cpu_milli=4000).scheduler("default-scheduler").on_node("a1"),
        make_podgroup("g", 2).min_resources(cpu=6000),
        make_pod("g-0").requests(cpu_milli=2000).in_group("g").on_node("a1"),
        make_pod("g-1").requests(cpu_milli=1000).in_group("g"))
    assert _placed(cluster) == []
    assert cluster.last_reason("default/g").startswith(
        "gang default/g: minResources do not fit: cpu 6 requested, 4 free on 2 node(s)")


def test_a_member_on_a_node_the_cluster_no_longer_has_gives_back_nothing() -> None:
    # g-0 is bound to a deleted node (its pod not yet collected): Coscheduling walks the
    # cluster's nodes, so only a1's 4 are free
    cluster = Cluster().observe(
        make_node("a1").capacity(cpu_milli=4000),
        make_podgroup("g", 2).min_resources(cpu=6000),
        make_pod("g-0").requests(cpu_milli=4000).in_group("g").on_node("gone"),
        make_pod("g-1").requests(cpu_milli=1000).in_group("g"))
    assert _placed(cluster) == []
    assert cluster.last_reason("default/g").startswith(
        "gang default/g: minResources do not fit: cpu 6 requested, 4 free on 1 node(s)")


def _starving_gang_beside_a_later_pod(min_cpu: int, other_cpu: int = 0,
                                      ours_cpu: int = 0) -> Cluster:
    """Gang g (two 1-cpu members, minResources `min_cpu`) on two 4-cpu nodes, n0 carrying
    another scheduler's pod of `other_cpu` and n1 a gangsched pod of `ours_cpu`, waits past
    `starvation_seconds`; then a 0.5-cpu singleton arrives."""
    nodes = [make_node(f"n{i}").capacity(cpu_milli=4000) for i in range(2)]
    cluster = Cluster().observe(*nodes, make_podgroup("g", 2).min_resources(cpu=min_cpu))
    if other_cpu:
        cluster.observe(make_pod("other").requests(cpu_milli=other_cpu)
                        .scheduler("default-scheduler").on_node("n0"))
    if ours_cpu:
        cluster.observe(make_pod("ours").requests(cpu_milli=ours_cpu).on_node("n1"))
    cluster.observe(*(make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g")
                      for i in range(2)))
    cluster.plan()
    cluster.advance(cluster.config.starvation_seconds + 1)
    cluster.observe(make_pod("web").requests(cpu_milli=500))
    return cluster


def test_a_gang_whose_min_resources_the_cluster_never_has_reserves_nothing() -> None:
    # 9 cpu of minResources on 8 cpu of nodes: waiting longer never helps, so after
    # starvation_seconds it holds no capacity and the later pod is placed (it held both nodes
    # and kept every later pod out for good)
    cluster = _starving_gang_beside_a_later_pod(min_cpu=9000)
    assert _placed(cluster) == ["web"]
    assert cluster.last_reason("default/g") == (
        "gang default/g: minResources do not fit: cpu 9 requested, 8 free on 2 node(s); it would "
        "not fit even on nodes emptied of gangsched's pods, so it reserves no capacity")
    assert cluster.state.starving_group is None


def test_other_schedulers_pods_count_against_min_resources_a_hold_could_ever_get() -> None:
    # 6 cpu asked; another scheduler's 3-cpu pod stays, so emptied nodes offer 5: no hold
    cluster = _starving_gang_beside_a_later_pod(min_cpu=6000, other_cpu=3000)
    assert _placed(cluster) == ["web"]
    assert cluster.state.starving_group is None


def test_a_gang_whose_min_resources_fit_once_gangsched_pods_drain_still_holds() -> None:
    # 6 cpu asked of 8, but gangsched's own 4-cpu pod takes n1: the gang can fit once it ends,
    # so after starvation_seconds it holds its members' requests as any starving gang does
    # (not the headroom beyond them: the later pod takes n0's spare half cpu)
    cluster = _starving_gang_beside_a_later_pod(min_cpu=6000, ours_cpu=4000)
    assert _placed(cluster) == ["web"]
    assert cluster.state.starving_group == "default/g"
    assert cluster.state.starving_nodes == ["n0"]
    assert cluster.last_reason("default/g").endswith(
        "waited 301s, reserving capacity on 1 node(s) for this gang")


def test_the_groups_own_pods_of_other_schedulers_count_as_room_a_hold_could_get() -> None:
    # 9 cpu asked of 12; a pod of another scheduler carrying g's label takes n0's 4. Coscheduling
    # counts every pod of the PodGroup as free, so emptied nodes offer 12: the gang may still
    # fit once gangsched's singletons on n1 and n2 end, and it holds n1 and n2 meanwhile
    cluster = Cluster().observe(
        *(make_node(f"n{i}").capacity(cpu_milli=4000) for i in range(3)),
        make_podgroup("g", 2).min_resources(cpu=9000),
        make_pod("x").requests(cpu_milli=4000).scheduler("default-scheduler").in_group("g")
        .on_node("n0"),
        make_pod("o1").requests(cpu_milli=1000).on_node("n1"),
        make_pod("o2").requests(cpu_milli=1000).on_node("n2"),
        *(make_pod(f"g-{i}").requests(cpu_milli=4000).in_group("g") for i in range(2)))
    cluster.plan()
    cluster.advance(cluster.config.starvation_seconds + 1)
    cluster.observe(make_pod("web").requests(cpu_milli=500))
    assert _placed(cluster) == []
    assert (cluster.state.starving_group, cluster.state.starving_nodes) == (
        "default/g", ["n1", "n2"])
