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
        self.held: dict[str, IntArray] = {}

    def count(self, driver: str) -> IntArray:
        found = self.held.get(driver)
        if found is None:
            found = self.held[driver] = np.zeros(self.rows, dtype=np.int64)
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
                self.count(driver)[row] += 1 if after else -1


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
        self._tallies: tuple[_Tally, _Tally] | None = None
        self._seen = 0
        index.volume_log.clear()  # the tallies are rebuilt from `volume_users` when needed

    def _build(self) -> tuple[_Tally, _Tally]:
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
        every, pinned = _Tally(rows), _Tally(rows)
        for tally in (every, pinned):
            for row, volumes in self.attached.items():
                for driver in volumes.values():
                    tally.count(driver)[row] += 1
        for row, pod, is_ours in self.index.volume_users.values():
            self._change(every, pinned, row, pod, is_ours, 1)
        self._seen = len(self.index.volume_log)
        return every, pinned

    def _change(self, every: _Tally, pinned: _Tally, row: int, pod: PodObserved,
                is_ours: bool, delta: int) -> None:
        if row not in self.limited:
            return
        volumes = self.volumes(pod)
        attached = self.attached.get(row, {})
        every.change(row, volumes, attached, delta)
        if not is_ours:
            pinned.change(row, volumes, attached, delta)

    def _tally(self, only_pinned: bool) -> _Tally:
        """The tally, brought up to date with the index's changes since it was last read."""
        if self._tallies is None:
            self._tallies = self._build()
        every, pinned = self._tallies
        log = self.index.volume_log
        for row, pod, is_ours, delta in log[self._seen:]:
            self._change(every, pinned, row, pod, is_ours, delta)
        self._seen = len(log)
        return pinned if only_pinned else every

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
        self._tally(False)
        return any(driver in self.limit for driver in self.volumes(pod).values())

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
