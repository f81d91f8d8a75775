"""Backpressure: no gang is placed while `max_placements_in_flight` placements await outcomes."""

from __future__ import annotations

from services.contracts.decisions import Placement, Rejection
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster


def _cluster(limit: int) -> Cluster:
    cluster = Cluster(config=PlannerConfig(max_placements_in_flight=limit)).observe(
        make_node("n0").capacity(cpu_milli=16000))
    for g in range(4):
        cluster.observe(make_podgroup(f"g{g}", min_member=2),
                        *[make_pod(f"g{g}-{i}").in_group(f"g{g}").requests(cpu_milli=1000)
                          for i in range(2)])
    return cluster


def test_at_the_limit_the_rest_wait_untold_and_go_once_one_settles() -> None:
    cluster = _cluster(limit=2)
    first = cluster.plan()
    placed = [d for d in first if isinstance(d, Placement)]
    assert [p.group for p in placed] == ["default/g0", "default/g1"]
    assert not [d for d in first if isinstance(d, Rejection)]  # held back, nothing failed
    assert not [d for d in cluster.plan() if isinstance(d, Placement)]  # still full
    cluster.bind([placed[0]])
    assert [d.group for d in cluster.plan() if isinstance(d, Placement)] == ["default/g2"]


def test_zero_means_no_limit() -> None:
    placed = [d for d in _cluster(limit=0).plan() if isinstance(d, Placement)]
    assert [p.group for p in placed] == [f"default/g{g}" for g in range(4)]


def test_a_starving_gang_keeps_its_hold_while_the_binders_are_busy() -> None:
    # n0 runs a gang of ours (6 of 8 CPU); b (2 x 3 CPU) fits nowhere now, starves at once and
    # holds n0 (it fits there emptied); a (1 CPU) then goes to n1 and fills the binders
    cluster = Cluster(config=PlannerConfig(max_placements_in_flight=1,
                                           starvation_seconds=0)).observe(
        make_node("n0").capacity(cpu_milli=8000), make_node("n1").capacity(cpu_milli=2000),
        make_podgroup("d", min_member=1),
        make_pod("d-0").in_group("d").requests(cpu_milli=6000).on_node("n0"),
        make_podgroup("b", min_member=2).created(1),
        *[make_pod(f"b-{i}").in_group("b").requests(cpu_milli=3000).created(1)
          for i in range(2)],
        make_podgroup("a", min_member=1).created(2),
        make_pod("a-0").in_group("a").requests(cpu_milli=1000).created(2))
    placed = {d.group: d.members[0].node for d in cluster.plan() if isinstance(d, Placement)}
    assert placed == {"default/a": "n1"}
    assert (cluster.state.starving_group, cluster.state.starving_nodes) == ("default/b", ["n0"])
    assert not [d for d in cluster.plan() if isinstance(d, Placement)]  # the binders are busy
    assert (cluster.state.starving_group, cluster.state.starving_nodes) == ("default/b", ["n0"])


def _gangs(config: PlannerConfig, sizes: list[int]) -> Cluster:
    """One roomy node and one gang per size (minMember = size, 100m each), created in order."""
    cluster = Cluster(config=config).observe(make_node("n0").capacity(cpu_milli=64000))
    for g, size in enumerate(sizes):
        cluster.observe(make_podgroup(f"g{g}", min_member=size).created(g),
                        *[make_pod(f"g{g}-{i}").in_group(f"g{g}").requests(cpu_milli=100)
                          .created(g) for i in range(size)])
    return cluster


def test_members_in_flight_are_weighed_too_and_the_rest_wait_untold() -> None:
    # 3 + 4 = 7 members reach the limit of 6: g2 waits though only 2 placements are in flight
    cluster = _gangs(PlannerConfig(max_placements_in_flight=10, max_members_in_flight=6),
                     [3, 4, 2])
    first = cluster.plan()
    placed = [d for d in first if isinstance(d, Placement)]
    assert [(p.group, len(p.members)) for p in placed] == [("default/g0", 3), ("default/g1", 4)]
    assert not [d for d in first if isinstance(d, Rejection)]  # held back, nothing failed
    assert not [d for d in cluster.plan() if isinstance(d, Placement)]  # 7 members still out
    cluster.bind([placed[1]])  # 3 members left in flight: room again
    assert [d.group for d in cluster.plan() if isinstance(d, Placement)] == ["default/g2"]


def test_a_gang_larger_than_the_member_limit_is_placed_in_its_turn() -> None:
    # 3 in flight are under the limit of 4: the gang of 8 goes (11 then), the singleton waits
    cluster = _gangs(PlannerConfig(max_members_in_flight=4), [3, 8, 1])
    placed = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert [(p.group, len(p.members)) for p in placed] == [("default/g0", 3), ("default/g1", 8)]
    cluster.bind([*placed])
    assert [d.group for d in cluster.plan() if isinstance(d, Placement)] == ["default/g2"]


def test_expired_placements_no_longer_count_toward_the_member_limit() -> None:
    config = PlannerConfig(max_members_in_flight=3, default_timeout_seconds=10,
                           release_grace_seconds=5)
    cluster = _gangs(config, [3, 2])
    assert [d.group for d in cluster.plan() if isinstance(d, Placement)] == ["default/g0"]
    cluster.advance(16)  # g0's deadline (10 s) and grace (5 s) passed: the planner releases it
    assert "default/g1" in [d.group for d in cluster.plan() if isinstance(d, Placement)]


def test_zero_members_means_no_member_limit() -> None:
    cluster = _gangs(PlannerConfig(max_members_in_flight=0), [30, 30, 30])
    assert len([d for d in cluster.plan() if isinstance(d, Placement)]) == 3
