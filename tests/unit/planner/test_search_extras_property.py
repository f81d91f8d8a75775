"""Core revision 31: once the whole-gang search finds a quorum, the other members that fit are
placed too (one by one, in member order, on what is left; again while a pass places any when
spread or pod affinity may let placed members make room), and only those that fit nowhere are
told they do not fit. Hypothesis, random minMember: on `test_search_properties`' instances
against its independent model (resources, host ports, anti-affinity), and on
`test_spread_search_properties`' instances against the planner's own filters on the state the
round leaves: no member reported as not fitting would fit."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts.decisions import Decision, Placement, Rejection
from services.contracts.events import PodObserved
from services.planner.core import affinity, placement
from services.planner.core.capacity import IntArray
from tests.unit.planner.builders import (
    PodBuilder,
    PodGroupBuilder,
    make_node,
    make_pod,
    make_podgroup,
)
from tests.unit.planner.harness import Cluster
from tests.unit.planner.test_search_properties import (
    CONFIG,
    Member,
    Node,
    Port,
    conflicts,
    demand,
    events,
    initially_placed,
    instances,
    room,
)
from tests.unit.planner.test_spread_search_properties import CONFIG as SPREAD_CONFIG
from tests.unit.planner.test_spread_search_properties import Constraint
from tests.unit.planner.test_spread_search_properties import Instance as SpreadInstance
from tests.unit.planner.test_spread_search_properties import Node as SpreadNode
from tests.unit.planner.test_spread_search_properties import events as spread_events
from tests.unit.planner.test_spread_search_properties import instances as spread_instances

Left = dict[str, tuple[list[int], list[Port], list[tuple[str, bool]]]]
"""Per node: free (cpu, memory, gpu, pods), ports in use and (role, anti) of the pods there."""


def left_on_nodes(nodes: list[Node], members: list[Member], placement: Placement | None
                  ) -> Left:
    """Per node: free (cpu, memory, gpu, pods), ports in use and (role, anti) of the pods
    there, once `placement` (None: nothing) is bound."""
    left = {node["name"]: (list(room(node)[0]), list(room(node)[1]),
                           list(initially_placed(node))) for node in nodes}
    for assignment in placement.members if placement is not None else ():
        member = members[int(assignment.name.split("-")[1])]
        free, ports, placed = left[assignment.node]
        for k, amount in enumerate(demand(member)):
            free[k] -= amount
        if member["port"] is not None:
            ports.append(member["port"])
        placed.append((member["role"], member["anti"]))
    return left


def fits_somewhere(member: Member, left: Left) -> bool:
    return any(all(w <= f for w, f in zip(demand(member), free, strict=True))
               and (member["port"] is None or member["port"] not in ports)
               and not conflicts(member, placed)
               for free, ports, placed in left.values())


def plan_with_min_member(nodes: list[Node], members: list[Member], min_member: int
                         ) -> list[Decision]:
    built = [item for item in events(nodes, members) if not isinstance(item, PodGroupBuilder)]
    cluster = Cluster(CONFIG).observe(make_podgroup("g", min_member), *built)
    return cluster.plan()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.data())
def test_no_member_told_it_does_not_fit_would_fit_where_the_placement_leaves_room(
        instance: tuple[list[Node], list[Member]], data: st.DataObject) -> None:
    nodes, members = instance
    min_member = data.draw(st.integers(1, len(members)))
    decisions = plan_with_min_member(nodes, members, min_member)
    placements = [d for d in decisions if isinstance(d, Placement)]
    if not placements:
        return  # no quorum: the gang waits whole, nothing is placed
    placement, = placements
    assert len(placement.members) >= min_member
    placed = {m.name for m in placement.members}
    told = [d for d in decisions if isinstance(d, Rejection) and d.group == "default/g"]
    unplaced = sorted(f"g-{i}" for i in range(len(members)) if f"g-{i}" not in placed)
    if not unplaced:
        assert told == []
        return
    rejection, = told
    assert sorted(p.name for p in rejection.pods) == unplaced
    assert f"{len(unplaced)} more member(s) do not fit" in rejection.reason, rejection.reason
    left = left_on_nodes(nodes, members, placement)
    for name in unplaced:
        member = members[int(name.split("-")[1])]
        assert not fits_somewhere(member, left), f"{name} is told it does not fit, but it does"


def spread_cluster(nodes: Sequence[SpreadNode], members: list[int], constraint: Constraint,
                   min_member: int) -> Cluster:
    built = [item for item in spread_events(nodes, members, constraint)
             if not isinstance(item, PodGroupBuilder)]
    return Cluster(SPREAD_CONFIG).observe(make_podgroup("g", min_member), *built)


def fits_now(cluster: Cluster, name: str) -> bool:
    """Whether the planner's own filters would place pod `name` alone on the state as it is
    (the round's reservations counted), given back at once."""
    assert cluster.state.derived is not None and cluster.state.derived.index is not None
    index = cluster.state.derived.index
    trial = placement.place(index, [cluster.pod(name)], cluster.config)
    fits = bool(trial.assigned)
    trial.rollback()
    return fits


def placed_and_told(decisions: list[Decision]
                    ) -> tuple[list[tuple[str, str]], list[tuple[list[str], str]]]:
    placed = sorted((m.name, m.node) for d in decisions if isinstance(d, Placement)
                    for m in d.members)
    told = [(sorted(p.name for p in d.pods), d.reason) for d in decisions
            if isinstance(d, Rejection)]
    return placed, told


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spread_instances(), st.data())
def test_with_topology_spread_no_member_told_it_does_not_fit_would_fit_now(
        instance: SpreadInstance, data: st.DataObject) -> None:
    """Members placed may let others pass (spread counts them): the members left are tried
    again until a pass places none, so none of those told would fit on the state left."""
    nodes, members, constraint = instance
    min_member = data.draw(st.integers(1, len(members)))
    cluster = spread_cluster(nodes, members, constraint, min_member)
    placed, told = placed_and_told(cluster.plan())
    if not placed:
        return
    unplaced = sorted(f"g-{i}" for i in range(len(members))
                      if f"g-{i}" not in {name for name, _ in placed})
    assert [pods for pods, _ in told] == ([unplaced] if unplaced else [])
    assert [name for name in unplaced if fits_now(cluster, name)] == []


ZONE_B_C = ({"name": "n0", "cpu": 4000, "zone": "b", "tainted": False, "others": 2},
            {"name": "n1", "cpu": 2000, "zone": "c", "tainted": False, "others": 0},
            {"name": "n2", "cpu": 4000, "zone": "a", "tainted": False, "others": 2},
            {"name": "n3", "cpu": 6000, "zone": None, "tainted": False, "others": 0},
            {"name": "n4", "cpu": 4000, "zone": "b", "tainted": False, "others": 1})


def test_the_search_places_the_extra_member_that_fits_after_its_quorum() -> None:
    """One by one misses quorum 4 (g-0, 2 cpu, first takes room the others need); the search
    places g-1..g-4, its quorum, and left g-0 out, told "1 more member(s) do not fit" though
    n2 (zone a) still had room for it within maxSkew 2. Now it is placed there."""
    constraint: Constraint = {"skew": 2, "min_domains": 1, "honor_taints": True, "by_host": False}
    cluster = spread_cluster(ZONE_B_C, [2000, 1000, 1000, 1000, 1000], constraint, 4)
    assert placed_and_told(cluster.plan()) == (
        [("g-0", "n2"), ("g-1", "n1"), ("g-2", "n2"), ("g-3", "n1"), ("g-4", "n0")], [])


def test_a_member_refused_before_later_members_spread_is_tried_again() -> None:
    """Zone maxSkew 1, minDomains 2, zones a (n0, 2 cpu) and c (n1, 4 cpu, two matching
    pods): g-1 (3 cpu) is refused on n1 (3 against 1 in zone a) before g-5 joins g-0 in a;
    then it fits there (3 against 2). The 2-cpu members fit nowhere."""
    nodes = ({"name": "n0", "cpu": 2000, "zone": "a", "tainted": False, "others": 0},
             {"name": "n1", "cpu": 4000, "zone": "c", "tainted": False, "others": 2})
    constraint: Constraint = {"skew": 1, "min_domains": 2, "honor_taints": False, "by_host": False}
    cluster = spread_cluster(nodes, [1000, 3000, 2000, 2000, 2000, 1000], constraint, 2)
    placed, told = placed_and_told(cluster.plan())
    assert placed == [("g-0", "n0"), ("g-1", "n1"), ("g-5", "n0")]
    assert told == [(["g-2", "g-3", "g-4"], (
        "gang default/g: minMember 2 reached; 3 more member(s) do not fit; 0/2 nodes are "
        "available: 2 Insufficient cpu."))]


HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _chain_cluster(n: int, min_member: int, unplaceable: bool) -> Cluster:
    """Gang g of `n` chained members (g-i, labelled step=i, needs a pod labelled step=i+1 in its
    zone; the last needs none), and, `unplaceable`, g-zzzz, which fits nowhere; on 20 nodes in
    10 zones, room for all. One by one places the last member only; each pass after it can
    place one more."""
    nodes = [make_node(f"n{i:02d}").capacity(cpu_milli=64_000)
             .labels(**{HOST: f"n{i:02d}", ZONE: f"z{i % 10}"}) for i in range(20)]
    items: list[PodGroupBuilder | PodBuilder] = [make_podgroup("g", min_member)]
    for i in range(n):
        pod = make_pod(f"g-{i:02d}").requests(cpu_milli=10).in_group("g").labelled(step=str(i))
        items.append(pod.pod_affinity(ZONE, step=str(i + 1)) if i < n - 1 else pod)
    if unplaceable:
        items.append(make_pod("g-zzzz").requests(cpu_milli=10**6).in_group("g"))
    return Cluster().observe(*nodes, *items)


def _counting_filters(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The members the affinity filter judges, in order (one evaluation over every node each)."""
    judged: list[str] = []
    verdicts = affinity.Gate.verdicts

    def counting(gate: affinity.Gate, pod: PodObserved) -> IntArray:
        judged.append(pod.name)
        return verdicts(gate, pod)

    monkeypatch.setattr(affinity.Gate, "verdicts", counting)
    return judged


def test_passes_try_only_the_members_a_member_placed_may_matter_to(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain of 40: one by one judges all 40 and places g-39; each pass then tries only the
    member the last one placed may matter to (g-38, then g-37, ...): 40 + 39 judgements, not a
    pass over every member left per member placed (820 before)."""
    judged = _counting_filters(monkeypatch)
    [placed] = [d for d in _chain_cluster(40, 40, False).plan() if isinstance(d, Placement)]
    assert len(placed.members) == 40
    assert judged == [f"g-{i:02d}" for i in range(40)] + [f"g-{i:02d}" for i in range(38, -1, -1)]


def test_a_member_nothing_placed_matters_to_is_explained_on_what_is_left(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain of 40 reaches minMember 40; g-zzzz, which nothing placed matters to, is never
    tried in a pass, but told with its own reason (one by one explained g-00 first)."""
    judged = _counting_filters(monkeypatch)
    cluster = _chain_cluster(40, 40, True)
    placed, told = placed_and_told(cluster.plan())
    assert len(placed) == 40
    assert told == [(["g-zzzz"], (
        "gang default/g: minMember 40 reached; 1 more member(s) do not fit; 0/20 nodes are "
        "available: 20 Insufficient cpu."))]
    assert len(judged) == 41 + 39


def test_no_pass_is_made_when_quorum_is_out_of_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """minMember 41 needs g-zzzz, which fits nowhere and nothing placed could help: passes
    could place at most 40, so none is made; the reason counts what one by one placed."""
    judged = _counting_filters(monkeypatch)
    cluster = _chain_cluster(40, 41, True)
    assert [d for d in cluster.plan() if isinstance(d, Placement)] == []
    assert cluster.last_reason("default/g") == (
        "gang default/g: 1 of 41 members fit; 0/20 nodes are available: 20 node(s) didn't "
        "match pod affinity rules.")
    assert len(judged) == 41
