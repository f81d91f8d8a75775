"""The newest PodGroup status decision published for a group, read back from DECISIONS.

Layer: binder shell (reads NATS, never writes). Binders share decisions on a work queue, so two
StatusUpdates of one group may be written by two binders in either order; writing the newest one
published (instead of the one delivered) keeps an older status from overwriting a newer one.
"""

from __future__ import annotations

import logging

import nats
from nats.js import JetStreamContext

from services.contracts import codec, subjects
from services.contracts.decisions import StatusUpdate
from services.contracts.ids import GroupKey, split_key

log = logging.getLogger(__name__)


class StreamStatusLog:
    """Reads the last StatusUpdate of a group from the DECISIONS stream (one direct lookup)."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix, "DECISIONS")

    async def latest(self, group: str) -> StatusUpdate | None:
        """The last StatusUpdate published for `group`; None if none or unreadable."""
        namespace, name = split_key(GroupKey(group))
        subject = subjects.decisions_subject(self._prefix, "StatusUpdate", namespace, name)
        try:
            message = await self._js.get_last_msg(self._stream, subject)
            decision = codec.decode_decision(message.data or b"")
        except (nats.errors.Error, codec.PoisonedMessage, OSError, TimeoutError) as error:
            log.debug("no last status decision for %s: %r", group, error)
            return None
        return decision if isinstance(decision, StatusUpdate) else None
