"""The tables of the state store (SQLAlchemy Core), as the alembic revisions make them.

Layer: store. Declarations only; the alembic migrations in `migrations/` create and change
them, never `metadata.create_all` outside tests of this module.

Units: every `*_ms` column holds UTC epoch milliseconds, every `*_us` one UTC epoch
microseconds; `seq`/`*_seq` are JetStream stream
sequences of the EVENTS stream.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, LargeBinary, MetaData, String, Table, Text

metadata = MetaData()

audit_events = Table(
    "audit_events",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("subject", Text, nullable=False),
    Column("type", String(64), nullable=False),
    Column("at_ms", BigInteger, nullable=False),
    Column("data", LargeBinary, nullable=False),
)
"""Every event the planner applied, as received (raw JSON), by stream sequence."""

outbox = Table(
    "outbox",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("plan_seq", BigInteger, nullable=False, index=True),
    Column("position", Integer, nullable=False),
    Column("subject", Text, nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("published_at_ms", BigInteger, nullable=True, index=True),
)
"""Decisions by id; `published_at_ms` NULL until the DECISIONS stream stored them.
`position` is the decision's index within its round (publication order)."""

rounds = Table(
    "rounds",
    metadata,
    Column("plan_seq", BigInteger, primary_key=True, autoincrement=False),
    Column("event_count", Integer, nullable=False),
    Column("decision_count", Integer, nullable=False),
    Column("planner", String(64), nullable=True),
)
"""Every planning round with its plan point, also when it decided nothing (replay plans at
exactly these points), and the planner that planned it (`planner.core.revision.PLANNER`;
NULL for rounds recorded before planners recorded it)."""

tracking = Table(
    "tracking",
    metadata,
    Column("consumer", String(128), primary_key=True),
    Column("last_seq", BigInteger, nullable=False),
    Column("stream_created", String(64), nullable=True),
    Column("last_stored_at_us", BigInteger, nullable=True),
)
"""The last stream sequence each consumer applied; redeliveries at or below it are skipped.
`stream_created` is the identity of the stream that sequence belongs to: its creation time as
JetStream reports it (`services.bus.reading.StreamState.created`, ISO 8601 UTC with
microseconds), so a stream deleted and created anew under the same name is told apart; NULL
when tracked before revision 0003 (adopted at the planner's next start). `last_stored_at_us` is
when NATS stored the message at `last_seq`, UTC epoch microseconds (a restored stream keeps it;
the same bytes published again get another): NULL when tracked before revision 0004, or by
a batch that did not say."""

snapshots = Table(
    "snapshots",
    metadata,
    Column("name", String(128), primary_key=True),
    Column("seq", BigInteger, nullable=False),
    Column("data", LargeBinary, nullable=False),
)
"""A consumer's encoded in-memory state after it applied everything up to `seq`."""

dead_letters = Table(
    "dead_letters",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("subject", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("published_at_ms", BigInteger, nullable=True, index=True),
)
"""Poisoned messages by stream sequence, with why; `published_at_ms` NULL until the
dead-letter subject stored them."""
