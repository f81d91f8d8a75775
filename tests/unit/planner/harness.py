"""An in-memory cluster around the pure planner: events in, decisions out, an ideal binder.

`Cluster` keeps the whole log (events and plan points) so a test can replay it and compare
decisions byte for byte. No I/O, no clock: time moves only when the test says so.
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.contracts import codec
from services.contracts.decisions import Decision, Placement, Rejection, StatusUpdate
from services.contracts.events import (
    ClockTicked,
    Event,
    GroupBound,
    GroupRolledBack,
    MemberBound,
    PodDeleted,
    PodObserved,
)
from services.planner.core import derived
from services.planner.core import plan as planner
from services.planner.core.config import PlannerConfig
from services.planner.core.state import PlannerState, decode_state, empty_state, encode_state
from tests.unit.planner.builders import pod_uid


class Cluster:
    def __init__(self, config: PlannerConfig | None = None, now_ms: int = 0) -> None:
        self.config = config or PlannerConfig()
        self.state: PlannerState = empty_state()
        self.now_ms = now_ms
        self.seq = 0
        self.log: list[tuple[str, Any]] = []  # ("event", Event) | ("plan", plan_seq)
        self.decisions: list[Decision] = []

    # --- feeding events -------------------------------------------------------------------
    def observe(self, *items: Any) -> Cluster:
        """Apply events, or builders (built at the current time)."""
        for item in items:
            event = item.build(self.now_ms) if hasattr(item, "build") else item
            self.apply(event)
        return self

    def apply(self, event: Event) -> None:
        self.seq += 1
        self.log.append(("event", event))
        self.state = planner.apply(self.state, event)

    def advance(self, seconds: float) -> Cluster:
        self.now_ms += round(seconds * 1000)
        self.apply(ClockTicked(at_ms=self.now_ms))
        return self

    def delete_pod(self, name: str, namespace: str = "default") -> None:
        self.apply(PodDeleted(at_ms=self.now_ms, uid=pod_uid(name, namespace),
                              namespace=namespace, name=name))

    def set_phase(self, name: str, phase: str, namespace: str = "default") -> None:
        pod = self.state.pods[pod_uid(name, namespace)]
        self.apply(msgspec.structs.replace(pod, phase=phase, at_ms=self.now_ms))

    # --- planning -------------------------------------------------------------------------
    def plan(self) -> list[Decision]:
        self.log.append(("plan", self.seq))
        self.state, decisions = planner.plan(self.state, self.config, self.seq)
        self.decisions.extend(decisions)
        return decisions

    def bind(self, decisions: list[Decision], *, skip_group_bound: bool = False) -> None:
        """Act as a perfect binder: every member of every Placement binds, then GroupBound."""
        for decision in decisions:
            if not isinstance(decision, Placement):
                continue
            for member in decision.members:
                self.apply(MemberBound(at_ms=self.now_ms, decision_id=decision.id,
                                       group=decision.group, pod_uid=member.pod_uid,
                                       node=member.node))
                pod = self.state.pods[member.pod_uid]
                self.apply(msgspec.structs.replace(pod, node_name=member.node, phase="Running",
                                                   at_ms=self.now_ms))
            if not skip_group_bound:
                self.apply(GroupBound(at_ms=self.now_ms, decision_id=decision.id,
                                      group=decision.group))

    def roll_back(self, placement: Placement, reason: str = "bind refused") -> None:
        self.apply(GroupRolledBack(at_ms=self.now_ms, decision_id=placement.id,
                                   group=placement.group, reason=reason))

    def run(self, rounds: int = 10) -> list[Decision]:
        """Plan and bind until a round places nothing; all decisions made."""
        made: list[Decision] = []
        for _ in range(rounds):
            decisions = self.plan()
            made.extend(decisions)
            if not any(isinstance(d, Placement) for d in decisions):
                break
            self.bind(decisions)
        return made

    # --- looking ----------------------------------------------------------------------------
    def pod(self, name: str, namespace: str = "default") -> PodObserved:
        return self.state.pods[pod_uid(name, namespace)]

    def node_of(self, name: str, namespace: str = "default") -> str | None:
        uid = pod_uid(name, namespace)
        pod = self.state.pods[uid]
        if pod.node_name is not None:
            return pod.node_name
        reservation = self.state.reservations.get(uid)
        return reservation.node if reservation is not None else None

    def bound(self) -> list[str]:
        """Names of pods of ours that are bound or reserved, sorted."""
        return sorted(pod.name for uid, pod in self.state.pods.items()
                      if pod.scheduler_name == self.config.scheduler_name
                      and (pod.node_name is not None or uid in self.state.reservations)
                      and pod.phase not in ("Succeeded", "Failed"))

    def rejections(self, group: str | None = None) -> list[Rejection]:
        return [d for d in self.decisions if isinstance(d, Rejection)
                and (group is None or d.group == group)]

    def last_reason(self, group: str) -> str:
        return self.rejections(group)[-1].reason

    def statuses(self, group: str) -> list[StatusUpdate]:
        return [d for d in self.decisions if isinstance(d, StatusUpdate) and d.group == group]

    def placements(self) -> list[Placement]:
        return [d for d in self.decisions if isinstance(d, Placement)]


def assert_index_is_a_rebuild(cluster: Cluster) -> None:
    """The cluster's node index (free capacity, the score's non-zero extra, pods and host ports
    counted) equals one rebuilt from its state as a snapshot gives it: nothing held in a round
    leaks into the next."""
    current = cluster.state.derived
    assert current is not None and current.index is not None
    rebuilt = derived.ensure(decode_state(encode_state(cluster.state)),
                             cluster.config.scheduler_name).index
    assert rebuilt is not None
    assert current.index.free.tolist() == rebuilt.free.tolist()
    assert current.index.extra.tolist() == rebuilt.extra.tolist()
    assert sorted(current.index.pod_users) == sorted(rebuilt.pod_users)
    assert current.index.port_users == rebuilt.port_users


def recorded(cluster: Cluster) -> bytes:
    """The decisions the cluster's planner made live, encoded as `replay` returns them."""
    return b"".join(codec.encode(decision) + b"\n" for decision in cluster.decisions)


def replay(log: list[tuple[str, Any]], config: PlannerConfig) -> bytes:
    """Re-run a recorded log from an empty state; the decisions' encoded bytes, concatenated."""
    state = empty_state()
    out = bytearray()
    for kind, item in log:
        if kind == "event":
            state = planner.apply(state, item)
        else:
            state, decisions = planner.plan(state, config, item)
            for decision in decisions:
                out += codec.encode(decision) + b"\n"
    return bytes(out)
