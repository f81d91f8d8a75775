"""The planner's CPU shortcuts equal what they replaced, at every use, over random clusters
with preemption (hypothesis): cached shape scores caught up row by row or by NumPy equal a
full pass bit for bit; the quorum counts `_queue` took equal a count when `_plan_group` uses
them; `preemption.lowest` from `Derived`'s per-priority counts equals a scan of every charged
bound pod, as pods bind, change priority, scheduler, phase or group, leave, and as the state
is restored from a snapshot. None of them may change a decision (`core.revision`)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts.decisions import Placement, Preemption
from services.contracts.events import (
    GroupBound,
    GroupRolledBack,
    MemberBound,
    NodeDeleted,
    PodDeleted,
    PodGroupDeleted,
)
from services.planner.core import attempt, capacity, placement, pods, preemption, quorum
from services.planner.core.config import PlannerConfig
from services.planner.core.state import GroupState, PlannerState, decode_state, encode_state
from tests.unit.planner.builders import GIB, make_node, make_pod, make_podgroup, pod_uid
from tests.unit.planner.harness import Cluster

GPU = "example.com/gpu"


def _scan(state: PlannerState, config: PlannerConfig) -> int:
    """`preemption.lowest` as it was: a look at every charged pod."""
    return min((pod.priority for uid in state.charges
                if (pod := state.pods.get(uid)) is not None and pod.node_name is not None
                and (config.preempt_other_schedulers
                     or pods.is_ours(pod, config.scheduler_name))), default=2**31)


def _check_priorities(state: PlannerState, config: PlannerConfig) -> None:
    """`Derived`'s per-priority counts equal a recount, and `lowest` a scan, for either
    setting of `preempt_other_schedulers`."""
    current = state.derived
    if current is None:
        return
    everyone: Counter[int] = Counter()
    ours: Counter[int] = Counter()
    for uid in state.charges:
        pod = state.pods.get(uid)
        if pod is not None and pod.node_name is not None:
            everyone[pod.priority] += 1
            ours[pod.priority] += pods.is_ours(pod, current.scheduler_name)
    assert dict(current.priorities) == dict(everyone)
    assert dict(current.our_priorities) == {p: n for p, n in ours.items() if n}
    for other in (False, True):
        setting = msgspec.structs.replace(config, preempt_other_schedulers=other)
        assert preemption.lowest(current, setting) == _scan(state, setting)


@contextmanager
def _checked_shortcuts(uses: Counter[str]) -> Iterator[None]:
    """Patch the planner so each shortcut is checked against its former form where used."""
    cached, plan_group, preempt = (placement._Shape._cached, attempt.Round._plan_group,
                                   attempt.Round._preempt)

    def checked_cached(shape: placement._Shape, index: capacity.NodeIndex,
                       key: tuple[object, ...]) -> Any:
        entry = index.score_cache.get((*key, shape.config.scoring, shape.config.score_resources))
        changed = 0 if entry is None else len(index.changes) - entry.position
        scores = cached(shape, index, key)
        if 0 < changed <= placement.ROW_BY_ROW_ROWS and changed * 4 <= len(index):
            uses["row by row"] += 1
        assert scores.tobytes() == shape._compute(index, None).tobytes()
        return scores

    def checked_plan_group(rnd: attempt.Round, key: str, group: GroupState,
                           podgroup: Any, pending: Any) -> None:
        queued = rnd.queued_counts.get(key)
        if queued is not None:
            uses["queued counts"] += 1
            assert podgroup is not None
            fresh = quorum.count(rnd.derived, key, GroupState(has_run=group.has_run),
                                 podgroup.min_member)
            assert queued == fresh
        plan_group(rnd, key, group, podgroup, pending)

    def checked_preempt(rnd: attempt.Round, *args: Any) -> tuple[str, bool]:
        _check_priorities(rnd.state, rnd.config)
        uses["lowest"] += 1
        return preempt(rnd, *args)

    with mock.patch.object(placement._Shape, "_cached", checked_cached), \
            mock.patch.object(attempt.Round, "_plan_group", checked_plan_group), \
            mock.patch.object(attempt.Round, "_preempt", checked_preempt):
        yield


def _bind(cluster: Cluster, decision: Placement, members: int | None = None) -> None:
    """Bind the first `members` (all) of a Placement whose pods still exist; GroupBound when
    all were."""
    for member in decision.members[:members]:
        pod = cluster.state.pods.get(member.pod_uid)
        if pod is None:
            continue
        cluster.apply(MemberBound(at_ms=cluster.now_ms, decision_id=decision.id,
                                  group=decision.group, pod_uid=member.pod_uid, node=member.node))
        cluster.apply(msgspec.structs.replace(pod, node_name=member.node, phase="Running",
                                              at_ms=cluster.now_ms))
    if members is None:
        cluster.apply(GroupBound(at_ms=cluster.now_ms, decision_id=decision.id,
                                 group=decision.group))
    else:
        cluster.apply(GroupRolledBack(at_ms=cluster.now_ms, decision_id=decision.id,
                                      group=decision.group, reason="bind refused"))


def _run(rng: random.Random) -> None:
    """One random walk over a cluster (read top to bottom), checking the priority counts
    after every step."""
    config = PlannerConfig(
        scoring=rng.choice(["least-allocated", "most-allocated"]),
        preempt_other_schedulers=rng.random() < 0.5,
        score_resources=rng.choice([("cpu", "memory"), ("cpu", "memory", GPU), (GPU,), ()]),
        max_placements_in_flight=rng.choice([0, 1, 512]),
        starvation_seconds=rng.choice([5.0, 300.0]),
        default_timeout_seconds=rng.choice([5, 60]),
        release_grace_seconds=rng.choice([1.0, 66.0]),
        nomination_seconds=rng.choice([3.0, 120.0]))
    cluster = Cluster(config)
    names: list[str] = []
    generations: dict[str, int] = {}  # PodGroups deleted, by name: the next uid
    count = 0

    def node(name: str) -> Any:
        built = make_node(name).capacity(cpu_milli=rng.choice([0, 1000, 3000, 7919]),
                                         memory_bytes=rng.choice([0, 1, 3, 8]) * GIB,
                                         pods=rng.choice([2, 110]))
        return built.resource(GPU, rng.choice([0, 1, 8])) if rng.random() < 0.5 else built

    def pod(name: str, group: str | None) -> Any:
        built = make_pod(name).requests(cpu_milli=rng.choice([0, 100, 900, 3000]),
                                        memory_bytes=rng.choice([0, GIB // 4, GIB]))
        if rng.random() < 0.3:
            built = built.resource(GPU, rng.choice([1, 2]))
        built = built.priority(rng.choice([-5, 0, 10, 1000]))
        return built if group is None else built.in_group(group)

    nodes = [f"n{i:02d}" for i in range(rng.choice([rng.randint(1, 6), rng.randint(20, 48)]))]
    cluster.observe(*(node(name) for name in nodes))
    for _ in range(rng.randint(10, 40)):
        action = rng.random()
        count += 1
        if action < 0.25:  # a gang, a singleton, or another scheduler's pod bound anywhere
            kind = rng.random()
            if kind < 0.6:
                size = rng.choice([rng.randint(1, 4), rng.randint(5, 20)])
                cluster.observe(make_podgroup(f"g{count}", rng.randint(1, size)))
                cluster.observe(*(pod(f"g{count}-{i}", f"g{count}") for i in range(size)))
                names.extend(f"g{count}-{i}" for i in range(size))
            elif kind < 0.8 or not nodes:
                cluster.observe(pod(f"s{count}", None))
                names.append(f"s{count}")
            else:
                cluster.observe(pod(f"o{count}", None).scheduler("other")
                                .on_node(rng.choice(nodes)))
                names.append(f"o{count}")
        elif action < 0.55:  # plan; a binder that binds, refuses, or binds some
            for decision in cluster.plan():
                if isinstance(decision, Placement):
                    fate = rng.random()
                    _bind(cluster, decision, None if fate < 0.7 else
                          rng.randint(0, len(decision.members)))
                elif isinstance(decision, Preemption):
                    for victim in decision.victims:
                        if rng.random() < 0.8:
                            cluster.apply(PodDeleted(at_ms=cluster.now_ms, uid=victim.uid,
                                                     namespace=victim.namespace,
                                                     name=victim.name))
        elif action < 0.72 and names:  # a pod changes, same uid
            old = cluster.state.pods.get(pod_uid(name := rng.choice(names)))
            if old is None:
                continue
            changes: list[dict[str, Any]] = [
                {"priority": rng.choice([-5, 0, 10, 1000])},
                {"scheduler_name": rng.choice(["gangsched", "other"])},
                {"phase": rng.choice(["Succeeded", "Failed", "Running"])},
                {"is_deleting": True},
                {"node_name": rng.choice(nodes) if nodes else None, "phase": "Running"},
                {"group_name": rng.choice([None, f"g{rng.randint(1, count)}"])},
            ]
            cluster.apply(msgspec.structs.replace(old, at_ms=cluster.now_ms,
                                                  **rng.choice(changes)))
            if rng.random() < 0.3:
                cluster.delete_pod(name)
        elif action < 0.8:  # nodes come, go, change
            if rng.random() < 0.5 and nodes:
                gone = nodes.pop(rng.randrange(len(nodes)))
                cluster.apply(NodeDeleted(at_ms=cluster.now_ms, name=gone, uid=f"uid-node-{gone}"))
            else:
                name = rng.choice(nodes) if nodes and rng.random() < 0.5 else f"m{count:02d}"
                cluster.observe(node(name))
                if name not in nodes:
                    nodes.append(name)
        elif action < 0.85:  # a PodGroup changes or goes
            group = f"g{rng.randint(1, count)}"
            uid = f"uid-pg-default-{group}-{generations.get(group, 0)}"
            if rng.random() < 0.6:
                cluster.observe(make_podgroup(group, rng.randint(1, 4)).uid(uid))
            else:  # created again later under another uid, as the API server would
                cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid=uid,
                                              namespace="default", name=group))
                generations[group] = generations.get(group, 0) + 1
        elif action < 0.9:  # a restart: the derived indexes rebuilt from a snapshot
            cluster.state = decode_state(encode_state(cluster.state))
        else:
            cluster.advance(rng.choice([0.5, 2, 30, 200]))
        _check_priorities(cluster.state, config)
    cluster.plan()
    _check_priorities(cluster.state, config)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_every_shortcut_equals_its_former_form_where_used(rng: random.Random) -> None:
    uses: Counter[str] = Counter()
    with _checked_shortcuts(uses):
        _run(rng)


def test_the_random_walks_reach_every_shortcut() -> None:
    """The walks above are not vacuous: over fixed seeds each shortcut is used many times."""
    uses: Counter[str] = Counter()
    with _checked_shortcuts(uses):
        for seed in range(40):
            _run(random.Random(seed))
    assert min(uses[name] for name in ("row by row", "queued counts", "lowest")) >= 20, uses
