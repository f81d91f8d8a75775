"""What the tests of core revision 37 (gangs found unschedulable retried on a change, flushed
after 5 minutes) share: placements in short, planning until something is placed, attempts
counted over time, replay checks, and two scenes (a starving gang holding both nodes with a
small pod blocked behind it; a preemptor whose victims leave one a second)."""

from __future__ import annotations

from services.contracts.decisions import Decision, Placement, Preemption, Rejection
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import PodBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, recorded, replay
from tests.unit.planner.test_properties import replay_through_snapshots

GIB = 1 << 30


def placed(decisions: list[Decision]) -> list[tuple[str, list[str]]]:
    """Each Placement's group and member names, sorted."""
    return [(d.group, sorted(m.name for m in d.members)) for d in decisions
            if isinstance(d, Placement)]


def plan_until_placed(cluster: Cluster, seconds: int) -> int | None:
    """Plan now, then once a second for `seconds`: the seconds from now at which something
    is first placed, or None."""
    start = cluster.now_ms
    for tick in range(seconds + 1):
        if tick:
            cluster.advance(1)
        if placed(cluster.plan()):
            return (cluster.now_ms - start) // 1000
    return None


def attempts_over(cluster: Cluster, group: str, seconds: int) -> list[int]:
    """Plan once a second for `seconds`; the seconds at which `group` was attempted."""
    seen = []
    for _ in range(seconds):
        cluster.advance(1)
        cluster.plan()
        if cluster.state.groups[group].last_attempt_ms == cluster.now_ms:
            seen.append(cluster.now_ms // 1000)
    return seen


def check_replay(cluster: Cluster) -> None:
    """Decisions equal a replay, and one restoring the state from its snapshot after every
    event and every round."""
    assert replay(cluster.log, cluster.config) == recorded(cluster)
    restores = set(range(len(cluster.log)))
    assert replay_through_snapshots(cluster.log, cluster.config, restores) == recorded(cluster)


def small_behind_a_starving_gang() -> Cluster:
    """Gang `big` (2 x 2 cpu, priority 10) starves from 10 s and holds both nodes (2 cpu each,
    our 1.5-cpu pods there may drain; no preemption, or big would evict them); at 12 s pod
    `small` (0.4 cpu) is found unschedulable because of the hold."""
    cluster = Cluster(PlannerConfig(starvation_seconds=10, preemption=False)).observe(
        *[make_node(f"n{i}").capacity(cpu_milli=2000) for i in range(2)],
        *[make_pod(f"r{i}").requests(cpu_milli=1500).on_node(f"n{i}") for i in range(2)],
        make_podgroup("big", 2),
        *[make_pod(f"big-{i}").requests(cpu_milli=2000).in_group("big").priority(10)
          for i in range(2)])
    return blocked_behind(cluster, "default/big", make_pod("small").requests(cpu_milli=400),
                          after_seconds=2)


def blocked_behind(cluster: Cluster, holder: str, pod: PodBuilder, after_seconds: int = 1
                   ) -> Cluster:
    """Plan, let 10 s pass (`starvation_seconds` 10) so that `holder` starves and holds, then
    `after_seconds` later add `pod`, which is found unschedulable beside the hold."""
    cluster.plan()
    cluster.advance(10)
    cluster.plan()
    assert cluster.state.starving_group == holder
    cluster.advance(after_seconds)
    cluster.observe(pod)
    assert placed(cluster.plan()) == []
    return cluster


def victims_leave(cluster: Cluster, victims: int, group: str = "default/h") -> list[Rejection]:
    """Plan the preemption, then let all victims but the last (`v0`, `v1`, ...) leave one a
    second; the Rejections told to `group` meanwhile."""
    assert any(isinstance(d, Preemption) for d in cluster.plan())
    before = len(cluster.rejections(group))
    for i in range(victims - 1):
        cluster.advance(1)
        cluster.delete_pod(f"v{i}")
        assert placed(cluster.plan()) == []
    return cluster.rejections(group)[before:]
