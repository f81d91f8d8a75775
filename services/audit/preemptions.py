"""How explanations tell a Preemption: to its victims, and to the gang it makes room for.

Layer: audit (pure). A Preemption is published under its preemptor's group, yet concerns the
victims' groups too (kube-scheduler's `Preempted` event goes to each victim); these texts are
shared by the pod and PodGroup stories and the timeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from services.audit import times
from services.contracts import ids
from services.contracts.decisions import Preemption, Victim


def who(group: str) -> str:
    """`gang ns/name` for a PodGroup's key, `pod ns/name` for a singleton's."""
    namespace, name = ids.split_key(ids.GroupKey(group))
    if ids.is_singleton(ids.GroupKey(group)):
        return f"pod {namespace}/{name.removeprefix(ids.SINGLETON_PREFIX)}"
    return f"gang {group}"


def victims_of(decision: Preemption, *, uids: Iterable[str] = (), group: str = "") -> list[Victim]:
    """The victims of `decision` among the pods `uids` or in the group `group` (a group key)."""
    wanted = set(uids)
    return [victim for victim in decision.victims
            if victim.uid in wanted or (group and victim.group == group)]


def nodes_of(victims: Iterable[Victim]) -> str:
    """`a, b`: the nodes the victims are evicted from, sorted, each once."""
    return ", ".join(sorted({victim.node for victim in victims}))


def victim_text(decision: Preemption, victims: list[Victim], verb: str = "preempted",
                when: Callable[[int], str] = times.iso) -> str:
    """`preempted at <time> by gang <ns/name> (priority P > its Q) to make room on <node>;
    decision <id>` (`verb` first; `when` writes the epoch-ms time, UTC ISO 8601 by default).
    Shapes: `victims` non-empty, the decision's victims the story is about (their priorities
    shown once each, sorted)."""
    priorities = ", ".join(str(value) for value in sorted({v.priority for v in victims}))
    return (f"{verb} at {when(decision.at_ms)} by {who(decision.group)} (priority "
            f"{decision.priority} > its {priorities}) to make room on {nodes_of(victims)}; "
            f"decision {decision.id}")


def preemptor_text(decision: Preemption) -> str:
    """`preempting N victim(s) (of gang x, pod y) on <nodes> for M member(s), nodes held until
    <time>; decision <id>`: what a Preemption does for the gang it makes room for."""
    owners = ", ".join(sorted({who(victim.group) for victim in decision.victims}))
    return (f"preempting {len(decision.victims)} victim(s) (of {owners}) on "
            f"{nodes_of(decision.victims)} for {len(decision.nominated)} member(s), nodes held "
            f"until {times.iso(decision.deadline_ms)}; decision {decision.id}")


def nominated_text(decision: Preemption, node: str) -> str:
    """`nominated to <node> by decision <id>: N victim(s) evicted for it (held until <time>)`."""
    return (f"nominated to {node} by decision {decision.id}: {len(decision.victims)} victim(s) "
            f"evicted to make room (node held until {times.iso(decision.deadline_ms)})")
