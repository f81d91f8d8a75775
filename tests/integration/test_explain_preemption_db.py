"""`explain` reads, from the database, the Preemption that evicted a pod of another group: it
is published (and recorded) under the preemptor's subject, so the victim's chain must look it
up by its victims (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
import sqlalchemy
from sqlalchemy.ext.asyncio import AsyncEngine

from services.cli import explaining
from services.contracts import codec
from services.contracts.decisions import decision_subject
from services.store import tables
from tests.unit.audit.recorded import PREFIX
from tests.unit.audit.recorded_db import subject_of
from tests.unit.audit.test_explain_preemption import preempted_log

pytestmark = pytest.mark.integration


async def test_explain_from_the_database_names_the_preempting_gang_to_victim_pod_and_gang(
        engine: AsyncEngine, migrated_db_url: str) -> None:
    rec, preemption, _ = preempted_log()
    events = [item for rnd in rec.rounds for item in rnd.events]
    async with engine.begin() as connection:
        await connection.execute(sqlalchemy.insert(tables.audit_events), [
            {"seq": item.seq, "subject": subject_of(item.event),
             "type": type(item.event).__name__, "at_ms": item.event.at_ms,
             "data": codec.encode(item.event)} for item in events])
        await connection.execute(sqlalchemy.insert(tables.outbox), [
            {"id": d.id, "plan_seq": d.plan_seq, "position": int(d.id.partition("-")[2]),
             "subject": decision_subject(PREFIX, d), "data": codec.encode(d)}
            for d in rec.decisions])
    pod = await explaining.explain_object(migrated_db_url, "pod", "default", "low-0",
                                          "gangsched")
    assert pod.verdict.startswith("Preempted at 2023-11-14T22:13:21.000Z by gang default/high "
                                  "(priority 1000 > its 10) to make room on ")
    assert pod.verdict.endswith(f"decision {preemption.id}; deleted at 2023-11-14T22:13:22.000Z")
    group = await explaining.explain_object(migrated_db_url, "podgroup", "default", "low",
                                            "gangsched")
    assert group.verdict == ("Pending: member(s) low-0, low-1 preempted at "
                             "2023-11-14T22:13:21.000Z by gang default/high (priority 1000 > "
                             f"its 10) to make room on a, b; decision {preemption.id}")
    preemptor = await explaining.explain_object(migrated_db_url, "podgroup", "default", "high",
                                                "gangsched")
    assert any(step.text.startswith("preempting 2 victim(s) (of gang default/low) on a, b")
               for step in preemptor.steps)
