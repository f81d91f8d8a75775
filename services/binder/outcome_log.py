"""The outcomes published for one decision, read back from EVENTS to spot settled redeliveries.

Layer: binder shell (reads NATS, never writes). A redelivered placement reads its group's
outcome subject and keeps the outcomes of that decision (message ids
`outcome/<decision>/<type>[/<pod uid>]`, see `services.binder.outcomes`): a final one means it
is settled (only acknowledged); its MemberBound ones are the members a rollback may delete.
"""

from __future__ import annotations

import logging

from services.binder import outcomes
from services.bus import reading
from services.bus.connection import JetStream
from services.bus.errors import BusRefused, BusUnavailable
from services.bus.reading import MSG_ID_HEADER
from services.contracts import codec, subjects
from services.contracts.events import Outcome

log = logging.getLogger(__name__)

OWNER = "binder-outcomes"
"""The name prefix of its readers (the binder's NATS user creates them)."""


class StreamOutcomeLog:
    """Reads the outcomes of one decision from the EVENTS stream (the group's subject)."""

    def __init__(self, js: JetStream, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix, "EVENTS")

    async def of_decision(self, group: str, decision_id: str) -> list[Outcome]:
        """The outcomes published for `decision_id` of `group`, in stream order.

        Raises:
            NotFound, BusUnavailable, BusRefused (`services.bus.errors`): EVENTS cannot be
            read (the caller retries the decision later rather than undo
            anything on a guess).
        """
        subject = outcomes.subject(self._prefix, group)
        mine = f"outcome/{decision_id}/"
        found: list[Outcome] = []
        async for stored in reading.read(self._js, self._stream, subject, owner=OWNER):
            msg_id = stored.headers.get(MSG_ID_HEADER)
            if msg_id is not None and not msg_id.startswith(mine):
                continue
            try:
                event = codec.decode_event(stored.data)
            except codec.PoisonedMessage as error:
                log.warning("unreadable outcome at seq %d of %s: %s", stored.seq, subject, error)
                continue
            if outcomes.is_outcome(event) and event.decision_id == decision_id:
                found.append(event)
        return found

    async def newest(self, group: str) -> Outcome | None:
        """The last outcome published for `group` (one direct lookup), or None when there is
        none, it cannot be read, or it is another group's (names that share a subject token,
        `a.b` and `a_b`): the caller then proceeds as on a first delivery.

        Source: only the binder's user may publish on outcome subjects (the chart's NATS
        permissions; the planner binds outcomes to them).
        """
        try:
            message = await reading.last_message(self._js, self._stream,
                                                 outcomes.subject(self._prefix, group))
            if message is None:
                log.debug("no last outcome for %s", group)
                return None
            event = codec.decode_event(message.data)
        except (BusUnavailable, BusRefused, codec.PoisonedMessage) as error:
            log.debug("no last outcome for %s: %r", group, error)
            return None
        # another group whose name maps to the same subject token is not this group's news
        return event if outcomes.is_outcome(event) and event.group == group else None
