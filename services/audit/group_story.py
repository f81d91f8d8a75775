"""How one PodGroup and its members fare (`explain_podgroup`).

Layer: audit (pure). Reads a chain (`story.chain`) of the PodGroup's events, its members'
events, its outcome events, its decisions and the Preemptions that evict its members
(published under the preemptor's group).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from services.audit import preemptions, summaries, times
from services.audit.story import Explanation, Item, Story
from services.contracts import ids
from services.contracts.decisions import Placement, Preemption, Rejection, StatusUpdate, Victim
from services.contracts.events import (
    GroupBound,
    GroupRolledBack,
    MemberBindFailed,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
)
from services.planner.rederive.rounds import LoggedEvent


@dataclass
class _GroupStory(Story):
    """The chain as it concerns one PodGroup and its members."""

    key: str = ""
    members: dict[str, PodObserved] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    in_flight: Placement | None = None
    rejection: Rejection | None = None
    preempting: Preemption | None = None
    preempted: tuple[Preemption, list[Victim]] | None = None
    latest: str = ""

    def read(self, item: Item) -> None:
        if isinstance(item, LoggedEvent):
            self.event(item)
        elif isinstance(item, Preemption):  # before the group filter: victims are of others
            self.preemption(item)
        elif item.group != self.key:
            return
        elif isinstance(item, Placement):
            self.placed(item)
        elif isinstance(item, Rejection):
            self.rejection, self.latest = item, "rejection"
            self.tell_rejection(item, f"{len(item.pods)} pod(s) waiting")
        elif isinstance(item, StatusUpdate):
            self.status_update(item)

    def event(self, item: LoggedEvent) -> None:
        event, ref = item.event, f"seq {item.seq}"
        if isinstance(event, PodGroupObserved | PodGroupDeleted):
            if ids.group_key(event.namespace, event.name) == self.key:
                self.podgroup_event(item)
        elif isinstance(event, PodObserved) and _key(event) == self.key:
            self.member(event, ref)
        elif isinstance(event, PodDeleted) and event.uid in self.members:
            self.gone.add(event.uid)
            self.tell(event.at_ms, ref, f"member {event.namespace}/{event.name} deleted")
        elif isinstance(event, GroupBound | GroupRolledBack) and event.group == self.key:
            if self.in_flight is not None and self.in_flight.id == event.decision_id:
                self.in_flight = None
            self.latest = "outcome"
            self.tell(event.at_ms, ref, summaries.outcome_summary(event, self.names()))
        elif isinstance(event, MemberBindFailed) and event.group == self.key:
            self.tell(event.at_ms, ref, summaries.outcome_summary(event, self.names()))

    def member(self, pod: PodObserved, ref: str) -> None:
        verb = "now" if pod.uid in self.members else "observed"
        self.members[pod.uid] = pod
        self.gone.discard(pod.uid)
        state = summaries.pod_state(pod)
        self.tell(pod.at_ms, ref, f"member {pod.name} {verb} {state}", f"pod:{pod.uid}", state)

    def placed(self, decision: Placement) -> None:
        self.in_flight, self.latest, self.last_reason = decision, "placement", ""
        self.tell(decision.at_ms, f"decision {decision.id}",
                  summaries.decision_summary(decision))

    def preemption(self, decision: Preemption) -> None:
        """Tell members evicted by another gang, or this gang's own preemption."""
        victims = preemptions.victims_of(decision, group=self.key)
        if victims:
            self.preempted, self.latest = (decision, victims), "preempted"
            self.tell(decision.at_ms, f"decision {decision.id}",
                      victims_text(decision, victims))
        elif decision.group == self.key:
            self.preempting, self.latest = decision, "preempting"
            self.tell(decision.at_ms, f"decision {decision.id}",
                      preemptions.preemptor_text(decision))

    def names(self) -> dict[str, str]:
        return {uid: f"{pod.namespace}/{pod.name}" for uid, pod in self.members.items()}

    def pending(self) -> list[PodObserved]:
        return [pod for uid, pod in sorted(self.members.items()) if uid not in self.gone
                and pod.node_name is None and pod.phase == "Pending"]


def victims_text(decision: Preemption, victims: list[Victim]) -> str:
    """`member(s) a, b preempted at <time> by gang ...; decision <id>` (`victim_text`)."""
    names = ", ".join(victim.name for victim in victims)
    return f"member(s) {names} {preemptions.victim_text(decision, victims)}"


def _key(pod: PodObserved) -> str:
    return ids.group_key(pod.namespace, pod.group_name) if pod.group_name else ""


def explain_podgroup(namespace: str, name: str, items: Sequence[Item]) -> Explanation:
    """Explain the PodGroup `namespace/name` from its chain (see `chain`)."""
    story = _GroupStory(key=ids.group_key(namespace, name))
    for item in items:
        story.read(item)
    title = f"PodGroup {story.key}"
    if story.podgroup is None and not story.members and story.rejection is None:
        return Explanation(title, story.steps, "never observed",
                           f"Unknown: PodGroup {story.key} does not appear in the log",
                           is_known=False)
    return Explanation(title, story.steps, _group_status(story), _group_verdict(story))


def _group_status(story: _GroupStory) -> str:
    phase = story.status.phase if story.status is not None else "Pending"
    live = [uid for uid in story.members if uid not in story.gone]
    minimum = story.podgroup.min_member if story.podgroup is not None else "?"
    bound = sum(1 for uid in live if story.members[uid].node_name)
    return (f"phase {phase}; minMember {minimum}; {len(live)} member(s) observed, {bound} bound, "
            f"{len(story.pending())} pending")


def _group_verdict(story: _GroupStory) -> str:
    if story.podgroup_deleted_ms is not None:
        return f"Deleted at {times.iso(story.podgroup_deleted_ms)}"
    phase = story.status.phase if story.status is not None else "Pending"
    if story.in_flight is not None and story.latest == "placement":
        placement = story.in_flight
        return (f"{phase}: placement {placement.id} of {len(placement.members)} member(s) "
                f"waits for the binder (deadline {times.iso(placement.deadline_ms)})")
    if story.preempted is not None and story.latest == "preempted":
        return f"{phase}: {victims_text(*story.preempted)}"
    if story.preempting is not None and story.latest == "preempting" and story.pending():
        return f"{phase}: {preemptions.preemptor_text(story.preempting)}"
    if story.pending() and story.rejection is not None:
        return f"{phase}: {story.rejection.reason}"
    return f"{phase}: {_counts(story, phase)}"


ENDED_BY = {"Finished": "succeeded", "Failed": "failed"}
"""The count of members an ended phase is named for."""


def _counts(story: _GroupStory, phase: str) -> str:
    """The members of the status (`StatusUpdate`) by phase, and the nodes of the members
    observed bound: an ended gang's (Finished, Failed) first the count its phase is named for,
    any other's first those running; then the other counts that are not 0, e.g.
    `4 member(s) succeeded (on n1, n2)`, `1 member(s) failed, 2 succeeded (on n1)`,
    `2 member(s) running on n1, n2`."""
    status = story.status
    counts = ({"running": status.running, "succeeded": status.succeeded,
               "failed": status.failed} if status is not None else {"running": 0})
    first = ENDED_BY.get(phase, "running")
    told = ", ".join([f"{counts[first]} member(s) {first}"] + [
        f"{count} {state}" for state, count in counts.items() if state != first and count])
    nodes = ", ".join(sorted({pod.node_name for uid, pod in story.members.items()
                              if pod.node_name and uid not in story.gone}))
    if not nodes:
        return told
    only_running = first == "running" and told == f"{counts[first]} member(s) running"
    return f"{told} on {nodes}" if only_running and counts[first] else f"{told} (on {nodes})"
