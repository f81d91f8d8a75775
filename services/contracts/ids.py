"""Identifier types used across gangsched.

Layer: contracts. Pure; never does I/O.
"""

from typing import NewType

PodUid = NewType("PodUid", str)
"""`metadata.uid` of a Pod."""

NodeName = NewType("NodeName", str)
"""`metadata.name` of a Node (Nodes are cluster-scoped, so the name is the key)."""

GroupKey = NewType("GroupKey", str)
"""`"<namespace>/<name>"` of a PodGroup, or `"<namespace>/pod:<name>"` for a singleton group."""

StreamSeq = NewType("StreamSeq", int)
"""JetStream stream sequence of a message in the EVENTS stream (1-based)."""

DecisionId = NewType("DecisionId", str)
"""`"<plan_seq>-<index>"`: deterministic, so replay re-derives the same ids."""

SINGLETON_PREFIX = "pod:"


def group_key(namespace: str, name: str) -> GroupKey:
    """Key of the PodGroup `namespace/name`."""
    return GroupKey(f"{namespace}/{name}")


def singleton_key(namespace: str, pod_name: str) -> GroupKey:
    """Key of the singleton group of an unlabelled pod (a pod without a PodGroup is a gang of
    one)."""
    return GroupKey(f"{namespace}/{SINGLETON_PREFIX}{pod_name}")


def split_key(key: GroupKey) -> tuple[str, str]:
    """Split a group key into `(namespace, name)`; `name` keeps a `pod:` prefix for singletons."""
    namespace, _, name = key.partition("/")
    return namespace, name


def is_singleton(key: GroupKey) -> bool:
    """Whether `key` names the singleton group of an unlabelled pod."""
    return split_key(key)[1].startswith(SINGLETON_PREFIX)


def decision_id(plan_seq: int, index: int) -> DecisionId:
    """The id of the `index`-th decision (0-based) of the round planned at `plan_seq`."""
    return DecisionId(f"{plan_seq}-{index}")


def decision_order(decision_id: str) -> tuple[int, int]:
    """`(plan_seq, index)` of a decision id, the order the planner made decisions in; `(-1, -1)`
    for a string that is not a decision id."""
    plan_seq, _, index = decision_id.partition("-")
    if not (plan_seq.isascii() and plan_seq.isdigit() and index.isascii() and index.isdigit()):
        return (-1, -1)  # ASCII: `"²".isdigit()`, yet `int("²")` raises
    return (int(plan_seq), int(index))
