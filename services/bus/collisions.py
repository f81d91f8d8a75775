"""Tell a genuine duplicate from a message-id collision, and the ids that get past one.

Layer: bus, pure (no I/O). JetStream de-duplicates by `Nats-Msg-Id` across the whole stream,
not per subject or per user, and gangsched's ids are predictable (`clock/<second>`,
`pod/<uid>/<rv>/<type>`, `deadletter/planner/<seq>`, ...): another user allowed on the same
stream can publish first under our next id and have our message dropped as its duplicate.
So a duplicate ack is checked against the stored message (`Publisher`): identical means our
own retry (or a replica of the same producer); different means a collision, and the message is
published again under a fallback id. Never decides anything from a header it did not set.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping

DIFFERS = "differs"
"""Verdict: the stored message under our id is another message (a collision)."""
UNREADABLE = "unreadable"
"""Verdict: the stored message could not be read back (no permission, or gone), so it cannot
be told from ours; treated as a collision, since a second copy is harmless and a lost message
is not."""


def verdict(
    stored_subject: str,
    stored_data: bytes,
    stored_headers: Mapping[str, str],
    subject: str,
    data: bytes,
    headers: Mapping[str, str],
) -> str | None:
    """None if the stored message is the one we published, else `DIFFERS`.

    The same message: same subject, same bytes, and every header we sent with the same value
    (the signature and the dead-letter headers included, so a copy without them is not ours).
    """
    same = stored_subject == subject and stored_data == data and all(
        stored_headers.get(name) == value for name, value in headers.items())
    return None if same else DIFFERS


def fallback_ids(msg_id: str, subject: str, data: bytes) -> tuple[str, str]:
    """The ids to publish under after a collision, in order.

    Shapes: `(<msg_id>/h<sha256 of subject and data>, <msg_id>/r<random>)`. The first is
    derived from the content, so our own retries and re-publishes still de-duplicate; a user who
    can predict the content can also take it, so the second is random (128 bits).
    """
    digest = hashlib.sha256(subject.encode() + b"\n" + data).hexdigest()
    return f"{msg_id}/h{digest}", f"{msg_id}/r{secrets.token_hex(16)}"
