"""A dead letter: a message a consumer refused, republished with why, for operators and audits.

Layer: contracts. Pure; never does I/O. The planner (events it cannot apply) and the binder
(decisions it cannot carry out) republish the original payload on
`subjects.dead_letter_subject(prefix)` with these headers, and `gangsched replay --source nats`
reads the planner's back (`services.audit.nats_log`). The message id
`deadletter/<consumer>/<seq>` makes a republish after a crash a duplicate JetStream drops.
"""

from __future__ import annotations

REASON_HEADER = "Gangsched-Reason"
"""Why the consumer refused the message (one line)."""
SUBJECT_HEADER = "Gangsched-Subject"
"""The subject the message was refused on."""
SEQ_HEADER = "Gangsched-Seq"
"""The refused message's sequence in its stream (decimal)."""
CONSUMER_HEADER = "Gangsched-Consumer"
"""The durable consumer that refused it (`planner`, `binder`, `binder-reports`)."""


def msg_id(consumer: str, seq: int) -> str:
    """The dead letter's de-duplication id, `deadletter/<consumer>/<seq>`."""
    return f"deadletter/{consumer}/{seq}"


def headers(consumer: str, reason: str, subject: str, seq: int) -> dict[str, str]:
    """The headers naming who refused the message at `subject`/`seq`, and why."""
    return {
        CONSUMER_HEADER: consumer,
        REASON_HEADER: reason,
        SUBJECT_HEADER: subject,
        SEQ_HEADER: str(seq),
    }
