"""From decisions to outbox rows, and from the outbox (and dead letters) to NATS.

Layer: planner shell. Publishing happens only after the rows are committed; a row is marked
published only after JetStream stored it, so a crash in between re-publishes it on restart
and JetStream drops the duplicate (`Nats-Msg-Id` = decision id, or `deadletter/<consumer>/<seq>`).
A running planner publishes each batch's rows as it committed them (`publish_rows`) and marks
them in its next transaction; `publish_outbox` reads what is unpublished, at start, and first
looks at the DECISIONS stream's tail for those JetStream already stored (a planner stopped
between publishing a batch and marking it), so none is stored twice, however long the planner
was down (past the stream's duplicate window JetStream would store a copy).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from services.bus.publishing import MAX_IN_FLIGHT
from services.contracts import codec, dead_letters, subjects
from services.contracts.decisions import Decision, decision_subject
from services.planner.ports import Publisher, Store
from services.runtime import metrics
from services.store.planner_store import OutboxRow

log = logging.getLogger(__name__)

PUBLISH_REORDER = MAX_IN_FLIGHT
"""How far a decision's place in the stream may lag its place in the outbox: a window of
pipelined publishes whose failed ones are published again after the others."""


def outbox_rows(prefix: str, decisions: Sequence[Decision]) -> list[OutboxRow]:
    """Outbox rows `(id, plan_seq, subject, JSON)` in the order the planner decided them."""
    return [
        (d.id, d.plan_seq, decision_subject(prefix, d), codec.encode(d)) for d in decisions
    ]


async def publish_outbox(store: Store, publisher: Publisher, prefix: str) -> int:
    """Publish every unpublished outbox row that the DECISIONS stream does not hold yet, in
    order, then mark them all; return how many were published.

    Source: the stream's last `len(pending) + PUBLISH_REORDER` messages: the planner is the
    only publisher of decisions and publishes them in outbox order, give or take a window of
    pipelined publishes retried one by one (`Publisher.publish_many`).
    Raises:
        NotFound, BusUnavailable, BusRefused (`services.bus.errors`): the stream cannot be read.
    """
    pending = await store.pending_outbox()
    if not pending:
        return 0
    stored = await publisher.recent_ids(subjects.stream_name(prefix, "DECISIONS"),
                                        len(pending) + PUBLISH_REORDER)
    found = [row.id for row in pending if row.id in stored]
    if found:
        await store.mark_published(found)
        log.info("%d of %d unmarked decisions were already stored in DECISIONS (published "
                 "before the planner stopped); marked, not published again", len(found),
                 len(pending))
    rest = [(row.id, row.plan_seq, row.subject, row.data) for row in pending
            if row.id not in stored]
    await store.mark_published(await publish_rows(publisher, rest))
    return len(rest)


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

