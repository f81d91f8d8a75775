"""From decisions to outbox rows, and from the outbox (and dead letters) to NATS.

Layer: planner shell. Publishing happens only after the rows are committed; a row is marked
published only after JetStream stored it, so a crash in between re-publishes it on restart
and JetStream drops the duplicate (`Nats-Msg-Id` = decision id, or `deadletter/<consumer>/<seq>`).
A running planner publishes each batch's rows as it committed them (`publish_rows`) and marks
them in its next transaction; `publish_outbox` reads what is unpublished, at start.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from services.contracts import codec, dead_letters, subjects
from services.contracts.decisions import Decision, decision_subject
from services.planner.ports import Publisher, Store
from services.runtime import metrics
from services.store.planner_store import OutboxRow

log = logging.getLogger(__name__)


def outbox_rows(prefix: str, decisions: Sequence[Decision]) -> list[OutboxRow]:
    """Outbox rows `(id, plan_seq, subject, JSON)` in the order the planner decided them."""
    return [
        (d.id, d.plan_seq, decision_subject(prefix, d), codec.encode(d)) for d in decisions
    ]


async def publish_outbox(store: Store, publisher: Publisher) -> int:
    """Publish every unpublished outbox row, in order, then mark them; return how many."""
    pending = await store.pending_outbox()
    if not pending:
        return 0
    await publish_rows(publisher, [(row.id, row.plan_seq, row.subject, row.data)
                                   for row in pending])
    await store.mark_published([row.id for row in pending])
    return len(pending)


async def publish_rows(publisher: Publisher, rows: Sequence[OutboxRow]) -> list[str]:
    """Publish committed outbox `rows`, in order, and return their ids: the caller marks them
    published (`Store.mark_published`, or with its next `Store.commit_batch`).

    Raises:
        whatever `Publisher.publish_many` raises (NATS down): nothing is marked then, and the
        rows are published again from the outbox at restart.
    """
    if not rows:
        return []
    await publisher.publish_many([(subject, data, decision_id)
                                  for decision_id, _, subject, data in rows])
    for _, _, subject, _ in rows:
        metrics.decisions_published.labels(subject.split(".")[-3]).inc()
    return [decision_id for decision_id, _, _, _ in rows]


async def publish_dead_letters(
    store: Store, publisher: Publisher, prefix: str, consumer: str
) -> int:
    """Republish every unpublished dead letter to the dead-letter subject; return how many.

    Shapes: the original payload, with the headers of `services.contracts.dead_letters`
    (the reason, the original subject and sequence, the consumer that refused it).
    """
    pending = await store.pending_dead_letters()
    for letter in pending:
        await publisher.publish(
            subjects.dead_letter_subject(prefix),
            letter.data,
            msg_id=dead_letters.msg_id(consumer, letter.seq),
            headers=dead_letters.headers(consumer, letter.reason, letter.subject, letter.seq),
        )
        log.warning("dead letter seq %d (%s): %s", letter.seq, letter.subject, letter.reason)
    await store.mark_dead_letters_published([letter.seq for letter in pending])
    return len(pending)

