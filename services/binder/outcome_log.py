"""The last outcome published for a group, read back from EVENTS to spot settled redeliveries.

Layer: binder shell (reads NATS, never writes). One direct stream lookup per redelivered
placement: if the group's last outcome already ends that placement, it is only acknowledged.
"""

from __future__ import annotations

import logging

import nats
from nats.js import JetStreamContext

from services.binder import outcomes
from services.contracts import codec, subjects
from services.contracts.events import Outcome

log = logging.getLogger(__name__)


class StreamOutcomeLog:
    """Reads the last outcome of a group from the EVENTS stream (one direct lookup)."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix, "EVENTS")

    async def last(self, group: str) -> Outcome | None:
        """The last outcome published on the group's outcome subject; None if none or unknown."""
        try:
            subject = outcomes.subject(self._prefix, group)
            message = await self._js.get_last_msg(self._stream, subject)
            event = codec.decode_event(message.data or b"")
        except (nats.errors.Error, codec.PoisonedMessage, OSError, TimeoutError) as error:
            log.debug("no last outcome for %s: %r", group, error)
            return None
        return event if outcomes.is_outcome(event) else None
