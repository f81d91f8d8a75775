"""One planning round: the decisions it has made so far and how one group is tried.

Layer: planner core (pure). `Round` walks groups in queue order (see `plan`), deciding for each:
wait (in flight, not found, invalid, unsupported, no quorum, backed off, binders busy: as many
placements in flight as `config.max_placements_in_flight`, or as many of their members as
`config.max_members_in_flight`), place (one Placement
with enough members for quorum, plus any extra members that fit), or reject (and back off).
Ordering comes only from explicit sort keys; time only from `state.now_ms`.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from services.contracts import ids, resources
from services.contracts.decisions import (
    Assignment,
    Decision,
    Placement,
    PodRef,
    Preemption,
    Rejection,
    Victim,
)
from services.contracts.events import PodGroupObserved, PodObserved
from services.fit import filters
from services.planner.core import (
    backoff,
    derived,
    nominations,
    placement,
    preemption,
    queue,
    quorum,
    reasons,
    starvation,
    topology_placement,
    volumes,
)
from services.planner.core.apply import record_failure
from services.planner.core.capacity import Hold, IntArray, NodeIndex
from services.planner.core.config import PlannerConfig
from services.planner.core.indexes import Asleep, Derived
from services.planner.core.state import (
    GroupState,
    InFlight,
    Nomination,
    PlannerState,
    RejectionMemo,
    Reservation,
    attempted,
    capacity_freed,
)


class Round:
    """The state of one planning round.

    Shapes: `decisions` in the order made (their ids follow it); `hold` the starving gang's
    reservation applied to the index for the rest of the round, if any.
    """

    def __init__(self, state: PlannerState, config: PlannerConfig, plan_seq: int,
                 current: Derived, index: NodeIndex) -> None:
        self.state = state
        self.config = config
        self.plan_seq = plan_seq
        self.derived = current
        self.index = index
        index.volumes = volumes.Volumes(state, index)
        self.now = state.now_ms
        self.decisions: list[Decision] = []
        self.hold: Hold | None = None
        self.pinned: IntArray | None = None
        """Other schedulers' use per node (`starvation.pinned_usage`), once per round."""
        self.held_before = state.starving_nodes
        self.holder_before = state.starving_group
        state.starving_group, state.starving_nodes = None, []
        self.quiet_reason: str | None = None
        """Why the last quiet attempt failed (`_attempt(quiet=True)`), not recorded."""
        self.quiet_note = ""
        """The preemption note that ends `quiet_reason` ("" when none)."""
        self.left_out: dict[str, tuple[list[PodObserved], str, tuple[str, bool]]] = {}
        """Gangs planned this round without some pending members that can never be placed
        (invalid, unsupported, or kept off every node by a PreFilter) and that quorum does not
        need: those members, the note every Rejection of the gang carries for them, and what
        they are told alone (`_leave_out`, `_tell_left_out`)."""
        self.stranded: dict[str, int] = {}
        """Groups planned this round that are partly bound (`quorum.is_stranded`): their bound
        members. They hold capacity as a starving gang does, from the first round on."""
        self.nominated: dict[str, nominations.Held] = {}
        """The capacity each live nomination holds from the other groups (`nominations`)."""
        self.members_in_flight: int | None = None
        """Members of the placements in flight (`binders_busy`), counted on first use."""
        self.queued_counts: dict[str, quorum.Counts] = {}
        """Each queued group's quorum counts as `plan._queue` took them (minMember its
        PodGroup's), used by `_plan_group` instead of counting again: no step of a round
        changes the members of a group or their classes but that group's own placement
        (`derived.reserve`), made after its counts are read."""
        self.lowest_victim: int | None = None
        """The lowest priority of any pod preemption may evict (`preemption.lowest`), once per
        round: a gang at or below it has nothing to evict, without a look at every pod."""

    def next_id(self) -> str:
        return ids.decision_id(self.plan_seq, len(self.decisions))

    def hold_nominations(self) -> None:
        """End lapsed nominations, then let each live one hold its capacity (`nominations`),
        highest priority gang first (then by key): room a victim frees on a node nominated
        for two gangs goes to the higher one, as kube-scheduler lets a pod count only the
        nominated pods of equal or higher priority."""
        ended = nominations.lapse(self.state, self.derived, self.index)
        for key in ended:
            self.derived.dirty.add(key)
            group = self.state.groups.get(key)
            if group is not None:
                group.failed_at_ms = None  # not placed in time: tried (and told) again at once
        if ended:
            capacity_freed(self.state)  # the room they held is anyone's now
        state, pending = self.state, self.derived.pending

        def order(key: str) -> tuple[int, str]:
            return -queue.priority([state.pods[uid] for uid in pending.get(key, ())]), key

        for key in sorted(state.nominations, key=order):
            self.nominated[key] = nominations.take(self.index, key, state.nominations[key], state)

    def plan_group(self, key: str, group: GroupState, podgroup: PodGroupObserved | None,
                   pending: list[PodObserved]) -> None:
        """Decide for one group with pending members (module docstring); a nominated gang sees
        the capacity held for it meanwhile."""
        own = self.nominated.pop(key, None)
        if own is not None:
            nominations.give(self.index, own)
        try:
            self._plan_group(key, group, podgroup, pending)
        finally:
            nomination = self.state.nominations.get(key)
            if nomination is not None:
                self.nominated[key] = nominations.take(self.index, key, nomination, self.state)

    def _plan_group(self, key: str, group: GroupState, podgroup: PodGroupObserved | None,
                    pending: list[PodObserved]) -> None:
        self.derived.quiet.discard(key)
        self.derived.behind_binders.discard(key)
        self.derived.asleep.pop(key, None)
        group.quorum_told_from_ms = None
        if group.in_flight:
            return  # its placement is being bound; members beyond it wait for GroupBound
        self.left_out.pop(key, None)
        min_member = podgroup.min_member if podgroup is not None else 1
        waiting = self._group_reason(key, podgroup)
        blocked = self._blocked_members(pending) if waiting is None else []
        if blocked and not self._leave_out(key, group, pending, blocked, min_member):
            waiting = self._blocked_reason(key, blocked[0])
        if waiting is not None:
            self.reject(key, group, pending, waiting[0], is_unschedulable=waiting[1],
                        is_backoff=False)
            self.rest(key, pending)
            return
        everyone, pending = pending, self._placeable(key, pending)
        counts = self.queued_counts.pop(key, None)
        if counts is None:
            counts = quorum.count(self.derived, key, group, min_member)
        if quorum.is_stranded(counts, min_member):
            self.stranded[key] = counts.bound
        note = _priority_note(pending)
        if not quorum.has_quorum(counts, min_member):
            told_from = quorum.told_from_ms(pending, group)
            if self.now < told_from:  # members still joining, or told just now
                group.quorum_told_from_ms = told_from
                self.sleep(key, pending, told_from)
                return
            told = group.last_rejection
            self.reject(key, group, pending,
                        reasons.gang_quorum(key, counts.usable, min_member, counts.gated) + note,
                        is_backoff=False)
            if group.last_rejection is not told:
                group.quorum_tells, group.quorum_told_at_ms = group.quorum_tells + 1, self.now
            self.rest(key, pending)
            return
        group.quorum_tells, group.quorum_told_at_ms = 0, None
        if self.binders_busy():
            # backpressure: placed now, it would only queue behind the binders' work; a
            # starving or partly bound gang keeps holding its capacity (and its nodes) meanwhile
            self._maybe_hold(key, group, pending, quorum.still_needed(counts, min_member))
            if backoff.is_backed_off(group, self.now, self.config):
                # its others wait out a backoff, not only the binders: its members left out are
                # told with its failure (a note on its Rejection, told again only if its pods
                # changed, as a backed-off gang is when the binders are idle), not alone;
                # alone once its backoff ends, so until then it sleeps, not rests behind the
                # binders (a restart plans every group again: planning it must decide as
                # skipping it does, docs/design-notes.md "What a restart plans again")
                if key in self.left_out:
                    self.reject(key, group, pending, group.failure_reason)
                    if not self._may_hold(key, group):
                        self.sleep(key, everyone, self._backed_off_until(group),
                                   freed_at=self.state.capacity_freed_at)
                    return
            else:
                self._tell_left_out(key, group)
            if key not in self.stranded:
                self.rest(key, everyone, self.derived.behind_binders)
            return
        need = quorum.still_needed(counts, min_member)
        if not backoff.is_backed_off(group, self.now, self.config):
            self._attempt(key, group, podgroup, pending, counts, min_member, note)
            return
        changed = _pending_changed(group, everyone)
        self.quiet_reason, self.quiet_note = None, ""
        holding = ((self._is_holder(key, group, need) and group.may_retry_early
                    and self.holder_before == key)
                   or key in self.state.nominations)
        retrying = holding or self._may_retry_early(group)
        if retrying:
            # quiet retries: the gang that held capacity last round, every round, so it does
            # not miss the moment its nodes drain (not a starving gang that held nothing, one
            # that would not fit even on emptied nodes: retried every round it was a tight
            # loop, reference C.2; it retries early as any other); an unschedulable group once
            # capacity was freed since its last attempt (at most once per backoff,
            # `backoff.early_retry_ms`: 1 s doubling to 10 s), as kube-scheduler requeues
            # pods on cluster events. A failure here is not counted, and told only if its
            # reason changed (below). Only after "found unschedulable": a gang whose placement
            # was rolled back (a bind refused,
            # a member gone) waits out its backoff before it is placed again, holder or not,
            # or a bind that always fails would be retried every round; it keeps holding. A
            # gang that preempted retries every round, to take its victims' room at once.
            attempted(self.state, group)
            if self._attempt(key, group, podgroup, pending, counts, min_member, note, quiet=True):
                return
            if not holding:
                group.early_retries += 1
        elif changed:
            # pending members changed (one deleted, one recreated): a dry run finds the reason
            # for the members it has now; placing still waits for the backoff (a rollback's
            # recreated members must not end it)
            self._attempt(key, group, podgroup, pending, counts, min_member, note, quiet=True,
                          dry_run=True)
        if self.quiet_reason is not None and (changed or retrying):
            # what its pods are now, or a retry that failed otherwise than told (nodes came,
            # its hold began or ended, its victims left), is told, not counted: with no timed
            # retry to tell it, a stale reason would stand until the flush. Told only when
            # it differs in more than its counts that tick on (`reasons.gist`); and a gang
            # retried every round because it holds capacity or a nomination, only when its
            # hold or nomination note changed (its nodes' counts change as others come and
            # go, and as its victims leave), or it would be told anew every round.
            hold = self._maybe_hold(key, group, pending, need)
            reason, told = self.quiet_reason + hold, reasons.gist(group.failure_reason)
            if holding and not changed:
                notes = reasons.gist(self.quiet_note + hold)
                news = bool(notes) and not told.endswith(notes)
            else:
                news = changed or reasons.gist(reason) != told
            if news:
                group.failure_reason = reason
            self.reject(key, group, pending, group.failure_reason)
            return
        self.reject(key, group, pending, group.failure_reason)
        self._maybe_hold(key, group, pending, need)
        if not retrying and not changed and not self._may_hold(key, group):
            self.sleep(key, everyone, self._backed_off_until(group),
                       freed_at=self.state.capacity_freed_at)

    def _backed_off_until(self, group: GroupState) -> float:
        """The first event time (UTC epoch ms) a backed-off gang, neither retrying nor holding
        now, may do something other than wait: its backoff ends, it starts starving (then it
        holds capacity), or its early retry comes (`_may_retry_early`; capacity freed later
        wakes it as well: `Derived.asleep`)."""
        times: list[float] = []
        retry = backoff.retry_at_ms(group, self.config)
        if retry is not None:
            times.append(retry)
        if group.pending_since_ms is not None:
            times.append(group.pending_since_ms + self.config.starvation_seconds * 1000)
        early = backoff.early_retry_at_ms(group, self.state.capacity_freed_at, self.config)
        if early is not None:
            times.append(early)
        return min(times, default=self.now)

    def sleep(self, key: str, pending: list[PodObserved], until_ms: float, *,
              freed_at: int | None = None) -> None:
        """Let later rounds skip a group that waits for time until `until_ms` (event time, UTC
        epoch ms) or a change to its pods or PodGroup (`Derived.asleep`), or, with `freed_at`
        (a backed-off gang, `PlannerState.capacity_freed_at`), capacity freed since. Only
        where looking at it before then would change nothing: not a stranded gang (it holds
        capacity each round), not one with a nomination, and not one with a claim among its
        pending members (a claim or volume changing meanwhile would be found by
        `_blocked_members` at once). Skipping it then gives the same decisions."""
        if key in self.stranded or key in self.state.nominations \
                or any(pod.volume_claims for pod in pending):
            return
        self.derived.asleep[key] = Asleep(until_ms, freed_at)

    def rest(self, key: str, pending: list[PodObserved], resting: set[str] | None = None) -> None:
        """Let later rounds skip the group until its pods or PodGroup change: always
        (`Derived.quiet`, the default `resting`), or while the binders stay busy
        (`Derived.behind_binders`).

        Called after a wait whose verdict is a function of the group's pods and PodGroup alone
        (PodGroup missing, invalid or unsupported, a member invalid or unsupported, quorum not
        reached), or of those and the binders being busy (quorum held, not partly bound): no time,
        capacity, node or other group enters it, and its Rejection is told already, so
        planning it again before such a change would decide exactly the same and tell
        nothing. (Behind busy binders a gang may still start starving with time and then
        hold capacity: `is_behind_binders` lets those be planned.) Not for a nominated group (its
        nomination lapses by time) nor one with a member that mounts claims (the claims' and
        volumes' state enters `_blocked_members`, and the node count its reason), so skipping
        never changes a decision: it mirrors kube-scheduler's queueing hints, which requeue
        an unschedulable pod only on the events that may make it schedulable.
        """
        if key not in self.state.nominations and not any(pod.volume_claims for pod in pending):
            (self.derived.quiet if resting is None else resting).add(key)

    def is_behind_binders(self, key: str, group: GroupState) -> bool:
        """Whether planning the group now would only find it behind the busy binders again
        (`Round.rest`): unchanged since, the binders still busy, and not starving by now
        (a starving gang holds capacity while it waits)."""
        return (key in self.derived.behind_binders and key not in self.derived.dirty
                and self.binders_busy()
                and not starvation.is_starving(group, self.now, self.config))

    def _group_reason(self, key: str, podgroup: PodGroupObserved | None) -> tuple[str, bool] | None:
        """Why the whole group waits whatever its members (its PodGroup missing, invalid, or
        asking for a constraint the planner does not implement), and whether that is
        "unschedulable" (not for invalid or unsupported: the PodGroup must change, as for a
        pod); None if its PodGroup lets it be planned."""
        if not ids.is_singleton(ids.GroupKey(key)) and podgroup is None:
            return reasons.pod_group_not_found(key), True
        if podgroup is not None and podgroup.invalid_reason:
            return reasons.pod_group_invalid(key, podgroup.invalid_reason), False
        if podgroup is not None and podgroup.unsupported:
            return reasons.pod_group_unsupported(key, podgroup.unsupported[0]), False
        return None

    def _blocked_members(self, pending: list[PodObserved]) -> list[tuple[PodObserved, str, bool]]:
        """The pending members no node can take whatever the others do, in member order, each
        with its own reason and whether that is "unschedulable": invalid or unsupported (never
        unschedulable: the pod must change), then those a volume PreFilter keeps off every
        node (kube-scheduler's VolumeBinding and VolumeRestrictions PreFilters; a pod that
        NodeAffinity's PreFilter rejects first is left to the attempt, which says so)."""
        blocked = [(pod, reasons.pod_invalid(_name(pod), pod.invalid_reason)
                    if pod.invalid_reason else reasons.unsupported(pod.unsupported[0]), False)
                   for pod in pending if pod.invalid_reason or pod.unsupported]
        storage = self.index.volumes
        if storage is None:
            return blocked
        for pod in pending:
            if pod.invalid_reason or pod.unsupported \
                    or filters.affinity_node_names(pod) == frozenset():
                continue
            message = storage.prefilter(pod)
            if message is not None:
                blocked.append((pod, reasons.prefilter(len(self.index), message), True))
        return blocked

    def _blocked_reason(self, key: str, blocked: tuple[PodObserved, str, bool]) -> tuple[str, bool]:
        """Why the group waits for its blocked member (`_blocked_members`): the member's own
        reason for a singleton, named after its gang for a gang member."""
        pod, reason, is_unschedulable = blocked
        if ids.is_singleton(ids.GroupKey(key)):
            return reason, is_unschedulable
        return reasons.gang_member(key, _name(pod), reason), is_unschedulable

    def _leave_out(self, key: str, group: GroupState, pending: list[PodObserved],
                   blocked: list[tuple[PodObserved, str, bool]], min_member: int) -> bool:
        """Plan the gang without its `blocked` members when the others reach minMember
        without them and some of those others are pending; whether it does (then
        `left_out[key]` holds them and the note). Mirrors Coscheduling, which judges each pod
        on its own: the blocked pod fails its own filters while Permit lets the others through
        once minMember of them are assigned. Otherwise the whole gang waits, naming the first
        blocked member (a member quorum needs can never be placed until it changes)."""
        if ids.is_singleton(ids.GroupKey(key)) or len(blocked) >= len(pending):
            return False
        if quorum.count(self.derived, key, group, min_member).usable - len(blocked) < min_member:
            return False
        reason_of = {pod.uid: reason for pod, reason, _ in blocked}
        out = [pod for pod in pending if pod.uid in reason_of]  # member order
        self.left_out[key] = (out, reasons.members_left_out(
            [(_name(pod), reason_of[pod.uid]) for pod in out]),
            self._blocked_reason(key, blocked[0]))
        return True

    def _tell_left_out(self, key: str, group: GroupState) -> None:
        """Tell the members `_leave_out` left out why they wait, alone: what they are told once
        the others are placed (the same Rejection, so it is not told twice), now that the
        others are placed or wait only for busy binders."""
        left = self.left_out.get(key)
        if left is None:
            return
        pods, _, (reason, is_unschedulable) = left
        self.reject(key, group, pods, reason, is_unschedulable=is_unschedulable,
                    is_backoff=False, with_left_out=False)

    def _placeable(self, key: str, pending: list[PodObserved]) -> list[PodObserved]:
        """`pending` less the members `_leave_out` left out of this round."""
        left = self.left_out.get(key)
        if left is None:
            return pending
        out = {pod.uid for pod in left[0]}
        return [pod for pod in pending if pod.uid not in out]

    def _may_retry_early(self, group: GroupState) -> bool:
        # capacity freed (or a pod woke it) after its last attempt, in event order, and its
        # early retry wait passed
        early = backoff.early_retry_at_ms(group, self.state.capacity_freed_at, self.config)
        return early is not None and self.now >= early

    def binders_busy(self) -> bool:
        """Whether `config.max_placements_in_flight` placements, or placements of
        `config.max_members_in_flight` members together, await their outcome."""
        limit = self.config.max_placements_in_flight
        if limit > 0 and len(self.state.placements) >= limit:
            return True
        members = self.config.max_members_in_flight
        return members > 0 and self._members_in_flight() >= members

    def _members_in_flight(self) -> int:
        """Members of every placement in flight: counted on first use in a round (after
        `plan._expire`, the only place placements leave during a round: it runs first), then
        added to as the round places."""
        if self.members_in_flight is None:
            self.members_in_flight = sum(len(p.pod_uids) for p in self.state.placements.values())
        return self.members_in_flight

    def _is_holder(self, key: str, group: GroupState, need: int) -> bool:
        return need > 0 and self.hold is None and self._may_hold(key, group)

    def _may_hold(self, key: str, group: GroupState) -> bool:
        """Whether the group reserves capacity: starving, or partly bound (completes first),
        and not nominated (its nomination already holds what its quorum needs, on the nodes
        it will take; a second reservation elsewhere would only keep others out)."""
        if key in self.state.nominations:
            return False
        return key in self.stranded or starvation.is_starving(group, self.now, self.config)

    def _attempt(self, key: str, group: GroupState, podgroup: PodGroupObserved | None,
                 pending: list[PodObserved], counts: quorum.Counts, min_member: int,
                 note: str, quiet: bool = False, dry_run: bool = False) -> bool:
        """Try to place the group; whether a Placement was made. `quiet`: a failure is not
        recorded nor told (the caller handles the backed-off group), its reason is left in
        `quiet_reason`. `dry_run` (quiet): never place; leave in `quiet_reason` why members
        would wait (None when all would fit)."""
        if group.schedule_start_ms is None:
            group.schedule_start_ms = self.now
            self.derived.dirty.add(key)
        need = quorum.still_needed(counts, min_member)
        if need and podgroup is not None and podgroup.min_resources:
            shortfall = self._min_resources_shortfall(key, podgroup)
            if shortfall is not None:
                self._refused(key, group, podgroup, pending, need, shortfall + note, quiet,
                              dry_run)
                return False
        total = len(self.index)
        if podgroup is not None and podgroup.topology_key is not None:
            result = self._in_one_domain(key, podgroup.topology_key, pending, need)
            if result.chosen is None:
                reason = self._no_domain_reason(key, podgroup.topology_key, result, counts,
                                                min_member, need, len(pending))
                self._refused(key, group, podgroup, pending, need, reason + note, quiet,
                              dry_run)
                return False
            domain, trial = result.chosen
            total = domain.size
        else:
            trial = self._trial(key, pending, need)
        placed = len(trial.assigned)
        nodes = _nodes_reason(trial, total)
        if placed == 0 or placed < need:
            trial.rollback()  # all or nothing: no capacity stays with a gang short of quorum
            reason = _short_reason(key, counts, min_member, need, len(pending), placed, nodes)
            self._refused(key, group, podgroup, pending, need, reason + note, quiet, dry_run)
            return False
        if dry_run:
            trial.rollback()
            self.quiet_reason = (reasons.gang_extra_members(
                key, min_member, len(trial.unplaced), nodes) + note if trial.unplaced else None)
            return False
        self._commit(key, group, podgroup, trial)
        group.early_retries = 0
        if trial.unplaced:
            reason = reasons.gang_extra_members(key, min_member, len(trial.unplaced), nodes)
            self._fail(key, group, trial.unplaced, reason + note)
        else:
            # placed, not yet bound: `failures` stays so a rollback backs off longer (reset by
            # GroupBound); clearing `failed_at_ms` ends the current backoff
            group.failed_at_ms, group.failure_reason = None, ""
            group.pending_since_ms = None
            if key in self.left_out:
                self._tell_left_out(key, group)  # told once, not again per placement
            else:
                group.last_rejection = None
        return True

    def _trial(self, key: str, pending: list[PodObserved], need: int) -> placement.Trial:
        if not self.config.prefer_topology:
            return placement.place(self.index, pending, self.config, hold=self.hold, need=need)
        rows = sorted({self.index.row[charge.node]
                       for uid in self.derived.members.get(key, ())
                       if (charge := self.state.charges.get(uid)) is not None
                       and charge.node in self.index.row})
        return placement.place_preferring_domain(self.index, pending, self.config, rows,
                                                 hold=self.hold, need=need)

    def _scheduled(self, key: str) -> list[tuple[str, str]]:
        """The group's members already scheduled, bound or placed (charged to a node: any
        scheduler's, kube-scheduler's assigned and assumed pods), as `("ns/name", node)`,
        sorted."""
        pods, charges = self.state.pods, self.state.charges
        return sorted((_name(pods[uid]), charge.node)
                      for uid in self.derived.members.get(key, ())
                      if (charge := charges.get(uid)) is not None and uid in pods)

    def _in_one_domain(self, key: str, topology_key: str, pending: list[PodObserved],
                       need: int) -> topology_placement.Result:
        """Place a gang whose PodGroup requires one value of node label `topology_key`
        (`topology_placement`, whatever `--prefer-topology` says)."""
        return topology_placement.place(self.index, pending, self.config, topology_key,
                                        self._scheduled(key), self.state.node_used,
                                        hold=self.hold, need=need)

    def _no_domain_reason(self, key: str, topology_key: str, result: topology_placement.Result,
                          counts: quorum.Counts, min_member: int, need: int,
                          pending: int) -> str:
        """Why a gang requiring one domain of `topology_key` fits in none (`result`): the
        generation's status, or kube-scheduler's `0/<n> placements are available, first
        placement status: ...` with the lowest domain's reason as the first status."""
        if result.first is None:
            return reasons.gang_placement(key, result.error or "")
        domain, trial = result.first
        placed = len(trial.assigned)
        reason = _short_reason(key, counts, min_member, need, pending, placed,
                               _nodes_reason(trial, domain.size))
        return reasons.placements_unavailable(key, result.placements, topology_key,
                                              domain.value, reason)

    def _refused(self, key: str, group: GroupState, podgroup: PodGroupObserved | None,
                 pending: list[PodObserved], need: int, reason: str, quiet: bool,
                 dry_run: bool) -> None:
        """The gang does not fit now (`reason`): preempt for it if that makes it fit (not in a
        dry run, nor for members beyond quorum), then record and tell the failure, or, `quiet`,
        leave it in `quiet_reason`."""
        suffix, preempted = (self._preempt(key, podgroup, pending, need) if not dry_run and need
                             else ("", False))
        if quiet:
            self.quiet_reason, self.quiet_note = reason + suffix, suffix
            if preempted:
                group.failure_reason = self.quiet_reason  # told while its victims leave
        else:
            self._fail(key, group, pending, reason + suffix, need)

    def _min_resources_shortfall(self, key: str, podgroup: PodGroupObserved) -> str | None:
        """Why the cluster's free capacity cannot hold the PodGroup's `minResources` plus one
        pod slot per `minMember`, or None: Coscheduling's PreFilter (`CheckClusterResource`)
        sums what is free on every node, whatever the gang's filters say of it (cordoned,
        tainted, not selected), counting what the group's own pods take there as free. Units:
        gangsched units (cpu millicores, bytes, counts). A node over-committed by other
        schedulers' pods, the group's own given back, adds nothing (Coscheduling's sum
        depends on its node order there); a member charged to a node the cluster no longer
        has adds nothing either (Coscheduling walks the nodes)."""
        index = self.index
        free = index.free.copy()
        for uid in sorted(self.derived.members.get(key, ())):
            charge = self.state.charges.get(uid)
            row = None if charge is None else index.row.get(charge.node)
            if charge is None or row is None:
                continue
            for name, amount in charge.requests.items():
                col = index.col.get(name)
                if col is not None:
                    free[col, row] += amount
        wanted = {**podgroup.min_resources, resources.PODS: podgroup.min_member}
        shortfalls = []
        for name, amount in sorted(wanted.items()):
            col = index.col.get(name)
            left = 0 if col is None else int(np.maximum(free[col], 0).sum())
            if amount > left:
                shortfalls.append(reasons.min_resources_shortfall(
                    name, resources.format_amount(name, amount),
                    resources.format_amount(name, left)))
        if not shortfalls:
            return None
        return reasons.gang_min_resources(key, shortfalls, len(index))

    def _commit(self, key: str, group: GroupState, podgroup: PodGroupObserved | None,
                trial: placement.Trial) -> None:
        """Turn a successful trial into a Placement and reservations (its capacity stays taken)."""
        trial.commit()
        if self.state.nominations.pop(key, None) is not None:
            capacity_freed(self.state)  # what it held beyond where it lands is anyone's now
        group.preempted_by = ""
        decision = self.next_id()
        timeout_seconds = ((podgroup.schedule_timeout_seconds if podgroup is not None else None)
                           or self.config.default_timeout_seconds)
        deadline = self.now + timeout_seconds * 1000
        members = sorted((Assignment(pod.uid, pod.namespace, pod.name, self.index.names[row],
                                     volumes.decided(trial.claims.get(pod.uid, ())))
                          for pod, row in trial.assigned),
                         key=lambda a: (a.namespace, a.name, a.pod_uid))
        group.attempts += 1
        self.decisions.append(Placement(id=decision, plan_seq=self.plan_seq, at_ms=self.now,
                                        group=key, attempt=group.attempts, deadline_ms=deadline,
                                        members=tuple(members)))
        for member in members:
            derived.reserve(self.state, member.pod_uid, Reservation(member.node, decision, key))
        self.state.placements[decision] = InFlight(
            group=key, at_ms=self.now, deadline_ms=deadline,
            pod_uids=tuple(member.pod_uid for member in members))
        if self.members_in_flight is not None:
            self.members_in_flight += len(members)
        group.in_flight.append(decision)
        self.derived.dirty.add(key)

    def _preempt(self, key: str, podgroup: PodGroupObserved | None, pending: list[PodObserved],
                 need: int) -> tuple[str, bool]:
        """Evict lower-priority pods so that the gang's quorum fits, if some choice does
        (`preemption`): a Preemption decision and a nomination. The reason suffix, and whether
        it preempted."""
        nomination = self.state.nominations.get(key)
        if nomination is not None:
            leaving = sum(1 for uid in nomination.victims if uid in self.state.pods)
            return reasons.nominated(leaving, nomination.decision_id,
                                     _utc(nomination.deadline_ms)), False
        if not self.config.preemption or not preemption.may_preempt(pending):
            return "", False
        priority = queue.priority(pending)
        if self.lowest_victim is None:
            self.lowest_victim = preemption.lowest(self.derived, self.config)
        if priority <= self.lowest_victim:
            return "", False
        if topology_placement.refuses_preemption(podgroup):
            return reasons.PREEMPTION_CONSTRAINED, False
        units = preemption.candidates(self.state, self.derived, self.index, key, priority,
                                      pending, self.config, nominations.victims(self.state))
        if not units.every:
            return "", False

        def fits() -> preemption.Assigned | None:
            if (podgroup is not None and podgroup.min_resources
                    and self._min_resources_shortfall(key, podgroup) is not None):
                return None  # minResources must be met too, as when it is placed
            trial = placement.place(self.index, pending, self.config, need=need)
            assigned = list(trial.assigned)
            trial.rollback()
            return assigned if len(assigned) >= need else None

        with nominations.settled(self.state, self.index, self.nominated, priority):
            choice = preemption.choose(self.index, units, self.state.budgets.values(), fits)
        if choice is None:
            return reasons.PREEMPTION_NOT_HELPFUL, False
        if not choice.units:
            return reasons.PREEMPTION_UNDER_WAY, False
        decision = self.next_id()
        deadline = self.now + round(self.config.nomination_seconds * 1000)
        names = self.index.names
        victims = sorted((Victim(uid, pod.namespace, pod.name, names[row],
                                 preemption.victim_group(unit), pod.priority)
                          for unit in choice.units for uid, row, pod in unit.members),
                         key=lambda v: (v.namespace, v.name, v.uid))
        nominated = sorted((Assignment(pod.uid, pod.namespace, pod.name, names[row])
                            for pod, row in choice.assigned),
                           key=lambda a: (a.namespace, a.name, a.pod_uid))
        nodes = sorted({victim.node for victim in victims})
        suffix = reasons.preempting(len(victims), len(choice.units), len(nodes), decision,
                                    _utc(deadline))
        told = reasons.preempted(key, priority, max(v.priority for v in victims), nodes,
                                 decision)
        self.decisions.append(Preemption(
            id=decision, plan_seq=self.plan_seq, at_ms=self.now, group=key, priority=priority,
            deadline_ms=deadline, nominated=tuple(nominated), victims=tuple(victims),
            reason=told))
        self.state.nominations[key] = Nomination(
            decision_id=decision, at_ms=self.now, deadline_ms=deadline,
            amounts=nominations.amounts_of(self.index, [(pod.requests, row)
                                                        for pod, row in choice.assigned]),
            victims=tuple(sorted(victim.uid for victim in victims)),
            placed={member.pod_uid: member.node for member in nominated})
        for unit in choice.units:
            if unit.group:
                victim_group = self.state.groups.setdefault(unit.group, GroupState())
                victim_group.preempted_by = told
                self.derived.dirty.add(unit.group)
        self.derived.dirty.add(key)
        return suffix, True

    def _fail(self, key: str, group: GroupState, pods: list[PodObserved], reason: str,
              need: int = 0) -> None:
        """Record and tell a failed attempt of `pods`; a starving or partly bound gang then
        holds capacity for `need` of them (`_maybe_hold`; 0: none)."""
        record_failure(self.state, group, reason)
        group.may_retry_early = True
        if group.pending_since_ms is None:
            group.pending_since_ms = self.now
        suffix = self._maybe_hold(key, group, pods, need)
        group.failure_reason = reason + suffix
        self.reject(key, group, pods, group.failure_reason)

    def _maybe_hold(self, key: str, group: GroupState, pending: list[PodObserved],
                    need: int) -> str:
        """Reserve capacity for `need` of the `pending` members of the first starving (or
        partly bound) gang in queue order (`starvation.plan_hold`); the reason suffix. None is
        reserved for a gang whose `minResources` even emptied nodes cannot meet."""
        if self.hold is not None or need <= 0 or not pending or not self._may_hold(key, group):
            return ""
        if self.pinned is None:
            self.pinned = starvation.pinned_usage(self.state, self.index,
                                                  self.config.scheduler_name)
        podgroup = self.state.podgroups.get(key)
        if podgroup is not None and podgroup.min_resources:
            others_use = starvation.pinned_but_members(
                self.state, self.index, self.pinned, self.derived.members.get(key, ()),
                self.config.scheduler_name)
            if not starvation.may_meet_min_resources(self.index, podgroup, others_use):
                return reasons.NEVER_FITS
        hold = self._plan_hold(key, podgroup, pending, need, self.pinned)
        if hold is None:
            return reasons.NEVER_FITS
        starvation.apply_hold(self.index, hold)
        self.hold = hold
        self.state.starving_group = key
        self.state.starving_nodes = [self.index.names[row] for row in hold.rows]
        if key in self.stranded:
            return reasons.stranded_hold(self.stranded[key], len(hold.rows))
        since = group.pending_since_ms if group.pending_since_ms is not None else self.now
        waited = (self.now - since) / 1000
        return reasons.starving_hold(waited, len(hold.rows))

    def _plan_hold(self, key: str, podgroup: PodGroupObserved | None,
                   pending: list[PodObserved], need: int, pinned: IntArray) -> Hold | None:
        """`starvation.plan_hold` for the gang; for one whose PodGroup requires one domain of
        a node label, inside one domain (`topology_placement.hold_order`, the first where it
        fits on emptied nodes), never over two; None when it fits in none. A domain whose
        emptied nodes cannot hold `need` members (`topology_placement.may_fit`) is not
        planned: the hold is planned every round a gang starves."""
        if podgroup is None or podgroup.topology_key is None:
            return starvation.plan_hold(self.index, key, pending, need, self.config,
                                        self.held_before, pinned)
        generated = topology_placement.generate(self.index, podgroup.topology_key,
                                                self._scheduled(key))
        owner = topology_placement.owners(self.index, podgroup.topology_key, generated.domains)
        hopeful = topology_placement.may_fit(self.index, pending, need,
                                             self.index.alloc - pinned, owner)
        domains = [domain for domain, ok in zip(generated.domains, hopeful, strict=True) if ok]
        for domain in topology_placement.hold_order(domains, self.index, self.config,
                                                    self.held_before):
            hold = starvation.plan_hold(self.index, key, pending, need, self.config,
                                        self.held_before, pinned, restrict=domain.mask)
            if hold is not None:
                return hold
        return None

    def reject(self, key: str, group: GroupState, pods: list[PodObserved], reason: str,
               is_unschedulable: bool = True, is_backoff: bool = True,
               with_left_out: bool = True) -> None:
        """Tell subscribers why `pods` wait, unless exactly this was told last time.

        `is_backoff`: the reason is a failed attempt, so the retry time is told with it (a
        group waiting for quorum or for its PodGroup waits for events, not for time).
        `with_left_out`: the members `_leave_out` left out of the gang this round are added to
        `pods` and their note to `reason`; False when `pods` are those members, told alone
        (`_tell_left_out`).
        """
        retry = backoff.retry_at_ms(group, self.config) if is_backoff else None
        if retry is not None and retry <= self.now:
            retry = None
        left = self.left_out.get(key) if with_left_out else None
        if left is not None:  # the members left out wait too, and are told why
            told = {pod.uid for pod in pods}
            pods = pods + [pod for pod in left[0] if pod.uid not in told]
            reason += left[1]
        memo = RejectionMemo(reason, tuple(pod.uid for pod in pods), retry)
        if group.last_rejection == memo:
            return
        group.last_rejection = memo
        self.derived.dirty.add(key)
        self.decisions.append(Rejection(
            id=self.next_id(), plan_seq=self.plan_seq, at_ms=self.now, group=key, reason=reason,
            pods=tuple(PodRef(pod.uid, pod.namespace, pod.name) for pod in pods),
            is_unschedulable=is_unschedulable, retry_at_ms=retry))

    def lift_hold(self) -> None:
        """Give the starving gang's and the nominations' held capacity back at the end of the
        round. A hold that ended or moved since the last round counts as capacity freed: a
        gang found unschedulable beside it may fit now, and nothing else would retry it before
        kube-scheduler's unschedulable flush (`backoff.UNSCHEDULABLE_FLUSH_MS`)."""
        state = self.state
        if self.holder_before is not None and (state.starving_group, state.starving_nodes) != (
                self.holder_before, self.held_before):
            capacity_freed(state)
        if self.hold is not None:
            starvation.lift_hold(self.index, self.hold)
            self.hold = None
        for key in sorted(self.nominated):
            nominations.give(self.index, self.nominated.pop(key))


def _utc(at_ms: int) -> str:
    """An event time as ISO-8601 UTC to the second (`2026-12-01T15:00:00Z`)."""
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _name(pod: PodObserved) -> str:
    return f"{pod.namespace}/{pod.name}"


def _nodes_reason(trial: placement.Trial, total: int) -> str:
    """Why the trial's first unplaced member fits no node of the `total` it was offered
    (`0/<total> nodes are available: ...`, or its PreScore error), with its note."""
    return (trial.error or reasons.node_reasons(total, trial.explanation or {})) + trial.note


def _short_reason(key: str, counts: quorum.Counts, min_member: int, need: int, pending: int,
                  placed: int, nodes: str) -> str:
    """Why a trial that placed `placed` of `pending` members, fewer than the `need` the group
    must place (0: quorum held, and none placed), leaves the group waiting: `nodes` alone for
    a singleton, else its gang reason."""
    if ids.is_singleton(ids.GroupKey(key)):
        return nodes
    if need == 0:
        return reasons.gang_extra_members(key, min_member, pending, nodes)
    return reasons.gang_members_fit(key, counts.held + placed, min_member, nodes,
                                    counts.succeeded)


def _priority_note(pending: list[PodObserved]) -> str:
    values = queue.priorities(pending)
    return reasons.priorities_differ(values, values[0]) if len(values) > 1 else ""


def _pending_changed(group: GroupState, pending: list[PodObserved]) -> bool:
    """Whether the group's pending members differ from those its last Rejection named."""
    told = group.last_rejection
    return told is not None and set(told.pods) != {pod.uid for pod in pending}
