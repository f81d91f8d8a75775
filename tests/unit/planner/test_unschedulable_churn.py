"""Core revision 37, found by a second review (session 34): a holder or a nominated gang is
not told anew as counts change around it, and a PodGroup seen again unchanged wakes nothing."""

from __future__ import annotations

from typing import Any

import msgspec

from services.planner.core.config import PlannerConfig
from services.watcher import kueue
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster
from tests.unit.planner.unschedulable import (
    GIB,
    blocked_behind,
    check_replay,
    placed,
    victims_leave,
)


def test_a_nominated_gang_of_many_members_is_told_anew_as_each_victim_leaves() -> None:
    """As `test_a_nominated_gang_is_not_told_anew_as_each_victim_leaves`, but the gang has
    12 members of 1000m, each victim on its own node: each victim gone lets one more member
    fit, so 'k of 12 members fit' and the node counts ('12-k Insufficient cpu') tick on with
    the victims while it waits the same way. `reasons.gist` strips only the victims' count:
    one Rejection per victim gone."""
    n = 12
    cluster = Cluster().observe(
        *[make_node(f"n{i:02d}").capacity(cpu_milli=1000) for i in range(n)],
        *[make_pod(f"v{i}").requests(cpu_milli=1000).on_node(f"n{i:02d}") for i in range(n)],
        make_podgroup("h", n),
        *[make_pod(f"h-{i}").requests(cpu_milli=1000).in_group("h").priority(10)
          for i in range(n)])
    told = victims_leave(cluster, n)
    check_replay(cluster)
    assert len(told) <= 3, [r.reason for r in told]  # before the fix: 11 (core 36: 3)


def _kueue_pod(name: str, created_s: int) -> dict[str, Any]:
    """The pod object (as the watcher reads it) of a member of Kueue group `q` of 2."""
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-default-{name}",
                         "creationTimestamp": f"1970-01-01T00:00:{created_s:02d}Z",
                         "labels": {kueue.GROUP_LABEL: "q"},
                         "annotations": {kueue.TOTAL_COUNT_ANNOTATION: "2"}},
            "spec": {}}


def test_a_kueue_group_seen_again_through_another_member_does_not_wake_its_gang() -> None:
    """Kueue's synthetic PodGroupObserved (`watcher.kueue.podgroup_event`) is made from each
    member pod's event, its `created_at_ms` that pod's creationTimestamp, and published once per
    (group, count, minute of creation) per JetStream duplicate window (2 min). Members created
    in different seconds make it differ from the stored one in `created_at_ms` alone, nothing
    about the group changed: `apply._changed` takes that for a spec change and wakes the gang,
    and, the gang being `starving_group`, frees capacity for every gang. Here `s`, unrelated, is
    found unschedulable beside the starving Kueue gang `q` (stored: q-1's synthetic group); 2
    minutes on, q-0 is observed again (any status write to it, e.g. our own PodScheduled
    condition; its slim event unchanged, so no wake by the pod): `s` is retried with nothing
    changed that it could fit after."""
    config = PlannerConfig(starvation_seconds=10, preemption=False)
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=2000),
        make_pod("r").requests(cpu_milli=1500).on_node("n0"))  # ours: it may drain
    group0 = kueue.podgroup_event(_kueue_pod("q-0", 0), 0)
    group1 = kueue.podgroup_event(_kueue_pod("q-1", 1), 0)
    assert group0 is not None and group1 is not None
    assert group0.created_at_ms != group1.created_at_ms
    cluster.observe(group0, make_pod("q-0").requests(cpu_milli=1000).in_group("q").created(0))
    cluster.observe(group1, make_pod("q-1").requests(cpu_milli=1000).in_group("q").created(1000))
    blocked_behind(cluster, "default/q", make_pod("s").requests(cpu_milli=1000))
    for _ in range(20):
        cluster.advance(1)
        cluster.plan()
    s = cluster.state.groups["default/pod:s"]
    before = s.last_attempt_ms
    cluster.advance(120)
    cluster.plan()
    cluster.advance(1)
    # q-0 observed again: the group it yields is q-0's, the stored one q-1's
    cluster.observe(msgspec.structs.replace(group0, at_ms=cluster.now_ms))
    cluster.apply(msgspec.structs.replace(cluster.pod("q-0"), at_ms=cluster.now_ms,
                                          resource_version="9"))
    for _ in range(12):
        cluster.advance(1)
        cluster.plan()
    check_replay(cluster)
    assert s.last_attempt_ms == before  # before the fix: s retried on q's PodGroup "changing"


def test_the_holder_is_not_told_anew_every_round_others_come_and_go_elsewhere() -> None:
    """`h` (3000m, 3Gi) starves and holds n0 (our `r` there may drain). On n1..n4, which it
    never fits (another scheduler's 2000m pod each), another scheduler's 2Gi pods come and go,
    one a second: the holder's quiet retry (every round) fails each time with other node
    counts ('1 Insufficient memory, 5 Insufficient cpu' / '5 Insufficient cpu'), and
    `reasons.gist` keeps those: a Rejection (and PodGroup status) every round, for activity on
    nodes it does not hold, until it is placed. Core 36 told it at its timed retries (1, 2, 4
    ... 60 s)."""
    config = PlannerConfig(starvation_seconds=10, preemption=False)
    cluster = Cluster(config).observe(
        *[make_node(f"n{i}").capacity(cpu_milli=4000, memory_bytes=4 * GIB) for i in range(5)],
        make_pod("r").requests(cpu_milli=2000).on_node("n0"),
        *[make_pod(f"c{i}").requests(cpu_milli=2000).on_node(f"n{i}")
          .scheduler("default-scheduler") for i in range(1, 5)],
        make_podgroup("h", 1),
        make_pod("h-0").requests(cpu_milli=3000, memory_bytes=3 * GIB).in_group("h"))
    cluster.plan()
    cluster.advance(10)
    cluster.plan()
    assert cluster.state.starving_group == "default/h"
    told_before = len(cluster.rejections("default/h"))
    for second in range(30):
        cluster.advance(1)
        if second % 2 == 0:
            cluster.observe(make_pod(f"m{second}").requests(memory_bytes=2 * GIB)
                            .on_node(f"n{1 + second % 4}").scheduler("default-scheduler"))
        else:
            cluster.delete_pod(f"m{second - 1}")
        assert placed(cluster.plan()) == []
    told = cluster.rejections("default/h")[told_before:]
    assert cluster.state.starving_group == "default/h"
    check_replay(cluster)
    assert len(told) <= 6, [r.reason for r in told[:4]]  # before the fix: 30 (core 36: 4)
