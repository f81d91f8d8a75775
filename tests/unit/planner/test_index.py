"""The node index follows Node changes: capacity, labels, taints, new resources, new/gone nodes."""

from __future__ import annotations

from services.contracts.decisions import Decision, Placement
from services.contracts.events import NodeDeleted
from tests.unit.planner.builders import make_node, make_pod
from tests.unit.planner.harness import Cluster


def placed(decisions: list[Decision]) -> dict[str, str]:
    return {d.group: d.members[0].node for d in decisions if isinstance(d, Placement)}


def test_a_node_growing_its_capacity_takes_a_waiting_pod() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000),
                                make_pod("p").requests(cpu_milli=2000))
    cluster.plan()
    cluster.advance(1).observe(make_node("n0").capacity(cpu_milli=4000))
    assert placed(cluster.plan()) == {"default/pod:p": "n0"}


def test_a_node_gaining_a_label_matches_a_selector() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("p").selector(disk="ssd"))
    cluster.plan()
    cluster.advance(1).observe(make_node("n0").labels(disk="ssd"))
    assert placed(cluster.plan()) == {"default/pod:p": "n0"}


def test_a_node_gaining_a_taint_is_avoided() -> None:
    cluster = Cluster().observe(make_node("n0"), make_node("n1"), make_pod("warm"))
    cluster.run()
    cluster.observe(make_node("n0").taint("dedicated", "x"), make_node("n1").taint("d", "y"),
                    make_pod("p"))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        "0/2 nodes are available: 2 node(s) had untolerated taint(s).")


def test_a_node_gaining_an_extended_resource_is_reindexed() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("p").resource("nvidia.com/gpu", 1))
    cluster.plan()
    cluster.advance(1).observe(make_node("n0").resource("nvidia.com/gpu", 1))
    assert placed(cluster.plan()) == {"default/pod:p": "n0"}


def test_new_nodes_are_used_and_deleted_nodes_are_not() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=100), make_pod("p")
                                .requests(cpu_milli=500))
    cluster.plan()
    cluster.apply(NodeDeleted(at_ms=0, name="n0", uid="uid-node-n0"))
    cluster.advance(1).observe(make_node("n1"))
    assert placed(cluster.plan()) == {"default/pod:p": "n1"}


def test_capacity_charged_to_a_node_not_yet_observed_counts_when_it_appears() -> None:
    cluster = Cluster().observe(make_pod("early").scheduler("other").requests(cpu_milli=7000)
                                .on_node("n0"), make_pod("p").requests(cpu_milli=2000))
    cluster.plan()
    cluster.advance(1).observe(make_node("n0").capacity(cpu_milli=8000))
    cluster.plan()
    assert "1 Insufficient cpu" in cluster.last_reason("default/pod:p")
