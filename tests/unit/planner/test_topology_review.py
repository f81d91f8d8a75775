"""Review of core revision 46's TopologyPlacement: what a cluster of many domains costs.

kube-scheduler's `podGroupSchedulingPlacementAlgorithm` runs its pod group algorithm once per
placement, each run over the placement's nodes only (`Snapshot.AssumePlacement`), so a
placement of five nodes costs what five nodes cost. gangsched's whole-gang placement of one
domain reads every row of the node index (the domain is a mask over them), so trying each of
D domains costs D whole-cluster placements: at 5,000 nodes in 1,000 racks a gang of two took
0.3 s to place in an empty cluster (0.001 s without the constraint), a gang no rack can hold
0.4-1.3 s per attempt, a starving gang holding one rack 0.2-0.4 s every round, and a starving
gang no rack can hold even emptied 0.6-0.8 s every round (its hold planned rack by rack).

The fixes change no decision: a domain whose free capacity cannot hold the members a
placement needs is never tried (a necessary condition: `topology_placement.may_fit`), nor a
domain whose best possible score cannot beat a domain already tried (`upper_bounds`); the
lowest domain is always tried, for the status a gang that fits in none is told. The
property tests compare the outcome with trying every domain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts.events import PodObserved
from services.planner.core import derived, placement, reasons, starvation, topology_placement
from services.planner.core.capacity import NodeIndex
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import GIB, NodeBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, recorded, replay

RACK = "example.com/rack"


def racks(count: int, nodes: int, cpu_milli: int = 1000) -> list[NodeBuilder]:
    """`count` racks `r00`, `r01`, ... of `nodes` nodes `<rack>-<i>` of `cpu_milli` each."""
    return [make_node(f"r{r:02d}-{i}").labels(**{RACK: f"r{r:02d}"})
            .capacity(cpu_milli=cpu_milli, memory_bytes=8 * GIB)
            for r in range(count) for i in range(nodes)]


def gang(size: int, cpu_milli: int = 1000) -> list[Any]:
    return [make_podgroup("train", size).topology(RACK),
            *(make_pod(f"w{i}").in_group("train").requests(cpu_milli=cpu_milli)
              for i in range(size))]


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls of `module.name` (one list item, incremented)."""
    calls = [0]
    real: Callable[..., Any] = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_gang_no_rack_can_hold_tries_one_rack_not_every_rack(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 30 racks of two 1-cpu nodes, a gang of three 1-cpu members: no rack has the room, which
    # its free capacity tells without placing; the lowest rack is still tried for the status
    calls = counting(monkeypatch, placement, "place")
    c = Cluster().observe(*racks(30, 2), *gang(3))
    c.advance(2)
    c.plan()
    assert c.placements() == []
    assert c.last_reason("default/train") == (
        "gang default/train: 0/30 placements are available, first placement status: "
        "example.com/rack=r00: 2 of 3 members fit; 0/2 nodes are available: 2 Insufficient "
        "cpu.")
    assert calls[0] == 1


def test_a_small_gang_in_an_empty_cluster_is_placed_after_one_trial(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # every rack would score the same (PodGroupPodsCount 100, the same MostAllocated score):
    # the first one tried reaches the best any rack can score, and equal scores go to the
    # lowest value, so no other rack is tried
    calls = counting(monkeypatch, placement, "place")
    c = Cluster().observe(*racks(30, 2, cpu_milli=2000), *gang(2))
    c.advance(2)
    c.plan()
    assert {m.name: m.node for d in c.placements() for m in d.members} == {
        "w0": "r00-0", "w1": "r00-1"}
    assert calls[0] == 1


def test_the_busiest_rack_that_fits_is_found_without_trying_the_others(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # rack r17 already runs another scheduler's pod: its MostAllocated score is the highest
    # any rack can reach, so it is tried first and nothing else is
    calls = counting(monkeypatch, placement, "place")
    busy = make_pod("busy").requests(cpu_milli=500).scheduler("default-scheduler") \
        .on_node("r17-0")
    c = Cluster().observe(*racks(30, 2, cpu_milli=2000), busy, *gang(2))
    c.advance(2)
    c.plan()
    assert {m.node for d in c.placements() for m in d.members} <= {"r17-0", "r17-1"}
    assert calls[0] == 1


def test_a_starving_gang_no_rack_can_hold_even_emptied_plans_no_hold_rack_by_rack(
        monkeypatch: pytest.MonkeyPatch) -> None:
    c = Cluster().observe(*racks(30, 2), *gang(3))
    c.advance(2)
    c.plan()
    c.advance(c.config.starvation_seconds + 1)
    c.plan()
    assert c.last_reason("default/train").endswith(reasons.NEVER_FITS)
    calls = counting(monkeypatch, starvation, "plan_hold")
    c.advance(0.2)
    c.plan()  # starving: planned again every round
    assert calls[0] == 0


def test_a_starving_gang_holding_a_full_rack_is_retried_without_trying_every_rack(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # gangsched's own pods fill every rack; emptied, any rack holds the gang, so it holds one
    # and is retried every round: racks without the free room are not tried
    busy = [make_pod(f"busy-{r:02d}-{i}").requests(cpu_milli=1000).on_node(f"r{r:02d}-{i}")
            for r in range(30) for i in range(2)]
    c = Cluster().observe(*racks(30, 2), *busy, *gang(2))
    c.advance(2)
    c.plan()
    c.advance(c.config.starvation_seconds + 1)
    c.plan()
    assert c.state.starving_group == "default/train"
    calls = counting(monkeypatch, placement, "place")
    for _ in range(3):
        c.advance(0.2)
        c.plan()
    assert calls[0] <= 3
    assert c.state.starving_group == "default/train"
    c.delete_pod("busy-07-0")
    c.delete_pod("busy-07-1")  # rack r07 drains: the gang goes there, not to its held rack
    c.advance(0.2)
    c.plan()
    assert {m.node for d in c.placements() for m in d.members} == {"r07-0", "r07-1"}
    assert replay(c.log, c.config) == recorded(c)


# --- the outcome is that of trying every domain -------------------------------------------

CONFIG = PlannerConfig()


def exhaustive(index: NodeIndex, members: list[PodObserved], key: str,
               node_used: dict[str, dict[str, int]], need: int
               ) -> tuple[str | None, list[tuple[str, int]], str | None, list[str]]:
    """Every domain tried (core revision 46 as first written): the domain taken and its
    members' rows, the first domain's value when none fits, and every domain that fits."""
    generated = topology_placement.generate(index, key, [])
    fitting: list[tuple[topology_placement.Domain, placement.Trial]] = []
    first = None
    for domain in generated.domains:
        trial = placement.place(index, members, CONFIG, restrict=domain.mask, need=need)
        trial.rollback()
        if len(trial.assigned) >= max(need, 1):
            fitting.append((domain, trial))
        elif first is None:
            first = domain.value
    if not fitting:
        return None, [], first, []
    domain, trial = fitting[topology_placement.choose(index, CONFIG, fitting, 0, node_used)]
    return (domain.value, [(pod.name, row) for pod, row in trial.assigned], None,
            [d.value for d, _ in fitting])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Cluster, int]:
    """A few racks of a few nodes (some cordoned), others' pods on some, a native gang of a
    few members (some selecting a disk label), and how many of them must be placed."""
    cpus = st.sampled_from([500, 1000, 1500, 2000, 3000, 4000])
    items: list[Any] = []
    for r in range(draw(st.integers(1, 6))):
        for i in range(draw(st.integers(1, 3))):
            name = f"r{r}-{i}"
            node = make_node(name).labels(**{RACK: f"r{r}", "disk": draw(
                st.sampled_from(["ssd", "hdd"]))}).capacity(
                    cpu_milli=draw(cpus), memory_bytes=draw(st.sampled_from(
                        [2 * GIB, 4 * GIB, 8 * GIB])))
            items.append(node.unschedulable() if draw(st.integers(0, 5)) == 0 else node)
            for j in range(draw(st.integers(0, 2))):
                items.append(make_pod(f"busy-{name}-{j}").scheduler("default-scheduler")
                             .requests(cpu_milli=draw(st.sampled_from([0, 250, 500, 1000])),
                                       memory_bytes=draw(st.sampled_from([0, GIB])))
                             .on_node(name))
    size = draw(st.integers(1, 5))
    for i in range(size):
        pod = make_pod(f"w{i}").in_group("train")
        if draw(st.booleans()):
            pod = pod.requests(cpu_milli=draw(cpus), memory_bytes=draw(st.sampled_from(
                [GIB // 2, GIB, 2 * GIB])))
        else:
            pod = pod.unrequested()
        items.append(pod.selector(disk="ssd") if draw(st.integers(0, 3)) == 0 else pod)
    items.append(make_podgroup("train", size).topology(RACK))
    return Cluster().observe(*items), draw(st.integers(0, size))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_domain_taken_is_the_one_trying_every_domain_takes(
        instance: tuple[Cluster, int]) -> None:
    cluster, need = instance
    state = cluster.state
    index = derived.ensure(state, CONFIG.scheduler_name).index
    assert index is not None
    members = sorted((pod for pod in state.pods.values() if pod.group_name == "train"),
                     key=lambda pod: pod.name)
    before = index.free.copy()
    value, rows, first, fitting = exhaustive(index, members, RACK, state.node_used, need)
    result = topology_placement.place(index, members, CONFIG, RACK, [], state.node_used,
                                      need=need)
    if result.chosen is None:
        assert value is None
        assert result.first is not None and result.first[0].value == first
    else:
        domain, trial = result.chosen
        assert (domain.value, [(pod.name, row) for pod, row in trial.assigned]) == (value, rows)
        trial.rollback()
    assert (index.free == before).all()
    domains = topology_placement.generate(index, RACK, []).domains
    owner = topology_placement.owners(index, RACK, domains)
    hopeful = topology_placement.may_fit(index, members, max(need, 1), index.free, owner)
    assert all(hopeful[p] for p, domain in enumerate(domains) if domain.value in fitting)
    bounds = topology_placement.upper_bounds(index, CONFIG, members, state.node_used, owner)
    assert bounds == [100 + topology_placement.score(index, CONFIG, domain, members,
                                                     state.node_used) for domain in domains]
