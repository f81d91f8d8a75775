"""Why one pod waits, or where and when it was placed (`explain_pod`).

Layer: audit (pure). Reads a chain (`story.chain`) of the pod's events, its group's PodGroup
and outcome events, the group's decisions and the Preemptions that evict the pod (published
under the preemptor's group); a pod recreated under the same name (new uid) starts its story
again.
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
    MemberBound,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
)
from services.planner.rederive.rounds import LoggedEvent


@dataclass
class _PodStory(Story):
    """The chain as it concerns one pod."""

    namespace: str = ""
    name: str = ""
    group: str = ""
    uids: set[str] = field(default_factory=set)
    pod: PodObserved | None = None
    deleted_ms: int | None = None
    bound_ms: int | None = None
    bound_told: str | None = None
    """The decision whose bind of this pod was told (by its MemberBound, in older logs)."""
    placement: tuple[Placement, str] | None = None
    rolled_back: GroupRolledBack | None = None
    rejection: Rejection | None = None
    preempted: tuple[Preemption, list[Victim]] | None = None
    nominated: tuple[Preemption, str] | None = None
    latest: str = ""

    def read(self, item: Item) -> None:
        if isinstance(item, LoggedEvent):
            self.event(item)
        elif isinstance(item, Preemption):  # before the group filter: victims are of others
            self.preemption(item)
        elif item.group != self.group:
            return
        elif isinstance(item, Placement):
            self.placed(item)
        elif isinstance(item, Rejection):
            if any(pod.uid in self.uids for pod in item.pods):
                told_nomination = (self.nominated is not None
                                   and f"(decision {self.nominated[0].id})" in item.reason)
                self.rejection = item
                self.latest = "nominated" if told_nomination else "rejection"
                self.tell_rejection(item, "waiting")
        elif isinstance(item, StatusUpdate):
            self.status = item

    def event(self, item: LoggedEvent) -> None:
        event, ref = item.event, f"seq {item.seq}"
        if isinstance(event, PodObserved) and (event.namespace, event.name) == (
                self.namespace, self.name):
            self.observed(event, ref)
        elif isinstance(event, PodDeleted) and event.uid in self.uids:
            self.deleted_ms = event.at_ms
            self.tell(event.at_ms, ref, "pod deleted")
        elif isinstance(event, PodGroupObserved | PodGroupDeleted):
            if ids.group_key(event.namespace, event.name) == self.group:
                self.podgroup_event(item)
        elif isinstance(event, MemberBound) and event.pod_uid in self.uids:
            self.bound(event.at_ms, ref, event.node, event.decision_id)
        elif isinstance(event, MemberBindFailed) and event.pod_uid in self.uids:
            self.tell(event.at_ms, ref, summaries.outcome_summary(event, self.names()))
        elif isinstance(event, GroupBound | GroupRolledBack) and self.concerns(event.decision_id):
            self.group_outcome(event, ref)

    def observed(self, pod: PodObserved, ref: str) -> None:
        if pod.uid not in self.uids:
            if self.uids:  # recreated under the same name: what was told is about the old pod
                self.bound_ms, self.placement, self.rolled_back = None, None, None
                self.rejection, self.preempted, self.nominated, self.latest = None, None, None, ""
            self.uids.add(pod.uid)
            self.last_text.pop("pod", None)
        state = summaries.pod_state(pod)
        text = ("observed " + summaries.event_summary(pod, {}) if "pod" not in self.last_text
                else "now " + state)
        self.tell(pod.at_ms, ref, text, "pod", state)
        if pod.node_name and self.bound_ms is None:
            self.bound_ms = pod.at_ms  # the binder's outcome, earlier or later, is more precise
        self.pod, self.deleted_ms = pod, None

    def placed(self, decision: Placement) -> None:
        mine = [m for m in decision.members if m.pod_uid in self.uids]
        if not mine:
            if not self.uids:
                return  # before the pod existed: not part of its story
            others = len(decision.members)
            self.tell(decision.at_ms, f"decision {decision.id}",
                      f"gang {decision.group} placed {others} other member(s)")
            return
        self.placement, self.latest, self.last_reason = (decision, mine[0].node), "placement", ""
        self.bound_ms = None
        self.tell(decision.at_ms, f"decision {decision.id}",
                  f"placed on {mine[0].node} by decision {decision.id} (attempt "
                  f"{decision.attempt}; bind deadline {times.iso(decision.deadline_ms)})")

    def preemption(self, decision: Preemption) -> None:
        """Tell the pod's eviction (it is a victim) or its nomination (it is a preemptor)."""
        ref = f"decision {decision.id}"
        victims = preemptions.victims_of(decision, uids=self.uids)
        if victims:
            self.preempted, self.latest = (decision, victims), "preempted"
            self.tell(decision.at_ms, ref, preemptions.victim_text(decision, victims))
            return
        if decision.group != self.group or not self.uids:
            return
        mine = [member.node for member in decision.nominated if member.pod_uid in self.uids]
        if mine:
            self.nominated, self.latest = (decision, mine[0]), "nominated"
            self.tell(decision.at_ms, ref, preemptions.nominated_text(decision, mine[0]))
        else:
            self.tell(decision.at_ms, ref,
                      f"{preemptions.who(decision.group)} is "
                      + preemptions.preemptor_text(decision))

    def group_outcome(self, event: GroupBound | GroupRolledBack, ref: str) -> None:
        if isinstance(event, GroupRolledBack):
            self.rolled_back, self.latest = event, "rollback"
        elif self.placement is not None and self.bound_told != event.decision_id:
            # a bound gang's one outcome (logs before it also hold a MemberBound per member):
            # one step, the pod's bind, which implies its gang's
            self.bound(event.at_ms, ref, self.placement[1], event.decision_id)
            return
        self.tell(event.at_ms, ref, summaries.outcome_summary(event, self.names()))

    def bound(self, at_ms: int, ref: str, node: str, decision_id: str) -> None:
        """Tell the pod's bind by `decision_id` once, from its MemberBound (older logs) or its
        gang's GroupBound, whichever the log holds first."""
        if self.bound_told != decision_id:
            self.tell(at_ms, ref, f"bound to {node} (decision {decision_id})")
        self.bound_ms, self.bound_told = at_ms, decision_id

    def concerns(self, decision_id: str) -> bool:
        return self.placement is not None and self.placement[0].id == decision_id

    def names(self) -> dict[str, str]:
        return {uid: f"{self.namespace}/{self.name}" for uid in self.uids}


def explain_pod(namespace: str, name: str, items: Sequence[Item],
                scheduler_name: str = "gangsched") -> Explanation:
    """Explain the pod `namespace/name` from its chain (see `chain`)."""
    group = _group_of(namespace, name, items)
    story = _PodStory(namespace=namespace, name=name, group=group)
    for item in items:
        story.read(item)
    title = f"pod {namespace}/{name}" + (f" (group {group})" if story.pod else "")
    if story.pod is None:
        return Explanation(title, story.steps, "never observed",
                           f"Unknown: pod {namespace}/{name} does not appear in the log"
                           + _podgroup_hint(namespace, name, items), is_known=False)
    return Explanation(title, story.steps, _pod_status(story), _pod_verdict(story, scheduler_name))


def _podgroup_hint(namespace: str, name: str, items: Sequence[Item]) -> str:
    """`; a PodGroup ns/name is in the log: gangsched explain podgroup ns/name` when the log
    knows a PodGroup of the name asked about as a pod (the name `kubectl get pg` shows), else
    nothing."""
    key = ids.group_key(namespace, name)
    if not any(isinstance(item, LoggedEvent)
               and isinstance(item.event, PodGroupObserved | PodGroupDeleted)
               and ids.group_key(item.event.namespace, item.event.name) == key
               for item in items):
        return ""
    return f"; a PodGroup {key} is in the log: gangsched explain podgroup {key}"


def _group_of(namespace: str, name: str, items: Sequence[Item]) -> str:
    """The group of the pod's latest observation (its singleton group when unlabelled)."""
    group = ids.singleton_key(namespace, name)
    for item in items:
        if isinstance(item, LoggedEvent) and isinstance(item.event, PodObserved) and (
                item.event.namespace, item.event.name) == (namespace, name):
            label = item.event.group_name
            group = ids.group_key(namespace, label) if label else ids.singleton_key(namespace, name)
    return group


def _pod_status(story: _PodStory) -> str:
    assert story.pod is not None
    text = f"pod {summaries.pod_state(story.pod)} (last observed {times.iso(story.pod.at_ms)})"
    if story.deleted_ms is not None:
        text = f"pod deleted at {times.iso(story.deleted_ms)}"
    if story.status is not None:
        text += f"; PodGroup {story.status.phase}, running {story.status.running}"
    return text


def _pod_verdict(story: _PodStory, scheduler_name: str) -> str:
    pod = story.pod
    assert pod is not None
    if story.preempted is not None and (story.deleted_ms is not None
                                        or story.latest == "preempted"):
        decision, victims = story.preempted
        gone = (f"deleted at {times.iso(story.deleted_ms)}" if story.deleted_ms is not None
                else "its deletion is under way" if pod.is_deleting else "not deleted yet")
        return f"{preemptions.victim_text(decision, victims, 'Preempted')}; {gone}"
    if story.deleted_ms is not None:
        return f"Deleted at {times.iso(story.deleted_ms)}"
    if pod.scheduler_name != scheduler_name:
        return f"Not gangsched's: schedulerName is {pod.scheduler_name!r}"
    if pod.node_name:
        return _bound_verdict(story, pod.node_name, pod.phase)
    if pod.is_scheduling_gated:
        return "Pending: scheduling-gated (spec.schedulingGates)"
    if story.latest == "placement" and story.placement is not None:
        placement, node = story.placement
        return (f"Placed on {node} at {times.iso(placement.at_ms)} by decision {placement.id}; "
                f"waiting for the binder (deadline {times.iso(placement.deadline_ms)})")
    if story.latest == "nominated" and story.nominated is not None:
        decision, node = story.nominated
        return (f"Pending: nominated to {node} by decision {decision.id}; waiting for "
                f"{len(decision.victims)} victim(s) to go (node held until "
                f"{times.iso(decision.deadline_ms)})")
    if story.latest == "rollback" and story.rolled_back is not None:
        back = story.rolled_back
        return (f"Pending: placement {back.decision_id} rolled back at {times.iso(back.at_ms)}: "
                f"{back.reason}")
    if story.rejection is not None:
        return f"Pending: {story.rejection.reason}"
    return "Pending: no decision about it yet"


def _bound_verdict(story: _PodStory, node: str, phase: str) -> str:
    at = f" at {times.iso(story.bound_ms)}" if story.bound_ms is not None else ""
    if story.placement is not None and story.placement[1] == node:
        text = f"Bound to {node}{at} by decision {story.placement[0].id}"
    else:
        text = f"Bound to {node}{at}, not by a gangsched placement"
    return f"{phase}: {text}" if phase in ("Succeeded", "Failed") else text
