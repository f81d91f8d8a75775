"""Comparing kube-scheduler's preemption of one pod with gangsched's, on what should agree.

Each side's outcome is `placed` (bound or placed without evicting anything), `preempted` (with
victims) or `refused`. Both must have the same outcome. When both preempted, these must agree,
in kube-scheduler's order of criteria (`pickOneNodeForPreemption`): every victim of lower
priority than the preemptor, all victims on one node (a singleton needs one), the PDB
violations (measured the same way on both victim sets, `violations`), the highest victim
priority, and the number of victims (kube-scheduler's sum of priorities adds 2^31 per victim,
so with these small priorities it orders by count first). The victims themselves may then
differ only by kube-scheduler's last tie-breaks, which gangsched does not have (it prefers the
least preempted capacity, then names): the sum of priorities, then the latest start time and
the node order. Those are classified (`TIE_KINDS`), not counted as disagreements. Nor is
gangsched choosing a set better by kube-scheduler's own criteria (`DELIBERATE_KINDS`): at the
same PDB violations a lower highest priority, or at the same highest priority fewer victims;
besides kube-scheduler's reprieve it tries one per node without budget bias, smallest first
(docs/design-notes.md "Preemption").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.fit.pod_affinity import selector_matches
from services.watcher.budgets import budget_event
from tests.e2e.differential.preemption.oracle import KubeOutcome
from tests.e2e.differential.preemption.verdict import Decided

Obj = dict[str, Any]
PLACED, PREEMPTED, REFUSED = "placed", "preempted", "refused"
SAME = "same victims"
SUM_TIE = "tie: sum of priorities"
START_TIE_SAME_NODE = "tie: start time (same node)"
START_TIE_OTHER_NODE = "tie: start time or node order (other node)"
LOWER = "gangsched lower highest victim priority (reprieve without budget bias)"
FEWER = "gangsched fewer victims (smallest-first reprieve)"
AGREE_KINDS = (PLACED, REFUSED, SAME)
TIE_KINDS = (SUM_TIE, START_TIE_SAME_NODE, START_TIE_OTHER_NODE)
DELIBERATE_KINDS = (LOWER, FEWER)


@dataclass(frozen=True)
class Victims:
    """One side's victims, as the criteria read them."""

    names: frozenset[str]
    nodes: frozenset[str]
    priorities: tuple[int, ...]
    violations: int

    @property
    def top(self) -> int:
        return max(self.priorities)

    def describe(self) -> str:
        return (f"{len(self.names)} victim(s) {sorted(self.names)} on {sorted(self.nodes)}, "
                f"priorities {sorted(self.priorities)}, {self.violations} PDB violation(s)")


@dataclass(frozen=True)
class Compared:
    """The classification of one offer: `kind` (an agreement, a tie or a disagreement),
    `agrees`, and both sides' outcome and victims for the report."""

    kind: str
    agrees: bool
    kube: str
    ours: str
    kube_victims: Victims | None
    our_victims: Victims | None

    def describe(self) -> str:
        def side(outcome: str, victims: Victims | None) -> str:
            return outcome if victims is None else f"{outcome}: {victims.describe()}"
        return (f"{self.kind}\n    kube-scheduler {side(self.kube, self.kube_victims)}"
                f"\n    gangsched {side(self.ours, self.our_victims)}")


def _name(obj: Obj) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def violations(victims: list[Obj], budgets: list[Obj]) -> int:
    """How many victims go beyond what their budgets allow: per budget, the matching victims
    not already in its `disruptedPods` beyond its `disruptionsAllowed` (each pod of the
    workload matches at most one budget)."""
    total = 0
    for budget in budgets:
        event = budget_event(budget, 0)
        if not event.selector:
            continue
        matching = sum(1 for pod in victims if pod["metadata"]["namespace"] == event.namespace
                       and pod["metadata"]["name"] not in event.disrupted_pods
                       and selector_matches(event.selector, pod["metadata"].get("labels", {})))
        total += max(0, matching - event.disruptions_allowed)
    return total


def victims_of(objects: list[Obj], budgets: list[Obj]) -> Victims:
    """The criteria of a victim set (API objects as listed before the offer)."""
    return Victims(frozenset(map(_name, objects)),
                   frozenset(obj["spec"]["nodeName"] for obj in objects),
                   tuple(obj["spec"].get("priority", 0) for obj in objects),
                   violations(objects, budgets))


def classify(priority: int, kube: KubeOutcome, ours: Decided, bound: list[Obj],
             budgets: list[Obj]) -> Compared:
    """Compare both outcomes for a preemptor of `priority` (module docstring); `bound` the pods
    bound when it was offered, `budgets` the budgets then."""
    by_name = {_name(obj): obj for obj in bound}
    kube_side = PREEMPTED if kube.victims else PLACED if kube.node else REFUSED
    our_side = PREEMPTED if ours.victims else PLACED if ours.node else REFUSED
    theirs = victims_of(kube.victims, budgets) if kube.victims else None
    mine = (victims_of([by_name[f"{v.namespace}/{v.name}"] for v in ours.victims], budgets)
            if ours.victims else None)

    def result(kind: str, agrees: bool) -> Compared:
        return Compared(kind, agrees, kube_side, our_side, theirs, mine)

    if kube.unmarked:
        return result(f"kube-scheduler deleted victims without DisruptionTarget: "
                      f"{kube.unmarked}", False)
    if kube_side != our_side:
        return result(f"kube-scheduler {kube_side}, gangsched {our_side}", False)
    if theirs is None or mine is None:
        return result(kube_side, True)
    for who, side in (("kube-scheduler", theirs), ("gangsched", mine)):
        if side.top >= priority:
            return result(f"{who} evicts a pod of equal or higher priority", False)
        if len(side.nodes) != 1:
            return result(f"{who} evicts on {len(side.nodes)} nodes", False)
    if theirs.violations != mine.violations:
        return result(_differs("PDB violations", theirs.violations, mine.violations), False)
    if mine.top < theirs.top:
        return result(LOWER, True)
    if theirs.top != mine.top:
        return result(_differs("highest victim priority", theirs.top, mine.top), False)
    if len(mine.names) < len(theirs.names):
        return result(FEWER, True)
    if len(theirs.names) != len(mine.names):
        return result(_differs("victim count", len(theirs.names), len(mine.names)), False)
    if theirs.names == mine.names:
        return result(SAME, True)
    if sum(theirs.priorities) != sum(mine.priorities):
        return result(SUM_TIE, True)
    return result(START_TIE_SAME_NODE if theirs.nodes == mine.nodes else START_TIE_OTHER_NODE,
                  True)


def _differs(what: str, kube: int, ours: int) -> str:
    lower = "kube-scheduler" if kube < ours else "gangsched"
    return f"{what} differs (lower: {lower})"
