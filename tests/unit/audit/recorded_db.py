"""A recorded log (`recorded.Recorder`) written into a real SQLite database, as the planner's
store holds it (audit events on the subjects the watcher and binder publish on, the outbox,
the rounds), for the audit commands to read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from services.binder import outcomes
from services.contracts import codec, producers, subjects
from services.contracts.events import Event
from services.planner.core import revision
from services.store import schema
from tests.unit.audit.recorded import PREFIX, T0, Recorder


def subject_of(event: Event) -> str:
    """The subject the watcher or the binder publishes `event` on."""
    kind = producers.KIND_OF_TYPE[type(event)]
    if kind == "outcome":
        return outcomes.subject(PREFIX, event.group)  # type: ignore[union-attr]
    namespace = getattr(event, "namespace", "")
    return subjects.events_subject(PREFIX, kind, namespace, getattr(event, "name", ""))


def write_database(recorder: Recorder, path: Path, *, reversed_rows: bool = False) -> str:
    """Migrate a SQLite database at `path`, write `recorder`'s log into it; its URL.
    `reversed_rows`: insert each table's rows last first (a reader must not rely on the
    order rows were written in)."""
    url = f"sqlite+aiosqlite:///{path}"
    schema.migrate_sync(url)
    events = [(item.seq, subject_of(item.event), type(item.event).__name__, item.event.at_ms,
               codec.encode(item.event)) for rnd in recorder.rounds for item in rnd.events]
    outbox = [(d.id, d.plan_seq, d.position, d.subject, d.data, T0)
              for rnd in recorder.rounds for d in rnd.recorded]
    rounds = [(rnd.plan_seq, len(rnd.events), len(rnd.recorded), revision.PLANNER)
              for rnd in recorder.rounds]
    if reversed_rows:
        events, outbox, rounds = events[::-1], outbox[::-1], rounds[::-1]
    with sqlite3.connect(path) as connection:
        connection.executemany("INSERT INTO audit_events VALUES (?,?,?,?,?)", events)
        connection.executemany("INSERT INTO outbox (id, plan_seq, position, subject, data, "
                               "published_at_ms) VALUES (?,?,?,?,?,?)", outbox)
        connection.executemany("INSERT INTO rounds VALUES (?,?,?,?)", rounds)
    connection.close()
    return url
