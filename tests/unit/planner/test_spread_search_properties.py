"""The whole-gang search with topology spread is sound and its pruning loses nothing (hypothesis).

Up to 5 nodes over zones a, b, c (or no zone label; some tainted), other schedulers' pods that
match, and up to 6 members of mixed cpu, all under one zone constraint (maxSkew, minDomains,
nodeTaintsPolicy) and maybe a hostname one. PodTopologySpread judges each pod against the pods
placed before it, so a placement is valid when some order of its members passes every check.
Checked against independent brute force:
- whenever an exhaustive search over nodes, members taken in the planner's search order
  (largest first), finds a valid placement, the planner places the gang (its node-class pruning
  drops no placement);
- every placement the planner makes is valid in some member order, within capacity, and never
  on a node the members do not tolerate; the same input gives the same decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, TypedDict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts import codec
from services.contracts.decisions import Placement
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import (
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    make_node,
    make_pod,
    make_podgroup,
)
from tests.unit.planner.harness import Cluster

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
CONFIG = PlannerConfig(search_budget_steps=10**6)
"""A budget no instance here reaches: the pruning, not the budget, is under test."""

Node = dict[str, Any]
"""name, cpu, zone (or None), tainted, others; `spread_ok` reads "zone" and "name" by key."""


class Constraint(TypedDict):
    skew: int
    min_domains: int
    honor_taints: bool
    by_host: bool


Instance = tuple[list[Node], list[int], Constraint]


@st.composite
def instances(draw: st.DrawFn) -> Instance:
    nodes = [{"name": f"n{i}", "cpu": draw(st.sampled_from([2000, 4000, 6000])),
              "zone": draw(st.sampled_from(["a", "b", "c", "a", "b", None])),
              "tainted": draw(st.sampled_from([False, False, False, True])),
              "others": draw(st.sampled_from([0, 0, 1, 2]))}
             for i in range(draw(st.integers(1, 5)))]
    members = [draw(st.sampled_from([1000, 2000, 3000])) for _ in range(draw(st.integers(1, 6)))]
    constraint: Constraint = {"skew": draw(st.sampled_from([1, 2])),
                              "min_domains": draw(st.integers(1, 3)),
                              "honor_taints": draw(st.booleans()), "by_host": draw(st.booleans())}
    return nodes, members, constraint


def events(nodes: Sequence[Node], members: list[int], constraint: Constraint
           ) -> list[NodeBuilder | PodBuilder | PodGroupBuilder]:
    out: list[NodeBuilder | PodBuilder | PodGroupBuilder] = []
    for node in nodes:
        built = make_node(node["name"]).capacity(cpu_milli=node["cpu"]).label(HOST, node["name"])
        if node["zone"]:
            built = built.label(ZONE, node["zone"])
        out.append(built.taint("t") if node["tainted"] else built)
        out += [make_pod(f"other-{node['name']}-{k}").scheduler("default-scheduler")
                .labelled(app="g").on_node(node["name"]) for k in range(node["others"])]
    out.append(make_podgroup("g", len(members)))
    policy = "Honor" if constraint["honor_taints"] else "Ignore"
    for i, cpu in enumerate(members):
        pod = (make_pod(f"g-{i}").requests(cpu_milli=cpu).in_group("g").labelled(app="g")
               .spread(ZONE, max_skew=constraint["skew"], min_domains=constraint["min_domains"],
                       node_taints_policy=policy))
        out.append(pod.spread(HOST, node_taints_policy=policy) if constraint["by_host"] else pod)
    return out


def keys(constraint: Constraint) -> list[tuple[str, int, int]]:
    """(topology key, maxSkew, minDomains) of each constraint, in spec order."""
    found = [("zone", constraint["skew"], constraint["min_domains"])]
    return [*found, ("name", 1, 1)] if constraint["by_host"] else found


def spread_ok(nodes: Sequence[Node], constraint: Constraint, placed_rows: Sequence[int],
              row: int) -> bool:
    """Whether a member may go to node `row` with members already on `placed_rows`."""
    rules = keys(constraint)
    eligible = [n for n in nodes if all(n[key] for key, _, _ in rules)
                and not (constraint["honor_taints"] and n["tainted"])]
    for key, skew, min_domains in rules:
        if not nodes[row][key]:
            return False
        counts = {n[key]: 0 for n in eligible}
        for n in eligible:
            counts[n[key]] += n["others"] + sum(1 for r in placed_rows if nodes[r] is n)
        minimum = 0 if len(counts) < min_domains else min(counts.values(), default=0)
        if counts.get(nodes[row][key], 0) + 1 - minimum > skew:
            return False
    return True


def fits_in_order(nodes: Sequence[Node], members: list[int], constraint: Constraint,
                  order: tuple[int, ...]) -> bool:
    """Whether members taken in `order` can each go to some node (capacity, taint, spread)."""
    @cache
    def solve(depth: int, free: tuple[int, ...], rows: tuple[int, ...]) -> bool:
        if depth == len(order):
            return True
        cpu = members[order[depth]]
        for row, node in enumerate(nodes):
            if node["tainted"] or free[row] < cpu:
                continue
            if not spread_ok(nodes, constraint, rows, row):
                continue
            left = (*free[:row], free[row] - cpu, *free[row + 1:])
            if solve(depth + 1, left, tuple(sorted((*rows, row)))):
                return True
        return False
    return solve(0, tuple(node["cpu"] for node in nodes), ())


def valid_in_some_order(nodes: Sequence[Node], constraint: Constraint, rows: tuple[int, ...]
                        ) -> bool:
    """Whether the members on `rows` (a row per member) pass spread in some order."""
    @cache
    def solve(left: frozenset[int]) -> bool:
        if not left:
            return True
        placed = [rows[i] for i in range(len(rows)) if i not in left]
        return any(spread_ok(nodes, constraint, placed, rows[i]) and solve(left - {i})
                   for i in sorted(left))
    return solve(frozenset(range(len(rows))))


def search_order(members: list[int]) -> tuple[int, ...]:
    """The planner's search order for these members: largest first, then member order."""
    return tuple(sorted(range(len(members)), key=lambda i: (-members[i], i)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_spread_gangs_are_placed_whenever_the_search_order_admits_a_placement(
        instance: Instance) -> None:
    nodes, members, constraint = instance
    cluster = Cluster(CONFIG).observe(*events(nodes, members, constraint))
    decisions = cluster.plan()
    placements = [d for d in decisions if isinstance(d, Placement)]
    if fits_in_order(nodes, members, constraint, search_order(members)):
        assert placements, "a placement exists in the search's own order"
    if placements:
        row_of = {node["name"]: row for row, node in enumerate(nodes)}
        rows = [0] * len(members)
        for assignment in placements[0].members:
            rows[int(assignment.name.split("-")[1])] = row_of[assignment.node]
        assert len(placements[0].members) == len(members), "never a partial gang"
        for row, node in enumerate(nodes):
            assert not (node["tainted"] and row in rows)
            assert sum(cpu for cpu, r in zip(members, rows, strict=True) if r == row) <= (
                node["cpu"])
        assert valid_in_some_order(nodes, constraint, tuple(rows))
    again = Cluster(CONFIG).observe(*events(nodes, members, constraint)).plan()
    assert [codec.encode(d) for d in again] == [codec.encode(d) for d in decisions]
