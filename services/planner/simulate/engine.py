"""The simulation loop: arrivals and completions on a simulated clock, the planner, an ideal binder.

Layer: planner simulate (pure; planner core and contracts only; no wall clock). Every instant
applies all objects arriving then (and pods finishing or deleted then) before planning; the
planner is re-run at the same instant while it keeps placing (the binder binds at once, so
GroupBound can free later members). A Preemption is carried out as kube-scheduler's graceful
delete of its victims: each is observed deleting at once (deletionTimestamp set; it still holds
its node) and deleted `EVICTION_GRACE_MS` later (a PodDeleted), when the planner can place the
preemptor. The clock then jumps to the next arrival, completion, deletion or planner wake-up
(backoff expiry, a gang short of quorum told). It stops when nothing is due, every gang short of
quorum has been told and every backed-off group has been retried since the last change: from
then on nothing can change any more. PodDisruptionBudgets get their
`disruptionsAllowed` from the simulated disruption controller (`budgets`) before each round.
A pod held for another (`Arrival.after`: an OrderedReady StatefulSet's next ordinal) arrives
at the start of the round after that one is bound (or `ready_ms` later), so a StatefulSet
whose gang needs more than one of its pods at once never gets the next: as on a cluster.
"""

from __future__ import annotations

import heapq

import msgspec

from services.contracts.decisions import Assignment, Decision, Placement, Preemption, Rejection
from services.contracts.events import (
    ClaimRef,
    ClockTicked,
    DisruptionBudgetObserved,
    Event,
    GroupBound,
    MemberBound,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodDeleted,
    PodObserved,
    VolumeObserved,
)
from services.fit.filters import NODE_NAME_FIELD
from services.fit.volumes import claim_key
from services.planner.core import backoff, pods
from services.planner.core import plan as planner
from services.planner.core.config import PlannerConfig
from services.planner.core.state import PlannerState, empty_state
from services.planner.simulate.budgets import BudgetSpec, disruptions_allowed

MAX_ROUNDS_PER_INSTANT = 1000
MAX_INSTANTS = 1_000_000
EVICTION_GRACE_MS = 1000
"""How long a preempted pod takes to go once deleted: fixed (not the pod's own
terminationGracePeriodSeconds, 30 s by default), so results do not depend on what the
manifests leave out; short, as a victim honouring SIGTERM at once."""


class Arrival(msgspec.Struct, frozen=True):
    """An object appearing at `at_ms`; a pod with `runtime_ms` succeeds that long after binding;
    a PodDisruptionBudget's `budget` is its spec, for the simulated disruption controller. A pod
    with `after`, the uid of another pod, appears only once that one has been bound for
    `ready_ms`, and not before `at_ms` (an OrderedReady StatefulSet's next ordinal, created once
    the one before is Running and Ready: `Simulation.release`).

    Units: UTC epoch milliseconds on the simulated clock; `runtime_ms`, `ready_ms` milliseconds.
    """

    at_ms: int
    event: Event
    runtime_ms: int | None = None
    budget: BudgetSpec | None = None
    after: str | None = None
    ready_ms: int = 0


class PodResult(msgspec.Struct):
    """What became of one pod of ours. Units: `*_ms` simulated epoch milliseconds."""

    group: str | None
    node: str | None = None
    bound_at_ms: int | None = None
    finished_at_ms: int | None = None
    reason: str | None = None


class Deletion(msgspec.Struct, frozen=True):
    """A pod deleted during the simulation: its last observation, when it went (simulated epoch
    milliseconds) and the id of the Preemption that evicted it."""

    pod: PodObserved
    at_ms: int
    preemption: str


class Result(msgspec.Struct):
    """The simulation's outcome: every decision in order, each pod of ours, the final state,
    and each pod deleted on the way (by uid, ours or not: victims of preemption)."""

    decisions: list[Decision]
    pods: dict[str, PodResult]
    state: PlannerState
    end_ms: int
    deleted: dict[str, Deletion] = msgspec.field(default_factory=dict)


class Simulation:
    """One run (module docstring): `run()` plays it all; `instant(now)` plays one instant and
    `preempt(decision, now)` carries out one Preemption, for tests of the simulated binder.
    Units: every `now` and `*_ms` simulated UTC epoch milliseconds."""

    def __init__(self, arrivals: list[Arrival], config: PlannerConfig) -> None:
        self.config = config
        self.state = empty_state()
        self.seq = 0
        self.arrivals = sorted(((i, a) for i, a in enumerate(arrivals) if a.after is None),
                               key=lambda item: (item[1].at_ms, item[0]))
        self.next_arrival = 0
        self.held: dict[str, list[tuple[int, Arrival]]] = {}
        """uid of a pod not bound yet → the arrivals waiting for it (`Arrival.after`), each
        with its index in `arrivals`."""
        for index, arrival in enumerate(arrivals):
            if arrival.after is not None:
                self.held.setdefault(arrival.after, []).append((index, arrival))
        self.released: list[tuple[int, int, Arrival]] = []
        """A heap of the arrivals whose pod before was bound: (due ms, index, arrival)."""
        self.runtimes = {a.event.uid: a.runtime_ms for a in arrivals
                         if isinstance(a.event, PodObserved) and a.runtime_ms is not None}
        self.completions: list[tuple[int, int, str]] = []
        self.evictions: list[tuple[int, int, str]] = []
        self.budgets: dict[str, BudgetSpec] = {}
        self.deleted: dict[str, Deletion] = {}
        self.evicting: dict[str, str] = {}
        """uid → the id of the Preemption deleting the pod."""
        self.decisions: list[Decision] = []
        self.results: dict[str, PodResult] = {}
        self.last_change_ms = 0

    def apply(self, event: Event) -> None:
        self.seq += 1
        self.state = planner.apply(self.state, event)

    def run(self) -> Result:
        now = self.arrivals[0][1].at_ms if self.arrivals else 0
        for _ in range(MAX_INSTANTS):
            self.instant(now)
            upcoming = self.next_time()
            if upcoming is None:
                break
            now = upcoming
        return Result(self.decisions, self.results, self.state, self.state.now_ms, self.deleted)

    def instant(self, now: int) -> None:
        while (self.next_arrival < len(self.arrivals)
               and self.arrivals[self.next_arrival][1].at_ms <= now):
            self.arrive(self.arrivals[self.next_arrival][1], now)
            self.next_arrival += 1
        while self.completions and self.completions[0][0] <= now:
            _, _, uid = heapq.heappop(self.completions)
            self.finish(uid, now)
        while self.evictions and self.evictions[0][0] <= now:
            _, _, uid = heapq.heappop(self.evictions)
            self.delete(uid, now)
        self.apply(ClockTicked(at_ms=now))
        for _ in range(MAX_ROUNDS_PER_INSTANT):
            self.arrive_released(now)
            self.refresh_budgets(now)
            self.state, made = planner.plan(self.state, self.config, self.seq)
            self.decisions.extend(made)
            self.note_reasons(made)
            for preemption in (d for d in made if isinstance(d, Preemption)):
                self.preempt(preemption, now)
            placements = [d for d in made if isinstance(d, Placement)]
            if not placements:
                break
            for placement in placements:
                self.bind(placement, now)

    def arrive(self, arrival: Arrival, now: int) -> None:
        event = msgspec.structs.replace(arrival.event, at_ms=now)
        self.apply(event)
        self.last_change_ms = now
        if isinstance(event, DisruptionBudgetObserved) and arrival.budget is not None:
            self.budgets[claim_key(event.namespace, event.name)] = arrival.budget
        if isinstance(event, PodObserved) and pods.is_ours(event, self.config.scheduler_name):
            group = f"{event.namespace}/{event.group_name}" if event.group_name else None
            self.results.setdefault(event.uid, PodResult(group=group))
            if event.node_name is not None:
                self.bound(event.uid, event.node_name, now)
        if isinstance(event, PodObserved) and event.node_name is not None:
            self.release(event.uid, now)  # bound on arrival, by a manifest

    def bind(self, placement: Placement, now: int) -> None:
        for member in placement.members:
            self.bind_volumes(member, now)
        for member in placement.members:
            self.apply(MemberBound(at_ms=now, decision_id=placement.id, group=placement.group,
                                   pod_uid=member.pod_uid, node=member.node))
            pod = self.state.pods[member.pod_uid]
            self.apply(msgspec.structs.replace(pod, node_name=member.node, phase="Running",
                                               at_ms=now, start_ms=now))  # kubelet's startTime
            self.bound(member.pod_uid, member.node, now)
            self.release(member.pod_uid, now)
        self.apply(GroupBound(at_ms=now, decision_id=placement.id, group=placement.group))
        self.last_change_ms = now

    def release(self, uid: str, now: int) -> None:
        """The pod `uid` is bound, which the simulation takes for Running and Ready: the
        arrivals held for it (`Arrival.after`) are due once it has been so for their
        `ready_ms` (a StatefulSet's minReadySeconds: `isRunningAndAvailable`), not before
        their own `at_ms`."""
        for index, arrival in self.held.pop(uid, []):
            due = max(arrival.at_ms, now + arrival.ready_ms)
            heapq.heappush(self.released, (due, index, arrival))

    def arrive_released(self, now: int) -> None:
        """Play the released arrivals due by `now`, as the StatefulSet controller's
        `processReplica` creates the next pod: only while the pod before is still Running
        (bound, not being deleted, not finished); else the arrival is held for it again."""
        while self.released and self.released[0][0] <= now:
            _, index, arrival = heapq.heappop(self.released)
            before = arrival.after or ""
            if self.is_running(before):
                self.arrive(arrival, now)
            else:
                self.held.setdefault(before, []).append((index, arrival))

    def is_running(self, uid: str) -> bool:
        """Whether the pod `uid` is on a node, not being deleted and not Succeeded or Failed."""
        pod = self.state.pods.get(uid)
        return (pod is not None and pod.node_name is not None and not pod.is_deleting
                and pod.phase not in ("Succeeded", "Failed"))

    def refresh_budgets(self, now: int) -> None:
        """Observe each PDB again whose `disruptionsAllowed` changed (`budgets`)."""
        for key, spec in self.budgets.items():
            budget = self.state.budgets.get(key)
            if budget is None:
                continue
            allowed = disruptions_allowed(budget, spec, self.state.pods.values())
            if allowed != budget.disruptions_allowed:
                self.apply(msgspec.structs.replace(budget, disruptions_allowed=allowed,
                                                   at_ms=now))

    def preempt(self, preemption: Preemption, now: int) -> None:
        """Delete the victims gracefully, as kube-scheduler's DefaultPreemption does: observed
        deleting now, deleted `EVICTION_GRACE_MS` later (a victim already going is left so)."""
        for victim in preemption.victims:
            pod = self.state.pods.get(victim.uid)
            if pod is None or pod.is_deleting:
                continue
            self.apply(msgspec.structs.replace(pod, is_deleting=True, at_ms=now))
            heapq.heappush(self.evictions, (now + EVICTION_GRACE_MS, self.seq, victim.uid))
            self.evicting[victim.uid] = preemption.id
        self.last_change_ms = now

    def delete(self, uid: str, now: int) -> None:
        """The pod is gone (its grace period ended): PodDeleted, as the watcher reports it."""
        pod = self.state.pods.get(uid)
        if pod is None:
            return
        self.deleted[uid] = Deletion(pod, now, self.evicting.pop(uid, ""))
        self.apply(PodDeleted(at_ms=now, uid=uid, namespace=pod.namespace, name=pod.name,
                              resource_version=pod.resource_version))
        self.last_change_ms = now

    def bind_volumes(self, member: Assignment, now: int) -> None:
        """Bind the member's chosen volumes to their claims, as the binder and the PV
        controller do (a provisioned volume is `pvc-<claim uid>`, on the member's node)."""
        for choice in member.volumes:
            claim = self.state.claims.get(claim_key(member.namespace, choice.claim))
            if claim is None:
                continue
            name = choice.volume or f"pvc-{claim.uid}"
            volume = self.state.volumes.get(name) or VolumeObserved(
                at_ms=now, uid=f"sim-pv-{claim.uid}", name=name, resource_version="",
                storage_class=claim.storage_class, access_modes=claim.access_modes,
                capacity_bytes=claim.request_bytes, volume_mode=claim.volume_mode,
                node_affinity=(NodeSelectorTerm(match_fields=(NodeSelectorRequirement(
                    NODE_NAME_FIELD, "In", (member.node,)),)),))
            self.apply(msgspec.structs.replace(
                volume, at_ms=now, phase="Bound",
                claim=ClaimRef(claim.namespace, claim.name, claim.uid)))
            self.apply(msgspec.structs.replace(claim, at_ms=now, volume_name=name,
                                               is_bind_completed=True, phase="Bound"))

    def bound(self, uid: str, node: str, now: int) -> None:
        result = self.results.get(uid)
        if result is not None:
            result.node, result.bound_at_ms, result.reason = node, now, None
        runtime = self.runtimes.get(uid)
        if runtime is not None:
            heapq.heappush(self.completions, (now + runtime, self.seq, uid))

    def finish(self, uid: str, now: int) -> None:
        pod = self.state.pods.get(uid)
        if pod is None:
            return
        self.apply(msgspec.structs.replace(pod, phase="Succeeded", at_ms=now))
        self.last_change_ms = now
        if uid in self.results:
            self.results[uid].finished_at_ms = now

    def note_reasons(self, made: list[Decision]) -> None:
        for decision in made:
            if isinstance(decision, Rejection):
                for ref in decision.pods:
                    result = self.results.get(ref.uid)
                    if result is not None and result.node is None:
                        result.reason = decision.reason

    def next_time(self) -> int | None:
        due = []
        if self.next_arrival < len(self.arrivals):
            due.append(self.arrivals[self.next_arrival][1].at_ms)
        if self.completions:
            due.append(self.completions[0][0])
        if self.evictions:
            due.append(self.evictions[0][0])
        if self.released:
            due.append(self.released[0][0])
        wakeup = backoff.next_wakeup_ms(self.state, self.config)
        settled_ms = self.last_change_ms + round(self.config.backoff_max_seconds * 1000)
        if wakeup is not None and (due or wakeup <= settled_ms):
            due.append(wakeup)
        # a gang short of quorum is told once its members stop arriving, whatever the backoff
        # (`quorum.told_from_ms`); told, it rests until its members change: waited for always
        told = [at for group in self.state.groups.values()
                if (at := group.quorum_told_from_ms) is not None and at > self.state.now_ms]
        if told:
            due.append(min(told))
        return min(due) if due else None


def run(arrivals: list[Arrival], config: PlannerConfig) -> Result:
    """Play `arrivals` through the planner until nothing more can change (module docstring)."""
    return Simulation(arrivals, config).run()
