"""Tell a genuine duplicate from a message-id collision, and the ids that get past one.

Layer: bus, pure (no I/O). JetStream de-duplicates by `Nats-Msg-Id` across the whole stream,
not per subject or per user, and gangsched's ids are predictable (`clock/<second>`,
`pod/<uid>/<rv>/<type>`, `deadletter/planner/<seq>`, ...): another user allowed on the same
stream can publish first under our next id and have our message dropped as its duplicate.
So a duplicate ack is checked against the stored message (`Publisher`): on our subject (and,
when we sign, with our signature) it is our own retry or a replica's copy of the same change;
anything else is a collision, and the message is published again under a fallback id.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping

from services.contracts.signing import SIGNATURE_HEADER

DIFFERS = "differs"
"""Verdict: the stored message under our id is another message (a collision)."""
UNREADABLE = "unreadable"
"""Verdict: the stored message could not be read back (no permission, or gone), so it cannot
be told from ours; treated as a collision, since a second copy is harmless and a lost message
is not."""


def verdict(
    stored_subject: str,
    stored_headers: Mapping[str, str],
    subject: str,
    headers: Mapping[str, str],
) -> str | None:
    """None if the stored message is ours or a replica's of the same producer, else `DIFFERS`.

    Ours: the same subject (NATS permissions let only that subject's producer publish on it),
    and, when we sign, the same signature (a subject two users share, the dead-letter one, is
    told apart by the planner's signature, which no other user can make). The bytes may differ:
    two watchers observe the same change at different times, and must store it once.
    """
    signature = headers.get(SIGNATURE_HEADER)
    same = stored_subject == subject and (
        signature is None or stored_headers.get(SIGNATURE_HEADER) == signature)
    return None if same else DIFFERS


def fallback_ids(msg_id: str, subject: str, data: bytes) -> tuple[str, str]:
    """The ids to publish under after a collision, in order.

    Shapes: `(<msg_id>/h<sha256 of subject and data>, <msg_id>/r<random>)`. The first is
    derived from the content, so our own retries and re-publishes still de-duplicate; a user who
    can predict the content can also take it, so the second is random (128 bits).
    """
    digest = hashlib.sha256(subject.encode() + b"\n" + data).hexdigest()
    return f"{msg_id}/h{digest}", f"{msg_id}/r{secrets.token_hex(16)}"
