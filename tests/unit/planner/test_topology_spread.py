"""Pod topology spread in the planner, as PodTopologySpread filters.

Every pod bound or reserved on a node counts, whichever scheduler bound it, and so do the
members of the same gang placed before: a gang spreads over its own members.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from services.contracts.decisions import Decision, Placement
from services.fit import reasons
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import NodeBuilder, PodBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SKEW = reasons.SPREAD_CONSTRAINTS_MISMATCH
MISSING = reasons.SPREAD_MISSING_LABEL


def node(name: str, zone: str | None, cpu: int = 8000) -> NodeBuilder:
    built = make_node(name).capacity(cpu_milli=cpu).labels(**{HOST: name})
    return built.labels(**{ZONE: zone}) if zone else built


def member(i: int, cpu: int = 1000, group: str = "g", **spread: Any) -> PodBuilder:
    pod = make_pod(f"{group}-{i}").requests(cpu_milli=cpu).in_group(group).labelled(app=group)
    return pod.spread(ZONE, **spread)


def placed(cluster: Cluster, decisions: list[Decision]) -> dict[str, str]:
    return {m.name: m.node for d in decisions if isinstance(d, Placement) for m in d.members}


def per_zone(nodes_of: dict[str, str], zone_of: dict[str, str]) -> dict[str, int]:
    return dict(Counter(zone_of[node] for node in nodes_of.values()))


def test_a_gang_of_four_over_two_zones_with_max_skew_one_goes_two_and_two() -> None:
    # zone a's big node would take three members by least-allocated score alone
    nodes = [node("a1", "a", cpu=32000), node("b1", "b", cpu=4000), node("b2", "b", cpu=4000)]
    cluster = Cluster().observe(*nodes, make_podgroup("g", 4), *(member(i) for i in range(4)))
    got = placed(cluster, cluster.plan())
    assert per_zone(got, {"a1": "a", "b1": "b", "b2": "b"}) == {"a": 2, "b": 2}


def test_without_the_constraint_the_same_gang_packs_the_big_zone() -> None:
    nodes = [node("a1", "a", cpu=32000), node("b1", "b", cpu=4000), node("b2", "b", cpu=4000)]
    plain = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g") for i in range(4)]
    cluster = Cluster().observe(*nodes, make_podgroup("g", 4), *plain)
    got = placed(cluster, cluster.plan())
    assert per_zone(got, {"a1": "a", "b1": "b", "b2": "b"}) != {"a": 2, "b": 2}


def test_a_gang_that_cannot_spread_is_refused_with_per_reason_node_counts() -> None:
    # zone b holds one member only; 2 + 2 is needed
    nodes = [node("a1", "a"), node("a2", "a"), node("a3", "a"), node("b1", "b", cpu=1000)]
    cluster = Cluster().observe(*nodes, make_podgroup("g", 4), *(member(i) for i in range(4)))
    assert placed(cluster, cluster.plan()) == {}
    assert cluster.last_reason("default/g") == (
        "gang default/g: 3 of 4 members fit; 0/4 nodes are available: "
        f"1 Insufficient cpu, 3 {SKEW}.")


def test_a_node_without_the_topology_key_is_refused_as_missing_the_label() -> None:
    # one zone only: every member may go to a1 (the bare node is no domain), until it is full
    nodes = [node("a1", "a", cpu=2000), node("bare", None)]
    cluster = Cluster().observe(*nodes, make_podgroup("g", 3), *(member(i) for i in range(3)))
    assert placed(cluster, cluster.plan()) == {}
    assert cluster.last_reason("default/g") == (
        "gang default/g: 2 of 3 members fit; 0/2 nodes are available: "
        f"1 Insufficient cpu, 1 {MISSING}.")


def test_existing_pods_of_other_schedulers_count() -> None:
    web = [make_pod(f"web-{i}").scheduler("default-scheduler").labelled(app="g").on_node("a1")
           for i in range(2)]
    nodes = [node("a1", "a"), node("b1", "b")]
    cluster = Cluster().observe(*nodes, *web, make_podgroup("g", 2),
                                *(member(i) for i in range(2)))
    assert set(placed(cluster, cluster.plan()).values()) == {"b1"}


def test_pods_of_another_namespace_or_terminating_do_not_count() -> None:
    other_ns = (make_pod("x", namespace="other").scheduler("default-scheduler")
                .labelled(app="g").on_node("a1"))
    leaving = (make_pod("y").scheduler("default-scheduler").labelled(app="g").on_node("a1")
               .deleting())
    nodes = [node("a1", "a", cpu=32000), node("b1", "b", cpu=2000)]
    cluster = Cluster().observe(*nodes, other_ns, leaving, make_podgroup("g", 2),
                                *(member(i) for i in range(2)))
    assert sorted(placed(cluster, cluster.plan()).values()) == ["a1", "b1"]


def test_min_domains_caps_each_zone_while_too_few_zones_exist() -> None:
    # minDomains 3 with two zones: the global minimum is 0, so each zone takes one member
    two = [node("a1", "a"), node("b1", "b")]
    cluster = Cluster().observe(*two, make_podgroup("g", 3),
                                *(member(i, min_domains=3) for i in range(3)))
    assert placed(cluster, cluster.plan()) == {}
    assert cluster.last_reason("default/g") == (
        f"gang default/g: 2 of 3 members fit; 0/2 nodes are available: 2 {SKEW}.")
    three = Cluster().observe(*two, node("c1", "c"), make_podgroup("g", 3),
                              *(member(i, min_domains=3) for i in range(3)))
    assert sorted(placed(three, three.plan()).values()) == ["a1", "b1", "c1"]


def test_node_taints_policy_honor_leaves_out_a_zone_of_tainted_nodes() -> None:
    tainted = node("c1", "c").taint("dedicated", "x")
    nodes = [node("a1", "a"), node("b1", "b"), tainted]
    ignore = Cluster().observe(*nodes, make_podgroup("g", 4), *(member(i) for i in range(4)))
    assert placed(ignore, ignore.plan()) == {}  # zone c, empty for good, keeps the minimum 0
    honor = Cluster().observe(*nodes, make_podgroup("g", 4),
                              *(member(i, node_taints_policy="Honor") for i in range(4)))
    got = placed(honor, honor.plan())
    assert per_zone(got, {"a1": "a", "b1": "b"}) == {"a": 2, "b": 2}


def test_node_affinity_policy_ignore_counts_zones_the_pod_may_not_use() -> None:
    nodes = [node("a1", "a").labels(pool="x"), node("b1", "b").labels(pool="x"),
             node("c1", "c")]
    honor = Cluster().observe(*nodes, make_podgroup("g", 4),
                              *(member(i).selector(pool="x") for i in range(4)))
    assert len(placed(honor, honor.plan())) == 4
    ignore = Cluster().observe(*nodes, make_podgroup("g", 4), *(
        member(i, node_affinity_policy="Ignore").selector(pool="x") for i in range(4)))
    assert placed(ignore, ignore.plan()) == {}


def test_match_label_keys_spread_each_job_on_its_own() -> None:
    # two jobs' pods share app=g; with matchLabelKeys [job] only a member's own job counts
    old = [make_pod(f"old-{i}").scheduler("default-scheduler").labelled(app="g", job="old")
           .on_node("a1") for i in range(3)]
    nodes = [node("a1", "a"), node("b1", "b")]
    members = [member(i).labelled(job="new") for i in range(2)]
    keyed = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g")
             .labelled(app="g", job="new").spread(ZONE, match_label_keys=("job",))
             for i in range(2)]
    cluster = Cluster().observe(*nodes, *old, make_podgroup("g", 2), *keyed)
    assert sorted(placed(cluster, cluster.plan()).values()) == ["a1", "b1"]
    unkeyed = Cluster().observe(*nodes, *old, make_podgroup("g", 2), *members)
    # zone a's old pods count (3 against 0): both members go to zone b
    assert sorted(placed(unkeyed, unkeyed.plan()).values()) == ["b1", "b1"]


def test_mixed_members_that_one_by_one_cannot_spread_are_placed_by_the_search() -> None:
    # name order takes 2 then 6 (forced into b) then 2 (a, least allocated): the last 6 finds
    # zone b full; the search places each zone one 6 and one 2
    nodes = [node("a1", "a"), node("b1", "b")]
    sizes = [2000, 6000, 2000, 6000]
    cluster = Cluster().observe(*nodes, make_podgroup("g", 4),
                                *(member(i, cpu=cpu) for i, cpu in enumerate(sizes)))
    got = placed(cluster, cluster.plan())
    assert len(got) == 4 and per_zone(got, {"a1": "a", "b1": "b"}) == {"a": 2, "b": 2}
    assert {got["g-1"], got["g-3"]} == {"a1", "b1"}
    greedy = Cluster(PlannerConfig(search_budget_steps=0)).observe(
        *nodes, make_podgroup("g", 4), *(member(i, cpu=cpu) for i, cpu in enumerate(sizes)))
    assert placed(greedy, greedy.plan()) == {}


def test_a_host_spread_gang_takes_distinct_hosts_and_replays_the_same() -> None:
    nodes = [node(f"n{i}", "a") for i in range(4)]
    gang = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g").labelled(app="g")
            .spread(HOST) for i in range(4)]
    cluster = Cluster().observe(*nodes, make_podgroup("g", 4), *gang)
    got = placed(cluster, cluster.plan())
    assert sorted(got.values()) == ["n0", "n1", "n2", "n3"]


def test_schedule_anyway_constraints_never_filter() -> None:
    nodes = [node("a1", "a")]
    soft = [member(i, when="ScheduleAnyway") for i in range(3)]
    cluster = Cluster().observe(*nodes, make_podgroup("g", 3), *soft)
    assert len(placed(cluster, cluster.plan())) == 3

