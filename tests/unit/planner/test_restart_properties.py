"""A restart from a snapshot at any point decides exactly as the planner that never stopped.

The derived indexes (membership, the node index, the groups a round skips: `Derived.quiet`,
`behind_binders`, `asleep`) are never in a snapshot: a restored state rebuilds them and plans
every group once more. That may never change a decision, so the skips must be pure shortcuts.
Here random gangs (members that never fit, are left out as unsupported or invalid, or gated),
backoffs, busy binders and time are planned live and replayed with restores at random log
positions, between events too (found by a fuzzing review: a backed-off gang asleep behind busy
binders told its left-out members alone once a restart planned it).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts.decisions import Placement
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, recorded
from tests.unit.planner.test_properties import replay_through_snapshots

EVENTS = ("member", "member", "big", "unsupported", "invalid", "gated", "podgroup", "delete",
          "single", "node", "free", "tick", "tick", "bind", "rollback")
TICKS = (0.3, 1, 2, 7, 30)


def run(steps: list[tuple[str, int, int]], rounds_every: int, config: PlannerConfig) -> Cluster:
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=3000),
        make_pod("other").requests(cpu_milli=2000).scheduler("default-scheduler").on_node("n0"),
        *[make_podgroup(f"g{group}", 1) for group in range(3)])
    outstanding: list[Placement] = []
    for number, (kind, group, value) in enumerate(steps):
        name = f"g{group}"
        member = make_pod(f"{name}-{number}").in_group(name).requests(cpu_milli=500)
        if kind == "member":
            cluster.observe(member)
        elif kind == "big":  # fits only once "other" leaves
            cluster.observe(member.requests(cpu_milli=2500))
        elif kind == "unsupported":
            cluster.observe(member.unsupported("spec.foo"))
        elif kind == "invalid":
            cluster.observe(member.invalid("bad spec"))
        elif kind == "gated":
            cluster.observe(member.gated())
        elif kind == "podgroup":
            cluster.observe(make_podgroup(name, 1 + value % 3))
        elif kind == "single":
            cluster.observe(make_pod(f"s{number}").requests(cpu_milli=100 * value))
        elif kind == "delete":
            names = sorted(p.name for p in cluster.state.pods.values()
                           if p.name.startswith(f"{name}-"))
            if names:
                cluster.delete_pod(names[value % len(names)])
        elif kind == "node":
            cluster.observe(make_node(f"n{value + 1}").capacity(cpu_milli=1000 * value + 500))
        elif kind == "free" and "uid-default-other" in cluster.state.pods:
            cluster.delete_pod("other")
        elif kind == "tick":
            cluster.advance(TICKS[value % len(TICKS)])
        elif kind in ("bind", "rollback"):  # the binders catch up
            for placement in outstanding:
                if kind == "bind" and all(m.pod_uid in cluster.state.pods
                                          for m in placement.members):
                    cluster.bind([placement])
                else:
                    cluster.roll_back(placement, reason="refused")
            outstanding = []
        if number % rounds_every == 0:
            outstanding += [d for d in cluster.plan() if isinstance(d, Placement)]
    cluster.plan()
    return cluster


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(EVENTS), st.integers(0, 2), st.integers(0, 5)),
                min_size=15, max_size=45),
       st.integers(1, 3), st.sampled_from([0, 1, 2]), st.sampled_from([5.0, 300.0]), st.data())
def test_a_restart_anywhere_decides_as_no_restart(steps: list[tuple[str, int, int]],
                                                  rounds_every: int, in_flight: int,
                                                  starvation: float, data: st.DataObject
                                                  ) -> None:
    config = PlannerConfig(max_placements_in_flight=in_flight, starvation_seconds=starvation)
    cluster = run(steps, rounds_every, config)
    restores = data.draw(st.sets(st.integers(0, len(cluster.log) - 1), min_size=1, max_size=3))
    assert replay_through_snapshots(cluster.log, config, restores) == recorded(cluster)
    assert replay_through_snapshots(cluster.log, config) == recorded(cluster)
