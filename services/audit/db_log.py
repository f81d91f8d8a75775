"""The audit log in the planner's database, as rounds (replay) and as chains (explain).

Layer: audit shell (reads the store through `services.store.audit`, one snapshot). The
database is the authoritative audit source: it keeps every applied event (also after stream
retention dropped it) and every planning round, including the rounds that decided nothing.
"""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator

import msgspec

from services.audit.explain import Item
from services.audit.timeline import OUTCOMES
from services.contracts import codec, ids, subjects
from services.contracts.decisions import DECISION_TYPES, Decision, Placement, Preemption, Rejection
from services.contracts.events import Event, PodGroupDeleted, PodGroupObserved, PodObserved
from services.contracts.ids import GroupKey, is_singleton, split_key
from services.planner.rederive import rounds
from services.planner.rederive.rounds import LoggedEvent, PlanPoint, RecordedDecision, RoundInput
from services.store.audit import PAGE_ROWS, AuditLog, EventBatch, OutboxRecord, damaged

UNRECORDED = "a planner that did not record itself"
"""`RoundInput.planner` of a round recorded before schema revision 0002 (`rounds.planner`)."""
_batch_decoder = msgspec.json.Decoder(list[LoggedEvent])


class DatabaseLog:
    """Rounds of the log recorded in one database snapshot (see `services.store.audit`)."""

    def __init__(self, audit: AuditLog, page_rows: int = PAGE_ROWS) -> None:
        self.audit = audit
        self.page_rows = page_rows

    async def event_count(self) -> int:
        """How many events the log holds."""
        return (await self.audit.event_bounds())[0]

    async def left_out(self) -> list[tuple[int, str]]:
        """`(seq, reason)` of the events the planner dead-lettered, by seq (not in any round)."""
        return await self.audit.dead_letters()

    def rounds(self) -> AsyncIterator[RoundInput]:
        """Every recorded round, in order (see `rounds.assemble`), with the planner that planned
        it (`UNRECORDED` for rounds from before planners recorded themselves).

        Raises (while iterating):
            services.store.audit.DamagedRow: an audit row that does not decode (the planner
                audits only events it decoded, so this means a damaged database), or a row
                holding a value of the wrong type.
        """
        return rounds.assemble_pages(self._events(), self._plan_points(), self._recorded())

    async def _events(self) -> AsyncIterator[list[LoggedEvent]]:
        async for batch in self.audit.event_batches(page_rows=self.page_rows):
            yield _decoded(batch) or await self._row_by_row(batch)

    async def _row_by_row(self, batch: EventBatch) -> list[LoggedEvent]:
        """The batch's rows read and decoded one at a time (it did not decode whole)."""
        rows = await self.audit.event_rows(batch.after_seq, batch.count)
        return [LoggedEvent(seq, subject, _decode(seq, data)) for seq, subject, data in rows]

    async def _plan_points(self) -> AsyncIterator[list[PlanPoint]]:
        async for page in self.audit.plan_points(page_rows=self.page_rows):
            yield [(plan_seq, planner or UNRECORDED) for plan_seq, planner in page]

    async def _recorded(self) -> AsyncIterator[list[RecordedDecision]]:
        async for page in self.audit.outbox(page_rows=self.page_rows):
            yield [_recorded(record) for record in page]


def _decoded(batch: EventBatch) -> list[LoggedEvent] | None:
    """The batch decoded in one call, or None when it does not decode or is not exactly its
    rows in seq order (the database's aggregate order is checked, not trusted)."""
    try:
        logged = _batch_decoder.decode(batch.data)
    except codec.UNDECODABLE:
        return None
    seqs = [item.seq for item in logged]
    if (len(seqs) != batch.count or not seqs or seqs[0] <= batch.after_seq
            or seqs[-1] != batch.last_seq or not all(map(operator.lt, seqs, seqs[1:]))):
        return None
    return logged


def _decode(seq: int, data: bytes) -> Event:
    """One audit row's event.

    Raises:
        services.store.audit.DamagedRow: it does not decode (names the seq).
    """
    try:
        return codec.decode_event(data)
    except codec.PoisonedMessage as error:
        raise damaged("audit_events", f"seq {seq}", f"data is no event: {error}") from error


def _decision(record: OutboxRecord) -> Decision:
    """One outbox row's decision.

    Raises:
        services.store.audit.DamagedRow: it does not decode, or its id is not the row's, nor
            the row's `<plan_seq>-<position>`, as the planner writes every row (names the row).
    """
    where = f"id {record.id!r}"
    try:
        decision = codec.decode_decision(record.data)
    except codec.PoisonedMessage as error:
        raise damaged("outbox", where, f"data is no decision: {error}") from error
    if ids.decision_order(record.id) != (record.plan_seq, record.position):
        raise damaged("outbox", where, f"id is not <plan_seq>-<position> of the row "
                                       f"({ids.decision_id(record.plan_seq, record.position)})")
    if decision.id != record.id:
        raise damaged("outbox", where, f"data holds decision {decision.id!r}, not the row's")
    return decision


def _recorded(record: OutboxRecord) -> RecordedDecision:
    return RecordedDecision(record.id, record.plan_seq, record.position, record.subject,
                            record.data)


async def pod_chain(audit: AuditLog, namespace: str, name: str) -> list[Item]:
    """The events and decisions that explain the pod `namespace/name` (in no order yet).

    Source: the pod's own events, then for each group it was seen in: the PodGroup's and the
    group's outcome events and the decisions recorded for the group (subjects name them); for
    a pod the log never saw, the events of a PodGroup of its name (`explain_pod` points to it).
    Raises:
        services.store.audit.DamagedRow: a damaged row of the audit events or of the outbox
            (named).
    """
    own = await _events(audit, [_pod_suffix(namespace, name)])
    if not own:  # no such pod: a PodGroup of that name, which explain_pod points to
        key = ids.group_key(namespace, name)
        tail = f"{subjects.token(namespace)}.{subjects.token(name)}"
        return [item for item in await _events(audit, [f".events.podgroup.{tail}"])
                if _about(item, [key])]
    groups = sorted({_pod_group(event.event) for event in own} - {""})
    return [*own, *await group_chain(audit, groups)]


async def podgroup_chain(audit: AuditLog, namespace: str, name: str) -> list[Item]:
    """The events and decisions that explain the PodGroup `namespace/name`, with the events of
    every member named by one of its decisions.

    Raises:
        services.store.audit.DamagedRow: as `pod_chain`.
    """
    items = await group_chain(audit, [f"{namespace}/{name}"])
    members = sorted({(ref_namespace, ref_name) for item in items if not isinstance(
        item, LoggedEvent) for ref_namespace, ref_name in _pods_named(item)})
    pods = await _events(audit, [_pod_suffix(ns, pod) for ns, pod in members])
    return [*items, *pods]


async def group_chain(audit: AuditLog, groups: list[str]) -> list[Item]:
    """PodGroup and outcome events, and recorded decisions, of `groups` (group keys), with
    the Preemptions that evict their pods (published under the preemptor's group)."""
    event_suffixes: list[str] = []
    decision_suffixes: list[str] = []
    for key in groups:
        namespace, name = split_key(GroupKey(key))
        tail = f"{subjects.token(namespace)}.{subjects.token(name)}"
        if not is_singleton(GroupKey(key)):
            event_suffixes.append(f".events.podgroup.{tail}")
        event_suffixes.append(f".events.outcome.{tail}")
        decision_suffixes.extend(f".decisions.{kind}.{tail}" for kind in DECISION_TYPES)
    events = [item for item in await _events(audit, event_suffixes) if _about(item, groups)]
    records = await audit.outbox_on_subjects(decision_suffixes)
    decisions = [_decision(record) for record in records]
    evicting = await _preemptions_of_victims(audit, groups)
    return [*events, *[decision for decision in decisions if decision.group in groups],
            *evicting]


async def _preemptions_of_victims(audit: AuditLog, groups: list[str]) -> list[Decision]:
    """The recorded Preemptions of other groups that evict a pod of `groups` (few: read all
    Preemptions, keep those naming such a victim)."""
    records = await audit.outbox_containing(".decisions.Preemption.")
    found = [_decision(record) for record in records]
    return [decision for decision in found if isinstance(decision, Preemption)
            and decision.group not in groups
            and any(victim.group in groups for victim in decision.victims)]


async def _events(audit: AuditLog, suffixes: list[str]) -> list[LoggedEvent]:
    rows = await audit.events_on_subjects(suffixes)
    return [LoggedEvent(seq, subject, _decode(seq, data))
            for seq, subject, _type, _at_ms, data in rows]


def _pod_suffix(namespace: str, name: str) -> str:
    return f".events.pod.{subjects.token(namespace)}.{subjects.token(name)}"


def _pod_group(event: Event) -> str:
    if not isinstance(event, PodObserved):
        return ""
    if event.group_name:
        return ids.group_key(event.namespace, event.group_name)
    return ids.singleton_key(event.namespace, event.name)


def _about(item: LoggedEvent, groups: list[str]) -> bool:
    """Whether a PodGroup or outcome event is about one of `groups` (subjects are lossy)."""
    event = item.event
    if isinstance(event, PodGroupObserved | PodGroupDeleted):
        return ids.group_key(event.namespace, event.name) in groups
    return isinstance(event, OUTCOMES) and event.group in groups


def _pods_named(decision: Decision) -> list[tuple[str, str]]:
    if isinstance(decision, Placement):
        return [(member.namespace, member.name) for member in decision.members]
    if isinstance(decision, Rejection):
        return [(pod.namespace, pod.name) for pod in decision.pods]
    if isinstance(decision, Preemption):
        return [*[(member.namespace, member.name) for member in decision.nominated],
                *[(victim.namespace, victim.name) for victim in decision.victims]]
    return []
