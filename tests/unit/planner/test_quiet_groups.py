"""Groups resting in a wait only their own pods or PodGroup can end are skipped (`Round.rest`).

The skip must never change a decision: every test here compares the live planner, which skips
them, against a replay that rebuilds its indexes after every round (so nothing is ever
skipped), byte for byte; and checks that a change to the group ends the rest at once.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts.decisions import Placement
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import (
    make_claim,
    make_node,
    make_pod,
    make_podgroup,
    make_storage_class,
    make_volume,
)
from tests.unit.planner.harness import Cluster, recorded
from tests.unit.planner.test_properties import replay_through_snapshots


def quiet(cluster: Cluster) -> set[str]:
    assert cluster.state.derived is not None
    return cluster.state.derived.quiet


def test_a_gang_short_of_quorum_rests_until_a_member_arrives() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3),
                                make_pod("g-0").in_group("g"))
    cluster.plan()
    assert cluster.rejections("default/g") == [] and quiet(cluster) == set()  # more may come
    cluster.advance(1).plan()
    assert cluster.last_reason("default/g").startswith("gang default/g: 1 of 3 members exist")
    assert quiet(cluster) == {"default/g"}
    cluster.advance(60)
    assert cluster.plan() == []  # time alone changes nothing: skipped, and nothing to tell
    cluster.observe(make_pod("g-1").in_group("g"))
    cluster.advance(1).plan()
    assert cluster.last_reason("default/g").startswith("gang default/g: 2 of 3 members exist")
    cluster.observe(make_pod("g-2").in_group("g"))
    placed = cluster.plan()
    assert [d.group for d in cluster.placements()] == ["default/g"]
    assert "default/g" not in quiet(cluster) and placed
    assert recorded(cluster) == replay_through_snapshots(cluster.log, cluster.config)


def test_a_podgroup_change_ends_the_rest() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3),
                                *[make_pod(f"g-{i}").in_group("g") for i in range(2)])
    cluster.advance(1).plan()
    assert quiet(cluster) == {"default/g"}
    cluster.observe(make_podgroup("g", 2))  # minMember lowered: quorum now held
    cluster.plan()
    assert [len(d.members) for d in cluster.placements()] == [2]
    assert recorded(cluster) == replay_through_snapshots(cluster.log, cluster.config)


def test_a_missing_podgroup_rests_until_it_is_created() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("g-0").in_group("g"))
    cluster.plan()
    assert "not found" in cluster.last_reason("default/g")
    assert quiet(cluster) == {"default/g"}
    cluster.observe(make_podgroup("g", 1))
    cluster.plan()
    assert [d.group for d in cluster.placements()] == ["default/g"]


def test_a_gang_mounting_claims_never_rests() -> None:
    """Claims and volumes enter its wait (`_waiting_reason`), and they change without any
    change to the group: a claim created later must let the gang through."""
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 2),
                                make_pod("g-0").in_group("g").claims("data"),
                                make_pod("g-1").in_group("g").claims("data"))
    cluster.plan()
    assert "not found" in cluster.last_reason("default/g")
    assert quiet(cluster) == set()
    cluster.observe(make_storage_class("fast", mode="Immediate"),
                    make_volume("pv", storage_class="fast"),
                    make_claim("data", volume="pv", storage_class="fast"))
    cluster.plan()
    assert [d.group for d in cluster.placements()] == ["default/g"]
    assert recorded(cluster) == replay_through_snapshots(cluster.log, cluster.config)


def test_a_gang_that_does_not_fit_does_not_rest() -> None:
    """A whole gang that does not fit waits for capacity, which other groups free: it is
    retried (after its backoff) without any change to itself."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=2000),
                                make_pod("big").requests(cpu_milli=2000).on_node("n0"),
                                make_podgroup("g", 2),
                                *[make_pod(f"g-{i}").in_group("g").requests(cpu_milli=1000)
                                  for i in range(2)])
    cluster.bind(cluster.plan())
    cluster.advance(0.5)
    assert cluster.plan() == []  # backed off (1 s), told already, yet not resting
    assert "default/g" not in quiet(cluster)
    cluster.delete_pod("big")
    cluster.advance(30)
    cluster.plan()
    assert "default/g" in {d.group for d in cluster.placements()}


def behind(cluster: Cluster) -> set[str]:
    assert cluster.state.derived is not None
    return cluster.state.derived.behind_binders


def test_a_gang_behind_busy_binders_rests_until_they_free_up() -> None:
    cluster = Cluster(PlannerConfig(max_placements_in_flight=1)).observe(
        make_node("n0"), *[make_podgroup(g, 2) for g in ("a", "b")],
        *[make_pod(f"{g}-{i}").in_group(g) for g in ("a", "b") for i in range(2)])
    first = cluster.plan()
    assert [d.group for d in cluster.placements()] == ["default/a"]
    assert behind(cluster) == {"default/b"}
    cluster.advance(5)
    assert cluster.plan() == []  # still busy: b is skipped, and would decide nothing anyway
    cluster.bind(first)  # GroupBound: the binders are free again
    cluster.plan()
    assert [d.group for d in cluster.placements()] == ["default/a", "default/b"]
    assert behind(cluster) == set()
    assert recorded(cluster) == replay_through_snapshots(cluster.log, cluster.config)


def test_a_gang_behind_busy_binders_that_starves_holds_capacity() -> None:
    """Starving is a matter of time, not of any change to the gang: it is planned again and
    takes the hold while it still waits for the binders."""
    config = PlannerConfig(max_placements_in_flight=1, starvation_seconds=10)
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=2000), make_node("n1").capacity(cpu_milli=2000),
        make_pod("x").requests(cpu_milli=2000).scheduler("default-scheduler").on_node("n0"),
        make_pod("y").requests(cpu_milli=1500).scheduler("default-scheduler").on_node("n1"),
        make_podgroup("b", 2),
        *[make_pod(f"b-{i}").in_group("b").requests(cpu_milli=1000) for i in range(2)])
    cluster.plan()  # b does not fit: it waits from now on
    cluster.delete_pod("x")
    cluster.observe(make_podgroup("a", 1).created(-5),  # queued before b
                    make_pod("a-0").in_group("a").requests(cpu_milli=1500))
    cluster.advance(1)
    cluster.plan()
    assert [d.group for d in cluster.placements()] == ["default/a"]
    assert behind(cluster) == {"default/b"} and cluster.state.starving_group is None
    cluster.advance(11)
    assert cluster.plan() == []
    assert cluster.state.starving_group == "default/b"  # starving now: it holds its nodes
    assert recorded(cluster) == replay_through_snapshots(cluster.log, config)


def test_a_partly_bound_gang_behind_busy_binders_keeps_holding_capacity() -> None:
    """A stranded gang (members bound below minMember) holds capacity every round while it
    waits, busy binders or not: it never rests."""
    config = PlannerConfig(max_placements_in_flight=1)
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=1000), make_node("n1").capacity(cpu_milli=1000),
        make_node("n2").capacity(cpu_milli=500),
        make_podgroup("r", 1), make_pod("r-0").in_group("r").requests(cpu_milli=1000)
        .on_node("n1"),
        make_podgroup("s", 2), make_pod("s-0").in_group("s").requests(cpu_milli=1000)
        .on_node("n0"),
        make_pod("s-1").in_group("s").requests(cpu_milli=1000),
        make_podgroup("a", 1), make_pod("a-0").in_group("a").requests(cpu_milli=500))
    cluster.plan()  # s does not fit; a is placed: the binders are busy from now on
    assert [d.group for d in cluster.placements()] == ["default/a"]
    for _ in range(2):
        cluster.advance(0.2)
        assert cluster.plan() == []
        assert cluster.state.starving_group == "default/s"
        assert behind(cluster) == set()
    assert recorded(cluster) == replay_through_snapshots(cluster.log, config)


EVENTS = ("member", "member", "member", "podgroup", "min", "delete", "node", "tick", "bind", "bind",
          "invalid", "gated", "priority", "free")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(EVENTS), st.integers(0, 3), st.integers(0, 5)),
                min_size=30, max_size=60),
       st.integers(1, 4), st.sampled_from([0, 1, 2]))
def test_skipping_resting_groups_never_changes_a_decision(steps: list[tuple[str, int, int]],
                                                          rounds_every: int, in_flight: int
                                                          ) -> None:
    """Members arriving one by one, PodGroups created late and changed, members deleted,
    invalid or gated, nodes added, another scheduler's pod leaving, time passing, binds (or
    none, the binders busy): the live planner decides exactly as one that plans every group
    every round."""
    config = PlannerConfig(starvation_seconds=20, max_placements_in_flight=in_flight)
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=3000),
        make_pod("other").requests(cpu_milli=2000).scheduler("default-scheduler").on_node("n0"))
    serial = 0
    outstanding: list[Placement] = []
    for number, (kind, group, value) in enumerate(steps):
        name = f"g{group}"
        if kind == "member":
            serial += 1
            cluster.observe(make_pod(f"{name}-{serial}").in_group(name).requests(cpu_milli=500))
        elif kind == "podgroup":
            cluster.observe(make_podgroup(name, 1 + value))
        elif kind == "min":
            cluster.observe(make_podgroup(name, 1 + value).created(value))
        elif kind == "invalid":
            cluster.observe(make_podgroup(name, 2).invalid("spec.minMember: bad"))
        elif kind == "delete":
            names = sorted(p.name for p in cluster.state.pods.values()
                           if p.name.startswith(f"{name}-"))
            if names:
                cluster.delete_pod(names[value % len(names)])
        elif kind in ("gated", "priority"):
            serial += 1
            pod = make_pod(f"{name}-{serial}").in_group(name).requests(cpu_milli=500)
            cluster.observe(pod.gated() if kind == "gated" else pod.priority(10 * value))
        elif kind == "node":
            cluster.observe(make_node(f"n{value + 1}").capacity(cpu_milli=1000 * value + 500))
        elif kind == "free" and "uid-default-other" in cluster.state.pods:
            cluster.delete_pod("other")  # capacity freed by no group of ours
        elif kind == "tick":
            cluster.advance(value * 7)
        if kind == "bind":  # the binders catch up: every outstanding placement settles
            for placement in outstanding:
                if all(m.pod_uid in cluster.state.pods for m in placement.members):
                    cluster.bind([placement])
                else:
                    cluster.roll_back(placement, reason="pod deleted")
            outstanding = []
        if number % rounds_every == 0:
            decisions = cluster.plan()
            if value % 2:
                cluster.bind(decisions)
            else:  # bound in a later round (the binders stay busy meanwhile)
                outstanding += [d for d in decisions if isinstance(d, Placement)]
    cluster.plan()
    assert recorded(cluster) == replay_through_snapshots(cluster.log, config)
