"""`gangsched explain`: read a pod's or PodGroup's chain from the database and explain it.

Layer: cli (composition). Reads the audit events and the outbox in one read-only snapshot; no
replay is needed (the recorded decisions carry their reasons).
"""

from __future__ import annotations

from services.audit import db_log, explain
from services.store import audit, schema

KINDS = ("pod", "podgroup")


async def explain_object(db_url: str, kind: str, namespace: str, name: str,
                         scheduler_name: str) -> explain.Explanation:
    """The explanation of the pod or PodGroup `namespace/name` (`kind` one of `KINDS`).

    Raises:
        services.store.audit.AuditUnavailable, services.store.errors.SchemaMismatch.
    """
    engine = audit.open_read_only(db_url)
    try:
        await schema.check_schema(engine, db_url)
        async with audit.snapshot(engine) as snapshot:
            if kind == "pod":
                items = await db_log.pod_chain(snapshot, namespace, name)
            else:
                items = await db_log.podgroup_chain(snapshot, namespace, name)
    finally:
        await engine.dispose()
    ordered = explain.chain(items)
    if kind == "pod":
        return explain.explain_pod(namespace, name, ordered, scheduler_name)
    return explain.explain_podgroup(namespace, name, ordered)
