"""Counting a group's members for quorum: bound + reserved + pending against minMember.

Layer: planner core (pure). Succeeded/Failed members, terminating members and scheduling-gated
pods never count; pods of other schedulers carrying the label do not count either.
"""

from __future__ import annotations

from typing import NamedTuple

from services.planner.core.derived import Derived


class Counts(NamedTuple):
    """How a group's pods of ours stand (numbers of pods)."""

    bound: int
    reserved: int
    pending: int
    gated: int

    @property
    def usable(self) -> int:
        """Members that count toward quorum."""
        return self.bound + self.reserved + self.pending


def count(derived: Derived, group: str) -> Counts:
    """Count the group's members by class."""
    bound = reserved = pending = gated = 0
    classes = derived.pod_class
    for uid in derived.members.get(group, ()):
        pod_class = classes[uid]
        if pod_class == "bound":
            bound += 1
        elif pod_class == "reserved":
            reserved += 1
        elif pod_class == "pending":
            pending += 1
        elif pod_class == "gated":
            gated += 1
    return Counts(bound, reserved, pending, gated)


def has_quorum(counts: Counts, min_member: int) -> bool:
    """Whether enough members exist to place the gang (DESIGN §3 Quorum)."""
    return counts.usable >= min_member


def is_stranded(counts: Counts, min_member: int) -> bool:
    """Whether the group has members bound but fewer bound and reserved than minMember: a
    partial gang at rest (a rollback that could not unbind its bare pods, or bound members
    lost), holding capacity no complete gang uses until it completes (issue 20)."""
    return counts.bound > 0 and counts.bound + counts.reserved < min_member


def still_needed(counts: Counts, min_member: int) -> int:
    """How many pending members one placement must include (0 once quorum is held)."""
    return max(0, min_member - counts.bound - counts.reserved)
