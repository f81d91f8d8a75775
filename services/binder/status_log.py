"""The newest PodGroup status decision published for a group, read back from DECISIONS.

Layer: binder shell (reads NATS, never writes). Binders share decisions on a work queue, so two
StatusUpdates of one group may be written by two binders in either order; writing the newest one
published (instead of the one delivered) keeps an older status from overwriting a newer one.
"""

from __future__ import annotations

import logging

from services.bus import reading
from services.bus.connection import JetStream
from services.bus.errors import BusRefused, BusUnavailable
from services.contracts import codec, subjects
from services.contracts.decisions import StatusUpdate
from services.contracts.ids import GroupKey, split_key
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey

log = logging.getLogger(__name__)


class StreamStatusLog:
    """Reads the last StatusUpdate of a group from the DECISIONS stream (one direct lookup);
    only one the planner signed with `key`, and of that very group, counts."""

    def __init__(self, js: JetStream, prefix: str, key: DecisionKey) -> None:
        self._js = js
        self._prefix = prefix
        self._key = key
        self._stream = subjects.stream_name(prefix, "DECISIONS")

    async def latest(self, group: str) -> StatusUpdate | None:
        """The last StatusUpdate published for `group`; None if none, unreadable, not signed
        by the planner, or of another group whose name maps to the same subject token."""
        namespace, name = split_key(GroupKey(group))
        subject = subjects.decisions_subject(self._prefix, "StatusUpdate", namespace, name)
        try:
            message = await reading.last_message(self._js, self._stream, subject)
            if message is None:
                log.debug("no last status decision for %s", group)
                return None
            forged = self._key.check(message.subject, message.data,
                                     message.headers.get(SIGNATURE_HEADER))
            decision = None if forged else codec.decode_decision(message.data)
        except (BusUnavailable, BusRefused, codec.PoisonedMessage) as error:
            log.debug("no last status decision for %s: %r", group, error)
            return None
        if forged:
            log.warning("last status decision on %s is not the planner's: %s", subject, forged)
        if isinstance(decision, StatusUpdate) and decision.group == group:
            return decision
        return None
