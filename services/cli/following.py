"""`gangsched decisions`: print the DECISIONS stream, optionally one PodGroup's or one decision
type's, and follow it.

Layer: cli (composition). Reads with an ephemeral ordered consumer (`services.bus.reading`):
nothing is acked, and the binder's durable work-queue consumer never notices a reader.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass

from services.bus import connection, reading
from services.bus.errors import BusUnavailable
from services.bus.reading import StoredMessage
from services.cli import audit_view
from services.config.settings import BusSettings
from services.contracts import codec, subjects
from services.contracts.decisions import DECISION_TYPES, Decision, Preemption
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey

PREEMPTION = Preemption.__name__


def decisions_filter(prefix: str, podgroup: tuple[str, str] | None,
                     decision_type: str | None = None) -> str:
    """`<prefix>.decisions.>`, or for one PodGroup `<prefix>.decisions.*.<ns>.<name>` (names
    made subject tokens as the publisher does: `.`, `*`, `>` and spaces become `_`), the `*`
    being `decision_type` when given. Preemptions of one PodGroup are every Preemption
    (`<prefix>.decisions.Preemption.>`): one evicting its members is published under the
    preemptor's group, so `wanted` picks them from all."""
    kind = decision_type or "*"
    if podgroup is None:
        return (subjects.decisions_wildcard(prefix) if decision_type is None
                else subjects.decisions_of_type_wildcard(prefix, decision_type))
    if decision_type == PREEMPTION:
        return subjects.decisions_of_type_wildcard(prefix, PREEMPTION)
    namespace, name = podgroup
    return f"{prefix}.decisions.{kind}.{subjects.token(namespace)}.{subjects.token(name)}"


def wanted(decision: Decision | None, group: str, podgroup: str | None) -> bool:
    """Whether a decision of `group` read through the filter is about `podgroup` (`ns/name`;
    None: every group): its own, or a Preemption evicting one of its members."""
    if podgroup is None or group == podgroup:
        return True
    return isinstance(decision, Preemption) and any(
        victim.group == podgroup for victim in decision.victims)


WATCH_SECONDS = 2.0
"""How often a follower of `gangsched run` checks that the run it follows still serves."""


@dataclass(frozen=True)
class Signer:
    """The planner's decision key, and where it was read (`--decision-key-file`, or the
    `decision.key` of a `gangsched run`'s data directory): decisions not signed with it are
    left out, as the binder dead-letters them."""

    key: DecisionKey
    source: str


async def print_decisions(bus: BusSettings, podgroup: tuple[str, str] | None, *, follow: bool,
                          output: str, gone: Callable[[], str | None] | None = None,
                          decision_type: str | None = None,
                          started: Callable[[], None] | None = None,
                          signer: Signer | None = None) -> int:
    """Print the stored decisions (of `podgroup` and of `decision_type`, one of
    `DECISION_TYPES`, if given), then new ones with `follow`; return how many were printed.
    `gone`, checked every `WATCH_SECONDS` while following: why the NATS being read no longer
    serves (e.g. the `gangsched run` whose embedded server it is stopped or restarted on
    another port), or None while it does. `started`, called once NATS is connected and the
    DECISIONS stream found, before the first decision: reading has begun (a NATS that cannot
    be reached, or no such stream, is then the one thing said). A message that is no decision
    (not a JSON object, or a known type that does not decode: malformed) and, with `signer`,
    one not signed with its key are left out, each said in one line on standard error
    (`audit_view.skipped`, `audit_view.unsigned`); a JSON object of a type this version does
    not know is printed as published with `-o json` only.

    The connection's errors, logged while reading (its server stopping: `unexpected EOF`,
    then `connection refused` while it retries), are said in words (`connection.in_words`).

    Raises:
        services.bus.errors.BusUnavailable: NATS unreachable, or `gone` said why.
        services.bus.errors.NotFound: no DECISIONS stream for this prefix.
    """
    request = _Request(podgroup, follow, output, decision_type, started, signer)
    if gone is None or not follow:
        return await _print(bus, request)
    return await _watched(bus, request, gone)


async def _watched(bus: BusSettings, request: _Request, gone: Callable[[], str | None]) -> int:
    """`_print`, checking `gone` every `WATCH_SECONDS` (`print_decisions`)."""
    reader = asyncio.ensure_future(_print(bus, request))
    try:
        while True:
            done, _ = await asyncio.wait({reader}, timeout=WATCH_SECONDS)
            if done:
                return reader.result()
            why = gone()
            if why is not None:
                raise BusUnavailable(why)
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


@dataclass(frozen=True)
class _Request:
    """What `print_decisions` was asked to print, and how (its arguments but the watch)."""

    podgroup: tuple[str, str] | None
    follow: bool
    output: str
    decision_type: str | None
    started: Callable[[], None] | None
    signer: Signer | None


async def _print(bus: BusSettings, request: _Request) -> int:
    """`print_decisions` without the watch."""
    client = await connection.connect(bus, name="gangsched-decisions",
                                      first_connect_timeout_seconds=10)
    view, printed = audit_view.DecisionView(request.output), 0
    podgroup = request.podgroup
    about = None if podgroup is None else f"{podgroup[0]}/{podgroup[1]}"
    subject_filter = decisions_filter(bus.prefix, podgroup, request.decision_type)
    try:
        stream = subjects.stream_name(bus.prefix, "DECISIONS")
        if request.started is not None:
            await reading.stream_state(client.jetstream(), stream)  # NotFound: said alone
            request.started()
        async for message in reading.read(client.jetstream(), stream,
                                          subject_filter, follow=request.follow):
            if _shown(message, request, about, view):
                printed += 1
    finally:  # closing a connection that is lost raises nothing, nor hides a Ctrl-C
        await connection.close_at_once(client)
    return printed


def _shown(message: StoredMessage, request: _Request, about: str | None,
           view: audit_view.DecisionView) -> bool:
    """Print `message` if it is a decision the request shows; whether it was printed. What is
    left out as not the planner's is said (`print_decisions`)."""
    decision, group, junk = _decode(message.data)
    if junk is not None:  # on the bus, not from the planner: named, never printed
        audit_view.skipped(message.seq, *junk)
        return False
    if not wanted(decision, group, about):
        return False  # another group whose name maps to the same subject token, or a
        # Preemption of others
    forged = None if request.signer is None else unsigned(request.signer, message)
    if forged is not None:  # as the binder dead-letters it: never acted on
        audit_view.unsigned(message.seq, forged)
        return False
    if decision is None and request.output != "json":
        return False  # a decision type newer than this gangsched: only JSON shows it
    view.show(message.seq, decision, message.data)
    return True


def unsigned(signer: Signer, message: StoredMessage) -> str | None:
    """Why `message` was not signed with the key of `signer` (`DecisionKey.check`, naming
    the key's source when another key signed it), or None when it was."""
    header = message.headers.get(SIGNATURE_HEADER)
    why = signer.key.check(message.subject, message.data, header)
    parts = (header or "").split(" ")
    if why is not None and len(parts) == 3 and parts[1] != signer.key.key_id:
        return (f"signed with another key (key id {parts[1][:16]}; that of {signer.source} "
                f"is {signer.key.key_id})")
    return why


def _decode(data: bytes) -> tuple[Decision | None, str, tuple[str, str] | None]:
    """The decision (None for a type this version does not know: a JSON object whose `type`
    is a name none of `DECISION_TYPES`), its group, and, when `data` is no decision at all,
    why and what it is for `audit_view.skipped` (not UTF-8, not a JSON object, nested too
    deep, no `type`: not a decision; a known type that does not decode: malformed, since
    fields are only ever added with a default, docs/decisions.md), or None."""
    try:
        decision = codec.decode_decision(data)
    except codec.PoisonedMessage as error:
        try:
            body = json.loads(data)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return None, "", (str(error), audit_view.NOT_A_DECISION)
        kind = body.get("type") if isinstance(body, dict) else None
        if not isinstance(kind, str) or not kind:
            return None, "", (str(error), audit_view.NOT_A_DECISION)
        if kind in DECISION_TYPES:
            return None, "", (str(error), f"a malformed {kind}")
        return None, str(body.get("group", "")), None
    return decision, decision.group, None
