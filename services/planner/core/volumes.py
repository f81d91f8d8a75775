"""The volume filters over every node at once: VolumeRestrictions, NodeVolumeLimits,
VolumeBinding, VolumeZone.

Layer: planner core (pure; NumPy). The rules are `services.fit.volumes`',
`services.fit.disks`' and `services.fit.volume_limits`' (`volume_limits.Limits`); here they are
evaluated for all rows of the node index, and for the members of one placement trial or
whole-gang search together (`Choices`): a claim used ReadWriteOncePod by a member is in use for
the members after it, an inline disk a member mounts on a node conflicts there with the members
after it, a member's volumes count toward a node's limits for the members after it, a static
PersistentVolume one member's claim takes is taken for every other claim, and a
WaitForFirstConsumer claim two members share is bound by the first one's choice (its volume, or
its node for provisioning). Only active for pods with claims, inline disks or migrated inline
volumes (`is_judged`). Never reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from services.contracts.decisions import VolumeChoice
from services.contracts.events import ClaimObserved, PodObserved, VolumeObserved
from services.fit import disks, reasons
from services.fit import volumes as rules
from services.planner.core.capacity import BoolArray, IntArray, NodeIndex
from services.planner.core.state import PlannerState
from services.planner.core.volume_limits import Limits


class Choice:
    """What a member's unbound WaitForFirstConsumer claim gets on its node: a static volume to
    bind (`volume`), or dynamic provisioning there (`volume` "")."""

    def __init__(self, claim: str, volume: str, node: str) -> None:
        self.claim = claim
        self.volume = volume
        self.node = node


class Choices:
    """The choices of the members placed so far in one trial or search path.

    Shapes: `claims` claim key → its Choice; `taken` volume names chosen; `exclusive` keys of
    ReadWriteOncePod claims members use; `placed` (row, member) for each member the volume
    filters judge (`is_judged`), in placement order; `disk_holders` the same for the members
    with inline disks, by disk (kind, name).
    """

    def __init__(self) -> None:
        self.claims: dict[str, Choice] = {}
        self.taken: set[str] = set()
        self.exclusive: set[str] = set()
        self.placed: list[tuple[int, PodObserved]] = []
        self.disk_holders: dict[tuple[str, str], list[tuple[int, PodObserved]]] = {}


class Verdict:
    """The volume filters of one pod over every row.

    Shapes: `mask[row]` True when the row passes; `reasons` (reason, rows) for the rows that
    fail, each row under the first plugin that rejects it (VolumeRestrictions: a disk conflict
    before a ReadWriteOncePod one, as its Filter checks them; NodeVolumeLimits; VolumeBinding,
    which may give two reasons; then VolumeZone).
    """

    def __init__(self, mask: BoolArray, failing: list[tuple[str, BoolArray]]) -> None:
        self.mask = mask
        self.reasons = failing


class Volumes:
    """The volume filters for one planning round over `index` (storage as `state` holds it)."""

    def __init__(self, state: PlannerState, index: NodeIndex) -> None:
        self.book = rules.Book(state.claims, state.volumes, state.storage_classes)
        self.index = index
        self.limits = Limits(state, index, self.book)
        self._affinity: dict[str, BoolArray] = {}
        self._provision: dict[str, BoolArray] = {}
        self._bound: dict[tuple[object, ...], Verdict] = {}

    def prefilter(self, pod: PodObserved) -> str | None:
        """The pod-level reason that keeps `pod` off every node (`rules.prefilter`)."""
        return rules.prefilter(pod, self.book) if pod.volume_claims else None

    def is_mutual(self, pod: PodObserved) -> bool:
        """Whether members placed before `pod` may change its verdict: it has inline disks, a
        volume of a driver some node limits, a ReadWriteOncePod claim or an unbound
        WaitForFirstConsumer claim."""
        return bool(pod.disks) or self.limits.is_active(pod) or (bool(pod.volume_claims) and (
            bool(rules.read_write_once_pod_claims(pod, self.book)) or bool(self.unbound(pod))))

    def unbound(self, pod: PodObserved) -> list[ClaimObserved]:
        """The pod's unbound WaitForFirstConsumer claims, smallest request first (as
        `byPVCSize`; ties by name)."""
        found = [claim for _, claim in rules.claims_of(pod, self.book)
                 if not rules.is_fully_bound(claim) and not claim.volume_name
                 and self.book.is_delay_binding(claim)]
        return sorted(found, key=lambda c: (c.request_bytes, c.name))

    def affinity_rows(self, volume: VolumeObserved) -> BoolArray:
        """Rows whose labels match the volume's required node affinity (cached per round)."""
        rows = self._affinity.get(volume.name)
        if rows is None and volume.node_affinity is None:  # every node
            rows = self._affinity[volume.name] = np.ones(len(self.index), dtype=np.bool_)
        if rows is None:
            rows = self._affinity[volume.name] = np.fromiter(
                (rules.node_affinity_matches(volume, node) for node in self.index.nodes),
                dtype=np.bool_, count=len(self.index))
        return rows

    def verdict(self, pod: PodObserved, choices: Choices | None = None,
                only_pinned: bool = False) -> Verdict:
        """The volume filters for `pod` given the members placed before it (`choices`);
        `only_pinned`: as if gangsched's own pods had left every node (the anti-starvation
        hold's emptied nodes: other schedulers' pods stay)."""
        count = len(self.index)
        if not is_judged(pod) or not count:
            return Verdict(np.ones(count, dtype=np.bool_), [])
        claims = self._claims_verdict(pod, choices, only_pinned)
        if not any(reason == reasons.READ_WRITE_ONCE_POD_CONFLICT for reason, _ in claims.reasons):
            # (a claim in use ReadWriteOncePod fails every row before NodeVolumeLimits runs)
            placed = choices.placed if choices is not None else ()
            claims = _first(claims, reasons.MAX_VOLUME_COUNT,
                            self.limits.exceeded(pod, placed, only_pinned))
        if pod.disks:
            claims = _first(claims, reasons.DISK_CONFLICT,
                            self.disk_rows(pod, choices, only_pinned))
        return claims

    def disk_rows(self, pod: PodObserved, choices: Choices | None = None,
                  only_pinned: bool = False) -> BoolArray:
        """Rows where a pod bound or reserved there, whichever scheduler placed it (`only_pinned`:
        another scheduler's), or a member placed before `pod` (`choices`) mounts one of its
        inline disks so that they conflict (`disks.conflict`): VolumeRestrictions'
        `satisfyVolumeConflicts`. Cost: the holders of the pod's own disks only."""
        rows = np.zeros(len(self.index), dtype=np.bool_)
        for disk in pod.disks:
            identity = (disk.kind, disk.name)
            holders = [(row, other) for uid, (row, other, is_ours)
                       in self.index.disk_holders.get(identity, {}).items()
                       if uid != pod.uid and not (only_pinned and is_ours)]
            if choices is not None:
                holders += [(row, other) for row, other in choices.disk_holders.get(identity, ())
                            if other.uid != pod.uid]
            for row, other in holders:
                if not rows[row] and any(disks.conflict(disk, theirs) for theirs in other.disks):
                    rows[row] = True
        return rows

    def _claims_verdict(self, pod: PodObserved, choices: Choices | None,
                        only_pinned: bool) -> Verdict:
        """The filters of `pod`'s claims: ReadWriteOncePod, VolumeBinding, VolumeZone."""
        count = len(self.index)
        if not pod.volume_claims:
            return Verdict(np.ones(count, dtype=np.bool_), [])
        exclusive = rules.read_write_once_pod_claims(pod, self.book)
        if exclusive and (self._in_use(pod, exclusive, only_pinned)
                          or (choices is not None and exclusive & choices.exclusive)):
            return Verdict(np.zeros(count, dtype=np.bool_),
                           [(reasons.READ_WRITE_ONCE_POD_CONFLICT, np.ones(count, np.bool_))])
        bound = self._bound_verdict(pod)
        unbound = self.unbound(pod)
        if not unbound:
            return bound
        return _merge(bound, ~self._binds_rows(unbound, choices))

    def _in_use(self, pod: PodObserved, exclusive: set[str], only_pinned: bool) -> bool:
        """Whether another pod bound or reserved uses one of the claims (VolumeRestrictions
        counts every scheduled pod, whichever scheduler placed it; `only_pinned`: another
        scheduler's)."""
        return any(uid != pod.uid and not (only_pinned and is_ours)
                   and rules.claim_keys(other) & exclusive
                   for uid, (_, other, is_ours) in self.index.volume_users.items())

    def _bound_verdict(self, pod: PodObserved) -> Verdict:
        """VolumeBinding's bound claims, then VolumeZone (cached per claims of a namespace)."""
        key = (pod.namespace, pod.volume_claims)
        cached = self._bound.get(key)
        if cached is not None:
            return cached
        count = len(self.index)
        ok = np.ones(count, dtype=np.bool_)
        failing: list[tuple[str, BoolArray]] = []
        conflict = np.zeros(count, dtype=np.bool_)
        for _, claim in rules.claims_of(pod, self.book):
            if not rules.is_fully_bound(claim):
                continue
            volume = self.book.volumes.get(claim.volume_name)
            if volume is None:
                missing = ok & ~conflict
                failing.append((reasons.BOUND_VOLUME_MISSING, missing))
                break
            conflict |= ok & ~self.affinity_rows(volume)
        if conflict.any():
            failing.insert(0, (reasons.VOLUME_NODE_AFFINITY_CONFLICT, conflict))
        for _, rows in failing:
            ok &= ~rows
        zone = ok & ~self._zone_rows(rules.zone_sets(pod, self.book))
        if zone.any():
            failing.append((reasons.VOLUME_ZONE_CONFLICT, zone))
            ok &= ~zone
        cached = self._bound[key] = Verdict(ok, failing)
        return cached

    def _zone_rows(self, zones: list[tuple[str, frozenset[str]]]) -> BoolArray:
        """Rows VolumeZone lets through for these volume zone sets."""
        if not zones:
            return np.ones(len(self.index), dtype=np.bool_)
        return np.array([rules.zone_reason(zones, node) is None for node in self.index.nodes],
                        dtype=np.bool_).reshape(len(self.index))

    def _binds_on(self, unbound: list[ClaimObserved], row: int, choices: Choices | None,
                  record: Callable[[Choice], None] | None = None) -> bool:
        """Whether every unbound claim finds a volume or may be provisioned on `row`
        (`FindPodVolumes`; `record` gets each choice when it does)."""
        node = self.index.nodes[row]
        excluded = set(choices.taken) if choices is not None else set()
        made: list[Choice] = []
        for claim in unbound:
            key = rules.claim_key(claim.namespace, claim.name)
            earlier = choices.claims.get(key) if choices is not None else None
            if earlier is not None:
                if earlier.volume:
                    volume = self.book.volumes.get(earlier.volume)
                    if volume is None or not self.affinity_rows(volume)[row]:
                        return False
                elif earlier.node != node.name:
                    return False
                continue
            if claim.selected_node:
                if claim.selected_node != node.name or not rules.can_provision(
                        self.book.classes.get(claim.storage_class), node):
                    return False
                made.append(Choice(key, "", node.name))
                continue
            volume = rules.find_matching_volume(claim, self.candidates(claim), node, excluded)
            if volume is not None:
                excluded.add(volume.name)
                made.append(Choice(key, volume.name, node.name))
            elif rules.can_provision(self.book.classes.get(claim.storage_class), node):
                made.append(Choice(key, "", node.name))
            else:
                return False
        if record is not None:
            for choice in made:
                record(choice)
        return True

    def _binds_rows(self, unbound: list[ClaimObserved], choices: Choices | None) -> BoolArray:
        """`_binds_on` for every row at once: per claim, the pre-bound volumes decide first
        (name order), then the matching volumes smallest first take the rows they reach and
        no earlier claim of the pod took there; rows left must allow provisioning."""
        count = len(self.index)
        ok = np.ones(count, dtype=np.bool_)
        excluded = choices.taken if choices is not None else set()
        taken: dict[str, BoolArray] = {}
        for claim in unbound:
            key = rules.claim_key(claim.namespace, claim.name)
            earlier = choices.claims.get(key) if choices is not None else None
            if earlier is not None:
                ok &= self._chosen_rows(earlier)
                continue
            provision = self._provision_rows(claim)
            if claim.selected_node:
                ok &= self._name_rows(claim.selected_node) & provision
                continue
            undecided = np.ones(count, dtype=np.bool_)
            found = np.zeros(count, dtype=np.bool_)
            for volume, match in self._matches(claim):
                if volume.name in excluded:
                    continue
                free = undecided & ~taken.get(volume.name, np.zeros(count, dtype=np.bool_))
                reached = free & self.affinity_rows(volume)
                if match == rules.PRE_BOUND:
                    undecided &= ~free
                else:
                    undecided &= ~reached
                found |= reached
                taken[volume.name] = taken.get(volume.name, reached) | reached
            ok &= found | provision
        return ok

    def _matches(self, claim: ClaimObserved) -> list[tuple[VolumeObserved, str]]:
        """The claim's candidates with how each may serve it: pre-bound ones first (name
        order), then the others smallest first (ties by name)."""
        found = [(volume, match) for volume in self.candidates(claim)
                 if (match := rules.volume_match(claim, volume)) is not None]
        return sorted(found, key=lambda item: (item[1] != rules.PRE_BOUND,
                                               0 if item[1] == rules.PRE_BOUND
                                               else item[0].capacity_bytes, item[0].name))

    def _chosen_rows(self, earlier: Choice) -> BoolArray:
        """Rows a claim an earlier member chose for can still be used from: its volume's
        reach, or the node it is provisioned on."""
        if not earlier.volume:
            return self._name_rows(earlier.node)
        volume = self.book.volumes.get(earlier.volume)
        if volume is None:
            return np.zeros(len(self.index), dtype=np.bool_)
        return self.affinity_rows(volume)

    def _name_rows(self, name: str) -> BoolArray:
        rows = np.zeros(len(self.index), dtype=np.bool_)
        row = self.index.row.get(name)
        if row is not None:
            rows[row] = True
        return rows

    def _provision_rows(self, claim: ClaimObserved) -> BoolArray:
        """Rows the claim's class may provision a volume for (`rules.can_provision`; cached
        per class for the round)."""
        rows = self._provision.get(claim.storage_class)
        if rows is None:
            storage_class = self.book.classes.get(claim.storage_class)
            rows = self._provision[claim.storage_class] = np.fromiter(
                (rules.can_provision(storage_class, node) for node in self.index.nodes),
                dtype=np.bool_, count=len(self.index))
        return rows

    def candidates(self, claim: ClaimObserved) -> list[VolumeObserved]:
        """The volumes of the claim's class (as `pvCache.ListPVs`)."""
        return [volume for volume in self.book.volumes.values()
                if volume.storage_class == claim.storage_class]

    def place(self, pod: PodObserved, row: int, choices: Choices) -> list[Choice]:
        """Record what `pod` takes on `row` in `choices` (its verdict there must pass); the
        choices made for its unbound claims, in claim order."""
        made: list[Choice] = []
        if is_judged(pod):
            choices.placed.append((row, pod))
        for identity in {(disk.kind, disk.name) for disk in pod.disks}:
            choices.disk_holders.setdefault(identity, []).append((row, pod))
        if not pod.volume_claims:
            return made
        choices.exclusive |= rules.read_write_once_pod_claims(pod, self.book)

        def record(choice: Choice) -> None:
            made.append(choice)
            choices.claims[choice.claim] = choice
            if choice.volume:
                choices.taken.add(choice.volume)

        self._binds_on(self.unbound(pod), row, choices, record)
        return made


def is_judged(pod: PodObserved) -> bool:
    """Whether the volume filters have anything to judge of `pod`: claims, inline disks or
    migrated inline volumes."""
    return bool(pod.volume_claims or pod.disks or pod.migrated_volumes)


def _first(verdict: Verdict, reason: str, rows: BoolArray) -> Verdict:
    """`verdict` with `rows` failing for `reason`, judged before every reason it has (a filter
    that runs before theirs): each row stays under the first reason that rejects it."""
    if not rows.any():
        return verdict
    later = [(name, found & ~rows) for name, found in verdict.reasons if (found & ~rows).any()]
    return Verdict(verdict.mask & ~rows, [(reason, rows), *later])


def decided(made: Iterable[Choice]) -> tuple[VolumeChoice, ...]:
    """A member's choices as the Placement carries them (claim names in its namespace)."""
    return tuple(VolumeChoice(choice.claim.split("/", 1)[1], choice.volume) for choice in made)


def _merge(bound: Verdict, bind_conflict: BoolArray) -> Verdict:
    """`bound` with the unbound claims' BindConflict rows: VolumeBinding reports it beside a
    node affinity conflict on the same row; VolumeZone only judges rows VolumeBinding passed."""
    failing: list[tuple[str, BoolArray]] = []
    zone_rows: BoolArray | None = None
    for reason, rows in bound.reasons:
        if reason == reasons.VOLUME_ZONE_CONFLICT:
            zone_rows = rows & ~bind_conflict
        else:
            failing.append((reason, rows))
    if bind_conflict.any():
        failing.append((reasons.VOLUME_BIND_CONFLICT, bind_conflict))
    if zone_rows is not None and zone_rows.any():
        failing.append((reasons.VOLUME_ZONE_CONFLICT, zone_rows))
    return Verdict(bound.mask & ~bind_conflict, failing)


def counts(verdict: Verdict, passing: BoolArray) -> dict[str, int]:
    """Per reason, the `passing` rows (those the filters before the volume ones passed) that
    `verdict` rejects, as FailedScheduling counts them."""
    found: dict[str, int] = {}
    for reason, rows in verdict.reasons:
        number = int((rows & passing).sum())
        if number:
            found[reason] = found.get(reason, 0) + number
    return found


def classes(volumes: Volumes, members: list[PodObserved]) -> IntArray:
    """Per row, a class equal for rows the members' volume filters cannot tell apart: the same
    static verdict for every member, the same candidate volumes' node affinity, and the same
    room for their volumes under the nodes' attach limits (`Limits.class_columns`)."""
    columns = [np.zeros(len(volumes.index), dtype=np.int64),
               *volumes.limits.class_columns(members)]
    seen: set[str] = set()
    for pod in members:
        columns.append(volumes.verdict(pod).mask.astype(np.int64))
        for claim in volumes.unbound(pod):
            for volume in volumes.candidates(claim):
                if volume.name not in seen:
                    seen.add(volume.name)
                    columns.append(volumes.affinity_rows(volume).astype(np.int64))
    result: IntArray = np.unique(np.column_stack(columns), axis=0,
                                 return_inverse=True)[1].reshape(-1).astype(np.int64)
    return result
