"""Why a pod waits, or where and when it was placed: the chain of events and decisions.

Layer: audit (pure). Works from the recorded log alone (no replay): the pod's events, its
group's PodGroup and outcome events, and the decisions recorded for its group, merged in log
order (events by stream sequence; a round's decisions after the events up to its plan point).
Consecutive identical reasons are told once. The verdict is one line: `Pending: <reason>`,
`Bound to <node> at <time> by decision <id>`, ...
"""

from __future__ import annotations

from services.audit.group_story import explain_podgroup
from services.audit.pod_story import explain_pod
from services.audit.story import Explanation, Item, Step, chain

__all__ = ["Explanation", "Item", "Step", "chain", "explain_pod", "explain_podgroup"]
