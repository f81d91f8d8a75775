"""The outcome events the binder publishes to EVENTS: subjects, message ids, payloads.

Layer: binder, pure. Message ids are `outcome/<decision id>/<type>/<pod uid>` for member
outcomes and `outcome/<decision id>/<type>` for group outcomes, so a redelivered decision that
ends the same way publishes nothing new (JetStream drops the duplicates).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

from services.contracts import codec, subjects
from services.contracts.events import (
    Event,
    GroupBound,
    GroupRolledBack,
    MemberBindFailed,
    MemberBound,
    Outcome,
)
from services.contracts.ids import GroupKey, split_key

KIND = "outcome"

PublishItem = tuple[str, bytes, str]
"""`(subject, data, msg_id)`, as `Publisher.publish_many` takes them."""


def subject(prefix: str, group: str) -> str:
    """`<prefix>.events.outcome.<namespace>.<group name>`: every outcome of one group."""
    namespace, name = split_key(GroupKey(group))
    return subjects.events_subject(prefix, KIND, namespace, name)


def msg_id(outcome: Outcome) -> str:
    """The `Nats-Msg-Id` of one outcome (see module docstring)."""
    kind = type(outcome).__name__
    if isinstance(outcome, MemberBound | MemberBindFailed):
        return f"outcome/{outcome.decision_id}/{kind}/{outcome.pod_uid}"
    return f"outcome/{outcome.decision_id}/{kind}"


def publish_items(prefix: str, outcomes: Sequence[Outcome]) -> list[PublishItem]:
    """The messages for `outcomes`, in the given order (members first, then the group's)."""
    return [(subject(prefix, o.group), codec.encode(o), msg_id(o)) for o in outcomes]


def is_outcome(event: Event) -> TypeGuard[Outcome]:
    """Whether `event` is one of the binder's outcome events."""
    return isinstance(event, MemberBound | MemberBindFailed | GroupBound | GroupRolledBack)


def is_final(outcome: Outcome) -> bool:
    """Whether `outcome` ends a placement (GroupBound or GroupRolledBack)."""
    return isinstance(outcome, GroupBound | GroupRolledBack)
