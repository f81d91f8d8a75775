"""The replay timeline: events → decisions → outcomes, filtered to a pod or PodGroup and a window.

Layer: audit (pure). `Timeline.entries` turns one replayed round into the entries to show, in
log order: the round's events (stream order; binder outcomes are `outcome` entries), then its
decisions (publication order). It remembers pod names and which placements concern the focus,
so later outcomes that carry only uids or decision ids are attributed correctly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from services.audit import summaries, times
from services.contracts import ids
from services.contracts.decisions import Decision, Placement, Preemption, Rejection
from services.contracts.events import (
    ClockTicked,
    Event,
    GroupBound,
    GroupRolledBack,
    MemberBindFailed,
    MemberBound,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
)
from services.planner.rederive.replay import RoundResult

OUTCOMES = (MemberBound, MemberBindFailed, GroupBound, GroupRolledBack)
"""The binder's outcome events (shown as `outcome` entries)."""


@dataclass(frozen=True)
class Entry:
    """One line of the timeline.

    `kind` is `event`, `outcome` or `decision`; `seq` the event's stream sequence or the
    decision's plan point; `name` the object (node, ns/name, group key). Units: `at_ms` UTC
    epoch milliseconds.
    """

    kind: str
    seq: int
    at_ms: int
    type: str
    name: str
    summary: str
    message: Event | Decision
    id: str = ""

    def to_json(self) -> dict[str, Any]:
        """The JSON-lines object of this entry (the full message under `message`)."""
        body: dict[str, Any] = {"kind": self.kind, "seq": self.seq, "at": times.iso(self.at_ms),
                                "at_ms": self.at_ms, "type": self.type, "name": self.name}
        if self.id:
            body["id"] = self.id
        body["summary"] = self.summary
        body["message"] = msgspec.to_builtins(self.message)
        return body


@dataclass(frozen=True)
class Window:
    """What to show: entries at or after `from_seq` and at or after `since_ms` (epoch ms)."""

    from_seq: int = 1
    since_ms: int | None = None

    def shows(self, seq: int, at_ms: int) -> bool:
        """Whether an entry at `seq` and `at_ms` (epoch ms) is in the window."""
        return seq >= self.from_seq and (self.since_ms is None or at_ms >= self.since_ms)


@dataclass
class Focus:
    """One pod or PodGroup (`kind` `pod` or `podgroup`, `namespace`/`name`) to follow.

    Shapes: `uids` the pod uids seen under the name (a recreated pod has a new uid);
    `decisions` the ids of placements that concern the focus.
    """

    kind: str
    namespace: str
    name: str
    uids: set[str] = field(default_factory=set)
    decisions: set[str] = field(default_factory=set)

    @property
    def group(self) -> str:
        """The group key followed (a pod's singleton group when following an unlabelled pod)."""
        if self.kind == "podgroup":
            return ids.group_key(self.namespace, self.name)
        return ids.singleton_key(self.namespace, self.name)

    def event_matches(self, event: Event) -> bool:
        """Whether `event` concerns the focus (remembering uids of its pods)."""
        match event:
            case PodObserved():
                if self._is_own_pod(event):
                    self.uids.add(event.uid)
                    return True
                return False
            case PodDeleted():
                return event.uid in self.uids
            case PodGroupObserved() | PodGroupDeleted():
                return self.kind == "podgroup" and (event.namespace, event.name) == (
                    self.namespace, self.name)
            case MemberBound() | MemberBindFailed():
                if self.kind == "podgroup":
                    return event.group == self.group
                return event.pod_uid in self.uids
            case GroupBound() | GroupRolledBack():
                return event.group == self.group or event.decision_id in self.decisions
            case _:
                return False

    def decision_matches(self, decision: Decision) -> bool:
        """Whether `decision` concerns the focus (remembering placements of it); a Preemption
        also concerns its victims' pods and groups."""
        if isinstance(decision, Preemption) and any(
                victim.uid in self.uids or victim.group == self.group
                for victim in decision.victims):
            return True
        if self.kind == "podgroup" or decision.group == self.group:
            return decision.group == self.group
        match decision:
            case Placement():
                if any(member.pod_uid in self.uids for member in decision.members):
                    self.decisions.add(decision.id)
                    return True
                return False
            case Rejection():
                return any(pod.uid in self.uids for pod in decision.pods)
            case Preemption():
                return any(member.pod_uid in self.uids for member in decision.nominated)
            case _:
                return False

    def _is_own_pod(self, pod: PodObserved) -> bool:
        if pod.namespace != self.namespace:
            return False
        if self.kind == "pod":
            return pod.name == self.name
        return pod.group_name == self.name


class Timeline:
    """Builds entries round by round (module docstring)."""

    def __init__(self, window: Window | None = None, focus: Focus | None = None,
                 show_ticks: bool = False) -> None:
        self.window = window or Window()
        self.focus = focus
        self.show_ticks = show_ticks
        """Clock ticks (one a second) are left out unless asked for: they only move time."""
        self.names: dict[str, str] = {}

    def entries(self, result: RoundResult) -> list[Entry]:
        """The entries of one replayed round that the window and focus show."""
        shown: list[Entry] = []
        for item in result.round.events:
            event = item.event
            if isinstance(event, PodObserved):
                self.names[event.uid] = f"{event.namespace}/{event.name}"
            if self.focus is not None and not self.focus.event_matches(event):
                continue
            if isinstance(event, ClockTicked) and not self.show_ticks:
                continue
            if self.window.shows(item.seq, event.at_ms):
                kind = "outcome" if isinstance(event, OUTCOMES) else "event"
                shown.append(Entry(kind, item.seq, event.at_ms, type(event).__name__,
                                   summaries.name_of(event),
                                   summaries.event_summary(event, self.names), event))
        for decision in result.derived:
            if self.focus is not None and not self.focus.decision_matches(decision):
                continue
            if self.window.shows(decision.plan_seq, decision.at_ms):
                shown.append(Entry("decision", decision.plan_seq, decision.at_ms,
                                   type(decision).__name__, decision.group,
                                   summaries.decision_summary(decision), decision, decision.id))
        return shown
