"""NodePorts and node affinity matchFields, as kube-scheduler's plugins judge.

Host ports count for every pod bound or reserved on a node, whichever scheduler bound it, and
for the members placed before in the same gang; matchFields select nodes by `metadata.name`.
"""

from __future__ import annotations

import pytest

from services.contracts.decisions import Decision, Placement
from services.contracts.events import HostPort, NodeSelectorRequirement, NodeSelectorTerm
from services.fit import filters
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"


def nodes_of(decisions: list[Decision]) -> dict[str, str]:
    return {m.name: m.node for d in decisions if isinstance(d, Placement) for m in d.members}


@pytest.mark.parametrize(("wanted", "used", "conflicts"), [
    (HostPort(80), HostPort(80), True),
    (HostPort(80), HostPort(81), False),
    (HostPort(80), HostPort(80, "UDP"), False),
    (HostPort(80, host_ip="10.0.0.1"), HostPort(80, host_ip="10.0.0.2"), False),
    (HostPort(80, host_ip="10.0.0.1"), HostPort(80, host_ip="10.0.0.1"), True),
    (HostPort(80), HostPort(80, host_ip="10.0.0.2"), True),
    (HostPort(80, host_ip="10.0.0.1"), HostPort(80), True),
])
def test_host_ports_conflict_on_port_protocol_and_address_where_0000_is_every_address(
        wanted: HostPort, used: HostPort, conflicts: bool) -> None:
    assert filters.ports_conflict(wanted, used) is conflicts
    expected = PORTS_REASON if conflicts else None
    assert filters.node_ports((HostPort(9), wanted), (used,)) == expected


def test_a_host_port_used_by_another_schedulers_pod_rules_its_node_out() -> None:
    cluster = Cluster().observe(
        make_node("n0"), make_node("n1"),
        make_pod("daemon").scheduler("default-scheduler").host_port(8080).on_node("n0"),
        make_pod("web").host_port(8080))
    assert nodes_of(cluster.plan()) == {"web": "n1"}


def test_no_free_port_anywhere_gives_the_node_ports_reason() -> None:
    cluster = Cluster().observe(
        make_node("n0"),
        make_pod("daemon").scheduler("default-scheduler").host_port(8080).on_node("n0"),
        make_pod("web").host_port(8080))
    assert nodes_of(cluster.plan()) == {}
    assert cluster.last_reason("default/pod:web") == f"0/1 nodes are available: 1 {PORTS_REASON}."


def test_members_of_one_gang_with_the_same_host_port_take_different_nodes() -> None:
    cluster = Cluster().observe(
        make_node("n0"), make_node("n1"), make_podgroup("g", 2),
        *[make_pod(f"g-{i}").requests(cpu_milli=100).host_port(9000).in_group("g")
          for i in range(2)])
    assert sorted(nodes_of(cluster.plan()).values()) == ["n0", "n1"]


def test_a_gang_needing_one_host_port_twice_on_one_node_does_not_fit() -> None:
    cluster = Cluster().observe(
        make_node("n0"), make_podgroup("g", 2),
        *[make_pod(f"g-{i}").host_port(9000).in_group("g") for i in range(2)])
    assert nodes_of(cluster.plan()) == {}
    assert cluster.last_reason("default/g") == (
        f"gang default/g: 1 of 2 members fit; 0/1 nodes are available: 1 {PORTS_REASON}.")


def test_the_search_gives_a_port_to_the_member_that_can_only_go_one_way() -> None:
    # g-a fits either node; g-b (the big one) only n0; both use port 9000: g-a must take n1
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=8000), make_node("n1").capacity(cpu_milli=2000),
        make_podgroup("g", 2),
        make_pod("g-a").requests(cpu_milli=1000).host_port(9000).in_group("g"),
        make_pod("g-b").requests(cpu_milli=6000).host_port(9000).in_group("g"))
    assert nodes_of(cluster.plan()) == {"g-a": "n1", "g-b": "n0"}


def test_ports_of_a_reserved_gang_count_for_the_next_gang_in_the_same_round() -> None:
    cluster = Cluster().observe(
        make_node("n0"), make_node("n1"),
        *[item for name in ("a", "b") for item in (
            make_podgroup(name, 1), make_pod(f"{name}-0").host_port(7000).in_group(name))],
        make_pod("c").host_port(7000))
    nodes = nodes_of(cluster.plan())
    assert sorted(nodes.values()) == ["n0", "n1"]
    assert cluster.last_reason("default/pod:c") == f"0/2 nodes are available: 2 {PORTS_REASON}."


def test_a_port_is_free_again_once_its_pod_is_deleted() -> None:
    cluster = Cluster().observe(
        make_node("n0"),
        make_pod("daemon").scheduler("default-scheduler").host_port(8080).on_node("n0"),
        make_pod("web").host_port(8080))
    cluster.plan()
    cluster.delete_pod("daemon")
    cluster.advance(2)
    assert nodes_of(cluster.plan()) == {"web": "n0"}


def test_a_port_on_another_address_or_protocol_does_not_conflict() -> None:
    cluster = Cluster().observe(
        make_node("n0"),
        make_pod("dns").scheduler("default-scheduler").host_port(53, "UDP").on_node("n0"),
        make_pod("tcp").host_port(53),
        make_pod("ip").host_port(8080, host_ip="10.0.0.1"),
        make_pod("ip2").host_port(8080, host_ip="10.0.0.2"))
    assert nodes_of(cluster.plan()) == {"tcp": "n0", "ip": "n0", "ip2": "n0"}


@pytest.mark.parametrize(("operator", "values", "nodes"), [
    ("In", ("n1",), ["n1"]),
    ("NotIn", ("n1",), ["n0", "n2"]),
    ("In", ("n1", "n2"), []),  # a field selector takes exactly one value: the term is invalid
    ("Exists", (), []),
])
def test_match_fields_select_nodes_by_name(operator: str, values: tuple[str, ...],
                                           nodes: list[str]) -> None:
    pod = make_pod("p").match_fields([("metadata.name", operator, values)]).build()
    matched = [name for name in ("n0", "n1", "n2")
               if filters.node_affinity(pod, make_node(name).build()) is None]
    assert matched == nodes


def test_match_fields_and_expressions_of_one_term_are_anded() -> None:
    term = NodeSelectorTerm(
        match_expressions=(NodeSelectorRequirement("zone", "In", ("a",)),),
        match_fields=(NodeSelectorRequirement("metadata.name", "NotIn", ("n0",)),))
    assert filters.term_matches(term, {"zone": "a"}, "n1")
    assert not filters.term_matches(term, {"zone": "a"}, "n0")
    assert not filters.term_matches(term, {"zone": "b"}, "n1")


def test_a_pod_with_match_fields_is_placed_on_the_named_node() -> None:
    cluster = Cluster().observe(
        make_node("n0"), make_node("n1"),
        make_pod("p").match_fields([("metadata.name", "In", ("n1",))]))
    assert nodes_of(cluster.plan()) == {"p": "n1"}
