"""gangsched's decision for one preemptor, through its own code path: the watcher's slimming
(`differential.verdict.Slimmer`, plus `watcher.budgets.budget_event` for the budgets) turns
the listed nodes, bound pods and PodDisruptionBudgets into events, which the production planner
core applies; then one planning round decides for the pod, a singleton of gangsched's: a
Placement (it fits as it is), a Preemption (its victims), or a Rejection.

Other schedulers' pods are victims here (`preempt_other_schedulers`): the fillers were bound by
`spec.nodeName` or by the default scheduler, as kube-scheduler's victims are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.contracts.decisions import Placement, Preemption, Rejection, Victim
from services.contracts.events import ClockTicked, Event
from services.contracts.ids import singleton_key
from services.planner.core import plan as planner
from services.planner.core.config import PlannerConfig
from services.planner.core.state import empty_state
from services.watcher.budgets import budget_event
from tests.e2e.differential.verdict import AT_MS, Slimmer, Snapshot, as_ours

CONFIG = PlannerConfig(preempt_other_schedulers=True)


@dataclass(frozen=True)
class Decided:
    """What gangsched decided for the pod: `node` placed on, else `victims` of its Preemption
    (empty: none), and the Rejection's reason (None when placed)."""

    node: str | None
    victims: tuple[Victim, ...]
    reason: str | None


def decide(slimmer: Slimmer, snapshot: Snapshot, budgets: list[dict[str, Any]],
           pod: dict[str, Any]) -> Decided:
    """gangsched's decision for `pod` (an admitted API object) on the `snapshot` and the
    budgets (module docstring)."""
    candidate = slimmer.event("pod", as_ours(pod))
    events: list[Event] = [*(slimmer.event("node", node) for node in snapshot.nodes),
                           *(slimmer.event("pod", other) for other in snapshot.bound),
                           *(budget_event(budget, AT_MS) for budget in budgets), candidate]
    state = empty_state()
    for event in events:
        state = planner.apply(state, event)
    state = planner.apply(state, ClockTicked(at_ms=AT_MS))
    _, made = planner.plan(state, CONFIG, len(events) + 1)
    key = singleton_key(pod["metadata"]["namespace"], pod["metadata"]["name"])
    node: str | None = None
    victims: tuple[Victim, ...] = ()
    reason: str | None = None
    for decision in made:
        if isinstance(decision, Placement) and decision.group == key:
            node = decision.members[0].node
        elif isinstance(decision, Preemption) and decision.group == key:
            victims = decision.victims
        elif isinstance(decision, Rejection) and decision.group == key:
            reason = decision.reason
    return Decided(node, victims, reason)
