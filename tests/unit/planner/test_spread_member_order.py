"""A spread gang that only one member order places (review finding): the search's second pass
places the members without constraints first, so those with constraints count them."""

from __future__ import annotations

from services.contracts.decisions import Placement
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def test_an_unconstrained_member_goes_first_when_largest_first_finds_nothing() -> None:
    cluster = Cluster(PlannerConfig()).observe(
        make_node("a1").capacity(cpu_milli=1000).labels(**{HOST: "a1", ZONE: "a"}),
        make_node("b1").capacity(cpu_milli=2000).labels(**{HOST: "b1", ZONE: "b"}),
        make_pod("other").scheduler("default-scheduler").labelled(app="g").on_node("b1"),
        make_podgroup("g", 2),
        # g-0 has no constraint of its own but matches g-1's selector
        make_pod("g-0").requests(cpu_milli=1000).in_group("g").labelled(app="g"),
        make_pod("g-1").requests(cpu_milli=2000).in_group("g").labelled(app="g").spread(ZONE),
    )
    placed = {m.name: m.node for d in cluster.plan() if isinstance(d, Placement)
              for m in d.members}
    # g-0 on a1 (zones a=1, b=1), then g-1 on b1: skew 1 + 1 - 1 = 1 <= maxSkew 1
    assert placed == {"g-0": "a1", "g-1": "b1"}
