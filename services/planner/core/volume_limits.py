"""NodeVolumeLimits over every node at once, for one planning round.

Layer: planner core (pure; NumPy). The rule is `services.fit.volume_limits`'; here it is
evaluated for the rows of the node index whose CSINode sets a limit (the others never fail),
counting the volumes of every pod bound or reserved on the row, whichever scheduler placed it
(`NodeIndex.volume_users`), and of the members of the same trial or search placed there before
(`volumes.Choices.placed`). Never reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from services.contracts.events import AttachmentObserved, PodObserved
from services.fit import volume_limits as rules
from services.fit.volumes import Book
from services.planner.core.capacity import BoolArray, NodeIndex
from services.planner.core.state import PlannerState


class Limits:
    """The volume limits of one round over `index` (CSINodes, VolumeAttachments and storage as
    `state` holds them).

    Shapes: `limits[row]` driver → most volumes attached, for the rows that have any;
    `attached[row]` the volumes VolumeAttachments hold there (`rules.attachment_volumes`). Both
    are read from `state` when first needed (most rounds place no pod with volumes).
    """

    def __init__(self, state: PlannerState, index: NodeIndex, book: Book) -> None:
        self.index = index
        self.book = book
        self._state = state
        self._limits: dict[int, dict[str, int]] | None = None
        self.attached: dict[int, rules.Volumes] = {}
        self._volumes: dict[str, rules.Volumes] = {}

    @property
    def limits(self) -> dict[int, dict[str, int]]:
        """Per row with a CSINode that sets any count, driver → count."""
        if self._limits is None:
            self._limits = {}
            for name, csinode in self._state.csinodes.items():
                row = self.index.row.get(name)
                if row is not None and csinode.limits:
                    self._limits[row] = dict(csinode.limits)
            by_node: dict[int, list[AttachmentObserved]] = {}
            for attachment in self._state.attachments.values():
                row = self.index.row.get(attachment.node)
                if row is not None and row in self._limits:
                    by_node.setdefault(row, []).append(attachment)
            self.attached = {row: rules.attachment_volumes(found, self._state.volumes)
                             for row, found in by_node.items()}
        return self._limits

    def volumes(self, pod: PodObserved) -> rules.Volumes:
        """The volumes `pod` counts on a node with a CSINode (every row with a limit has one),
        cached for the round (storage does not change within it)."""
        found = self._volumes.get(pod.uid)
        if found is None:
            found = self._volumes[pod.uid] = rules.pod_volumes(pod, self.book, True)
        return found

    def is_active(self, pod: PodObserved) -> bool:
        """Whether some row limits a driver `pod` has a volume of."""
        if not self.limits:
            return False
        drivers = set(self.volumes(pod).values())
        return any(drivers & limits.keys() for limits in self.limits.values())

    def exceeded(self, pod: PodObserved,
                 placed: Iterable[tuple[int, PodObserved]] = ()) -> BoolArray:
        """Rows where `pod`'s volumes would exceed a driver's limit, given the pods bound or
        reserved there and the members `placed` (row, pod) before it."""
        rows = np.zeros(len(self.index), dtype=np.bool_)
        limited = self.limits
        new = self.volumes(pod) if limited else {}
        drivers = set(new.values())
        if not drivers:
            return rows
        users: dict[int, list[PodObserved]] = {}
        for uid, (row, other, _) in self.index.volume_users.items():
            if uid != pod.uid and row in limited:
                users.setdefault(row, []).append(other)
        for row, other in placed:
            if other.uid != pod.uid and row in limited:
                users.setdefault(row, []).append(other)
        for row, limits in limited.items():
            if not drivers & limits.keys():
                continue
            attached: rules.Volumes = {}
            for other in users.get(row, ()):
                attached.update(self.volumes(other))
            rows[row] = rules.exceeds(new, attached, self.attached.get(row, {}), limits)
        return rows
