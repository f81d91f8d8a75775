"""The chain of an explanation: log items in order, steps told, and what all stories share.

Layer: audit (pure). An explanation is told from the recorded log alone: events by stream
sequence, a round's decisions after the events up to its plan point. Consecutive identical
facts (a reason repeated round after round, a pod observed unchanged) are told once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from services.audit import summaries, times
from services.contracts import ids
from services.contracts.decisions import Decision, Rejection, StatusUpdate
from services.contracts.events import PodGroupDeleted, PodGroupObserved
from services.planner.rederive.rounds import LoggedEvent

Item = LoggedEvent | Decision
"""One link of the chain: an event of the log or a recorded decision."""


@dataclass(frozen=True)
class Step:
    """One line of an explanation. Units: `at_ms` epoch ms; `ref` `seq 12` or `decision 12-0`."""

    at_ms: int
    ref: str
    text: str


@dataclass(frozen=True)
class Explanation:
    """The chain (`steps`, in log order), the current `status` and the one-line `verdict`."""

    title: str
    steps: list[Step]
    status: str
    verdict: str
    is_known: bool = True

    def lines(self) -> list[str]:
        """Human text: title, one line per step with its UTC time, status, verdict."""
        body = [f"{times.iso(s.at_ms)}  {s.text}  [{s.ref}]" for s in self.steps]
        return [self.title, *body, f"status: {self.status}", f"verdict: {self.verdict}"]


def chain(items: Iterable[Item]) -> list[Item]:
    """Events and decisions merged in log order (module docstring), each once."""
    keyed: dict[tuple[int, int, int], Item] = {}
    for item in items:
        if isinstance(item, LoggedEvent):
            keyed[(item.seq, 0, 0)] = item
        else:
            keyed[(item.plan_seq, 1, ids.decision_order(item.id)[1])] = item
    return [keyed[key] for key in sorted(keyed)]


@dataclass
class Story:
    """What the chain told so far, shared by pod and PodGroup explanations."""

    steps: list[Step] = field(default_factory=list)
    last_reason: str = ""
    last_text: dict[str, str] = field(default_factory=dict)
    podgroup: PodGroupObserved | None = None
    podgroup_deleted_ms: int | None = None
    status: StatusUpdate | None = None

    def tell(self, at_ms: int, ref: str, text: str, topic: str = "", value: str = "") -> None:
        """Add a step, unless `topic` last told the same `value` (default: the same text)."""
        if topic:
            value = value or text
            if self.last_text.get(topic) == value:
                return
            self.last_text[topic] = value
        self.steps.append(Step(at_ms, ref, text))

    def podgroup_event(self, item: LoggedEvent) -> None:
        """Tell a PodGroup observed (when it changed) or deleted."""
        event = item.event
        if isinstance(event, PodGroupObserved):
            self.podgroup, self.podgroup_deleted_ms = event, None
            self.tell(event.at_ms, f"seq {item.seq}",
                      "observed " + summaries.event_summary(event, {}), "podgroup")
        elif isinstance(event, PodGroupDeleted):
            self.podgroup_deleted_ms = event.at_ms
            self.tell(event.at_ms, f"seq {item.seq}", f"PodGroup {summaries.name_of(event)} "
                      "deleted", "podgroup")

    def tell_rejection(self, decision: Rejection, label: str) -> None:
        """Tell a reason once while it stays the same."""
        if decision.reason == self.last_reason:
            return
        self.last_reason = decision.reason
        retry = (f" (retry at {times.iso(decision.retry_at_ms)})"
                 if decision.retry_at_ms is not None else "")
        self.tell(decision.at_ms, f"decision {decision.id}",
                  f"{label}: {decision.reason}{retry}")

    def status_update(self, decision: StatusUpdate) -> None:
        """Remember the group's status; tell phase changes."""
        self.status = decision
        self.tell(decision.at_ms, f"decision {decision.id}",
                  f"PodGroup phase {decision.phase} (running {decision.running}, succeeded "
                  f"{decision.succeeded}, failed {decision.failed})", "phase")
