"""Early retries across an upgrade and a node deleted: a snapshot of core revision 32 or
before keeps the early retry it was owed (by time then, by moment now); a Node deleted wakes
a gang whose topology spread it may let pass (PodTopologySpread queues pods on Node Delete).
The two real snapshots under `snapshots/` were written by core 30 (252b5e0) and 32 (b15e423)."""
from __future__ import annotations

from pathlib import Path

import msgspec

from services.contracts.decisions import Placement
from services.contracts.events import NodeDeleted
from services.planner.core import backoff
from services.planner.core.state import PlannerState, decode_state, encode_state
from tests.unit.planner.builders import NodeBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

HOST = "kubernetes.io/hostname"
T = 31_000


def _node(name: str, cpu_milli: int = 4000) -> NodeBuilder:
    return make_node(name).capacity(cpu_milli=cpu_milli).labels(**{HOST: name})


def _backed_off_plain_gang() -> Cluster:
    """Gang g (2 x 3 cpu) on n0, n1 (4 cpu each); `web` (2 cpu) on n0 keeps one member out.
    The gang arrives at T and is found unschedulable then (no timed retry before the flush)."""
    web = (make_pod("web").scheduler("default-scheduler").requests(cpu_milli=2000)
           .labelled(app="web").on_node("n0"))
    gang = [make_podgroup("g", 2)] + [
        make_pod(f"g-{i}").requests(cpu_milli=3000).in_group("g") for i in range(2)]
    cluster = Cluster().observe(_node("n0"), _node("n1"), web)
    cluster.advance(T / 1000)
    cluster.observe(*gang)
    assert [d for d in cluster.plan() if isinstance(d, Placement)] == []
    group = cluster.state.groups["default/g"]
    assert (group.may_retry_early, group.last_attempt_ms, group.failures) == (True, T, 1)
    return cluster


def _as_older_revision(cluster: Cluster, revision: int) -> PlannerState:
    """Re-encode the state as a snapshot of core `revision` (32: `capacity_freed_ms`,
    `woken_ms`, no moments; 30: `capacity_freed_ms` only) would hold it."""
    snap = msgspec.json.decode(encode_state(cluster.state))
    snap.pop("moments")
    snap.pop("capacity_freed_at")
    snap["capacity_freed_ms"] = cluster.state.now_ms  # freed at the state's last event
    if revision < 31:
        snap.pop("counted_changes")
    for group in snap["groups"].values():
        group.pop("last_attempt_at")
        group.pop("woken_at")
        if revision >= 31:
            group["woken_ms"] = 0
    return decode_state(msgspec.json.encode(snap))


def _placed_at_after_restore(revision: int) -> tuple[int | None, int | None, list[int]]:
    cluster = _backed_off_plain_gang()
    cluster.advance(0.5)
    cluster.delete_pod("web")  # at T + 0.5 s, after the last attempt: room for g now
    live_next = backoff.next_wakeup_ms(cluster.state, cluster.config)
    cluster.state = _as_older_revision(cluster, revision)
    restored_next = backoff.next_wakeup_ms(cluster.state, cluster.config)
    placed: list[int] = []
    for _ in range(40):
        cluster.advance(0.5)
        placed += [p.at_ms - T for p in cluster.plan() if isinstance(p, Placement)]
        if placed:
            break
    return live_next, restored_next, placed


def test_capacity_freed_before_a_revision_32_snapshot_still_earns_the_early_retry() -> None:
    """Revision 32 (and 30) give g an early retry at T + 1 s: capacity freed (T + 0.5 s) at or
    after its last attempt (T), `capacity_freed_ms >= last_attempt_ms`. Restored from such a
    snapshot (no moments), the retry it was owed is carried over: placed at T + 1 s as without
    the restore, not at the flush (T + 5 min)."""
    live_next, restored_next, placed = _placed_at_after_restore(32)
    assert live_next == T + 1_000
    assert restored_next == T + 1_000
    assert placed == [1_000]


def test_capacity_freed_before_a_revision_30_snapshot_still_earns_the_early_retry() -> None:
    _, restored_next, placed = _placed_at_after_restore(30)
    assert restored_next == T + 1_000
    assert placed == [1_000]


ZONE = "topology.kubernetes.io/zone"


def _backed_off_spread_gang() -> Cluster:
    """Gang g of one pod (app=web, zone maxSkew 1); zone a: node na, no room, no web pod;
    zone b: node nb, room, one web pod. In b the skew would be 2 - 0 > 1: g fails, backed off
    until T as `_backed_off_plain_gang`."""
    na = make_node("na").capacity(cpu_milli=100).labels(**{HOST: "na", ZONE: "a"})
    nb = make_node("nb").capacity(cpu_milli=4000).labels(**{HOST: "nb", ZONE: "b"})
    web = make_pod("web0").scheduler("default-scheduler").labelled(app="web").on_node("nb")
    gang = [make_podgroup("g", 1), make_pod("g-0").requests(cpu_milli=500).in_group("g")
            .labelled(app="web").spread(ZONE, max_skew=1)]
    cluster = Cluster().observe(na, nb, web)
    cluster.advance(T / 1000)
    cluster.observe(*gang)
    assert [d for d in cluster.plan() if isinstance(d, Placement)] == []
    group = cluster.state.groups["default/g"]
    assert (group.may_retry_early, group.last_attempt_ms, group.failures) == (True, T, 1)
    return cluster


def test_a_node_deleted_wakes_a_gang_whose_spread_it_may_let_pass() -> None:
    """Deleting na (zone a) leaves zone b alone: the global minimum is 1, skew in b 2 - 1 = 1,
    g fits on nb. kube-scheduler's PodTopologySpread registers Node Delete with a queueing
    hint (`isSchedulableAfterNodeChange`: a deleted node carrying the constraints' topology
    keys queues the pod), so g is retried early (1 s after its last attempt), not at the
    flush (T + 5 min)."""
    cluster = _backed_off_spread_gang()
    cluster.advance(0.5)
    cluster.apply(NodeDeleted(at_ms=cluster.now_ms, name="na", uid="uid-node-na"))
    placed: list[tuple[int, str]] = []
    for _ in range(70):
        cluster.advance(0.5)
        placed += [(p.at_ms - T, p.members[0].node) for p in cluster.plan()
                   if isinstance(p, Placement)]
        if placed:
            break
    assert placed == [(1_000, "nb")]


def _placed_after_restoring(snapshot: str) -> list[int]:
    """When (UTC epoch ms) gang g is placed after restoring `snapshots/<snapshot>` (taken at
    31 500 ms) and planning every 0.5 s, for up to 35 s."""
    cluster = Cluster(now_ms=31_500)
    cluster.state = decode_state((Path(__file__).parent / "snapshots" / snapshot).read_bytes())
    cluster.seq = 100
    placed: list[int] = []
    for _ in range(70):
        cluster.advance(0.5)
        placed += [p.at_ms for p in cluster.plan() if isinstance(p, Placement)]
        if placed:
            break
    return placed


def test_a_real_core_30_snapshot_keeps_its_early_retry() -> None:
    """A snapshot written by core 30 (commit 252b5e0, `git show 252b5e0:...`): gang g as
    `_backed_off_plain_gang` (last attempt at T = 31 000), `web` deleted at T + 500 (its
    `capacity_freed_ms` 31 500). Core 30 itself, restored from it and ticked every 0.5 s,
    places g at T + 1 000 = 32 000 (early retry); so does this revision, the time-ordered
    retry carried over as moments (`decode_state`), not at its timed retry (63 000)."""
    assert _placed_after_restoring("core30_freed_after_attempt.json") == [32_000]


def test_a_real_core_32_snapshot_keeps_the_wake_it_recorded() -> None:
    """A snapshot written by core 32 (commit b15e423): gang g (2 members needing a host with an
    app=db pod) backed off at T = 31 000; `db` bound on n1 at T + 500 and planned then, so g
    is woken (`woken_ms` 31 500), its early retry due at T + 1 000. Core 32 itself, restored
    and ticked every 0.5 s, places g at 32 000; so does this revision (`woken_ms` carried
    over as a moment after the last attempt), not at its timed retry (63 000)."""
    assert _placed_after_restoring("core32_woken_before_retry.json") == [32_000]
