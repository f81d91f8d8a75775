"""NodeVolumeLimits over every node at once, for one planning round.

Layer: planner core (pure; NumPy). The rule is `services.fit.volume_limits`'; here it is
evaluated for the rows of the node index whose CSINode sets a limit (the others never fail),
counting the volumes of every pod bound or reserved on the row, whichever scheduler placed it
(`NodeIndex.volume_users`), and of the members of the same trial or search placed there before
(`volumes.Choices.placed`). Never reads a clock.

Cost: the counts are kept per row and driver as the index changes (`NodeIndex.volume_log`:
placement trials, preemption's removals), so judging a pod costs its own volumes and the rows
where they already are, not a pass over every pod: a gang of thousands with a claim each, on a
cluster of thousands of pods with claims, is judged in milliseconds per member.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from services.contracts.events import AttachmentObserved, PodObserved
from services.fit import volume_limits as rules
from services.fit.volumes import Book
from services.planner.core.capacity import BoolArray, IntArray, NodeIndex
from services.planner.core.state import PlannerState

NO_LIMIT = -1
"""`Limits.limit[driver][row]` where the row's CSINode sets no count for the driver."""


class _Tally:
    """The volumes the pods on each limited row use: per row, each volume's number of users
    (`users[row][name]`), the rows using each volume (`rows_of[name]`), and per driver the
    distinct volumes held on each row, counting those of VolumeAttachments no pod uses
    (`held[driver][row]`)."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.users: dict[int, dict[str, int]] = {}
        self.rows_of: dict[str, set[int]] = {}
        self.held: dict[str, list[int]] = {}
        self._arrays: dict[str, IntArray] = {}

    def add(self, driver: str, row: int, delta: int) -> None:
        """`delta` more distinct volumes of `driver` held on `row`."""
        held = self.held.get(driver)
        if held is None:
            held = self.held[driver] = [0] * self.rows
        held[row] += delta
        self._arrays.pop(driver, None)

    def count(self, driver: str) -> IntArray:
        """Per row, the distinct volumes of `driver` held (an array made once per change)."""
        found = self._arrays.get(driver)
        if found is None:
            found = self._arrays[driver] = np.array(self.held.get(driver, [0] * self.rows),
                                                    dtype=np.int64)
        return found

    def change(self, row: int, volumes: rules.Volumes, attached: rules.Volumes,
               delta: int) -> None:
        """A pod using `volumes` came to (`delta` 1) or left (-1) `row`, where VolumeAttachments
        hold `attached`."""
        on_row = self.users.setdefault(row, {})
        for name, driver in volumes.items():
            before = on_row.get(name, 0)
            after = before + delta
            if after:
                on_row[name] = after
            else:
                on_row.pop(name, None)
            if (before == 0) == (after == 0):
                continue
            if after:
                self.rows_of.setdefault(name, set()).add(row)
            else:
                self.rows_of[name].discard(row)
            if name not in attached:  # an attachment's volume is held either way
                self.add(driver, row, 1 if after else -1)


class Limits:
    """The volume limits of one round over `index` (CSINodes, VolumeAttachments and storage as
    `state` holds them), read from `state` when first needed (most rounds place no pod with
    volumes).

    Shapes: `limit[driver][row]` the most volumes of `driver` the row may have attached, or
    `NO_LIMIT`; `attached[row]` the volumes VolumeAttachments hold there
    (`rules.attachment_volumes`); one tally of every pod's volumes and one of other schedulers'
    pods only (`only_pinned`).
    """

    def __init__(self, state: PlannerState, index: NodeIndex, book: Book) -> None:
        self.index = index
        self.book = book
        self._state = state
        self._volumes: dict[str, rules.Volumes] = {}
        self.limit: dict[str, IntArray] = {}
        self.limited: set[int] = set()
        self.attached: dict[int, rules.Volumes] = {}
        self._tallies: dict[bool, tuple[_Tally, int]] = {}
        """Per `only_pinned`, its tally and how much of the index's log it has followed."""
        self._limits_read = False
        index.volume_log.clear()  # the tallies are rebuilt from `volume_users` when needed

    def _read_limits(self) -> None:
        """`limit`, `limited` and `attached` from the CSINodes and VolumeAttachments, and the
        volumes of every pod counted (kept from the last round where their storage is the
        same: `NodeIndex.volume_cache`)."""
        self._limits_read = True
        rows = len(self.index)
        for name, csinode in self._state.csinodes.items():
            row = self.index.row.get(name)
            if row is None:
                continue
            for driver, count in csinode.limits.items():
                self.limit.setdefault(driver, np.full(rows, NO_LIMIT, dtype=np.int64))[row] = count
                self.limited.add(row)
        by_node: dict[int, list[AttachmentObserved]] = {}
        for attachment in self._state.attachments.values():
            row = self.index.row.get(attachment.node)
            if row is not None and row in self.limited:
                by_node.setdefault(row, []).append(attachment)
        for row, found in by_node.items():
            self.attached[row] = rules.attachment_volumes(found, self._state.volumes)
        kept = self.index.volume_cache
        cache: dict[str, tuple[PodObserved, tuple[object, ...], rules.Volumes]] = {}
        for uid, (row, pod, _) in self.index.volume_users.items():
            if row not in self.limited:
                continue
            read = self._read_from(pod)
            held = kept.get(uid)
            if held is not None and held[0] is pod and len(held[1]) == len(read) and all(
                    old is new for old, new in zip(held[1], read, strict=True)):
                self._volumes[uid] = held[2]
            cache[uid] = (pod, read, self.volumes(pod))
        self.index.volume_cache = cache  # only pods still counted: none is kept for good

    def _tally(self, only_pinned: bool) -> _Tally:
        """The tally of every pod, or of other schedulers' only, built when first needed and
        brought up to date with the index's changes since it was last read."""
        log = self.index.volume_log
        found = self._tallies.get(only_pinned)
        if found is None:
            tally = _Tally(len(self.index))
            for row, volumes in self.attached.items():
                for driver in volumes.values():
                    tally.add(driver, row, 1)
            for row, pod, is_ours in self.index.volume_users.values():
                self._change(tally, only_pinned, row, pod, is_ours, 1)
        else:
            tally = found[0]
            for row, pod, is_ours, delta in log[found[1]:]:
                self._change(tally, only_pinned, row, pod, is_ours, delta)
        self._tallies[only_pinned] = (tally, len(log))
        return tally

    def _change(self, tally: _Tally, only_pinned: bool, row: int, pod: PodObserved,
                is_ours: bool, delta: int) -> None:
        if row in self.limited and not (only_pinned and is_ours):
            tally.change(row, self.volumes(pod), self.attached.get(row, {}), delta)

    def _read_from(self, pod: PodObserved) -> tuple[object, ...]:
        """The storage objects `pod`'s volumes are read from (`rules.pod_volumes`): each
        claim, its volume and its class, as held now (None where absent). Observations are
        replaced, never changed, so the same objects give the same volumes."""
        found: list[object] = []
        for ref in pod.volume_claims:
            claim = self.book.claim(pod.namespace, ref.name)
            found.append(claim)
            if claim is not None:
                found.append(self.book.volumes.get(claim.volume_name))
                found.append(self.book.classes.get(claim.storage_class))
        return tuple(found)

    def volumes(self, pod: PodObserved) -> rules.Volumes:
        """The volumes `pod` counts on a node with a CSINode (every row with a limit has one),
        cached for the round (storage does not change within it)."""
        found = self._volumes.get(pod.uid)
        if found is None:
            found = self._volumes[pod.uid] = rules.pod_volumes(pod, self.book, True)
        return found

    def is_active(self, pod: PodObserved) -> bool:
        """Whether some row limits a driver `pod` has a volume of."""
        if not (pod.volume_claims or pod.migrated_volumes) or not self._state.csinodes:
            return False
        if not self._limits_read:
            self._read_limits()
        return any(driver in self.limit for driver in self.volumes(pod).values())

    def class_columns(self, members: Iterable[PodObserved]) -> list[IntArray]:
        """Per row, what tells rows apart for the limits of `members`' drivers: the limit, the
        volumes held, and whether one of their volumes is used there already (rows alike in
        all of these take the same members' volumes alike: the search's row classes)."""
        columns: list[IntArray] = []
        wanted: dict[str, set[str]] = {}
        for pod in members:
            if self.is_active(pod):
                for name, driver in self.volumes(pod).items():
                    wanted.setdefault(driver, set()).add(name)
        if not wanted:
            return columns
        tally = self._tally(False)
        for driver, names in sorted(wanted.items()):
            if driver not in self.limit:
                continue
            columns += [self.limit[driver], tally.count(driver)]
            used = np.zeros(len(self.index), dtype=np.int64)
            for number, name in enumerate(sorted(names), start=1):
                for row in tally.rows_of.get(name, ()):
                    used[row] = used[row] * (len(names) + 1) + number
            columns.append(used)
        return columns

    def exceeded(self, pod: PodObserved, placed: Iterable[tuple[int, PodObserved]] = (),
                 only_pinned: bool = False) -> BoolArray:
        """Rows where `pod`'s volumes would exceed a driver's limit, given the pods bound or
        reserved there (`only_pinned`: other schedulers' only) and the members `placed` (row,
        pod) before it (`rules.exceeds` on every limited row at once)."""
        rows = np.zeros(len(self.index), dtype=np.bool_)
        if not self.is_active(pod):
            return rows
        tally = self._tally(only_pinned)
        new = self.volumes(pod)
        own = self._own_row(pod, only_pinned)
        alone = ({name for name, users in tally.users.get(own, {}).items()
                  if users == 1 and name in new} if own is not None else set())
        extra = self._placed(pod, placed, tally, own, alone)
        for driver, limit in sorted(self.limit.items()):
            names = {name for name, of in new.items() if of == driver}
            if not names:
                continue
            wanted = np.full(len(self.index), len(names), dtype=np.int64)
            for name in names:  # used there by a pod already: not new
                for row in tally.rows_of.get(name, ()):
                    wanted[row] -= 1
            held = tally.count(driver).copy()
            if own is not None:  # the pod itself is counted there: not as another pod
                attached = self.attached.get(own, {})
                for name in names & alone:
                    wanted[own] += 1
                    held[own] -= name not in attached
            for row, theirs in extra.items():
                attached = self.attached.get(row, {})
                for name, of in theirs.items():
                    if of == driver:
                        held[row] += name not in attached  # (an attachment's counts already)
                        wanted[row] -= name in names
            rows |= (limit != NO_LIMIT) & (wanted > 0) & (held + wanted > limit)
        return rows

    def _own_row(self, pod: PodObserved, only_pinned: bool) -> int | None:
        """The limited row the tally counts `pod` itself on, if any (a pod judged while it is
        bound or reserved: kube-scheduler's NodeInfo never holds the pod it schedules)."""
        found = self.index.volume_users.get(pod.uid)
        if found is None or found[0] not in self.limited or (only_pinned and found[2]):
            return None
        return found[0]

    def _placed(self, pod: PodObserved, placed: Iterable[tuple[int, PodObserved]],
                tally: _Tally, own: int | None, alone: set[str]) -> dict[int, rules.Volumes]:
        """Per limited row, the volumes members placed before `pod` use there that no pod of
        the tally but `pod` itself (on row `own`, the only user of `alone`) does (a member a
        trial took is in the index already, one the search placed is not)."""
        extra: dict[int, rules.Volumes] = {}
        for row, other in placed:
            if other.uid == pod.uid or row not in self.limited:
                continue
            held = tally.users.get(row, {})
            for name, driver in self.volumes(other).items():
                if name not in held or (row == own and name in alone):
                    extra.setdefault(row, {})[name] = driver
        return extra
