"""`gangsched decisions`: print the DECISIONS stream, optionally one PodGroup's or one decision
type's, and follow it.

Layer: cli (composition). Reads with an ephemeral ordered consumer (`services.bus.reading`):
nothing is acked, and the binder's durable work-queue consumer never notices a reader.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from services.bus import connection, reading
from services.bus.errors import BusUnavailable
from services.cli import audit_view
from services.config.settings import BusSettings
from services.contracts import codec, subjects
from services.contracts.decisions import Decision, Preemption

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


async def print_decisions(bus: BusSettings, podgroup: tuple[str, str] | None, *, follow: bool,
                          output: str, gone: Callable[[], str | None] | None = None,
                          decision_type: str | None = None,
                          started: Callable[[], None] | None = None) -> int:
    """Print the stored decisions (of `podgroup` and of `decision_type`, one of
    `DECISION_TYPES`, if given), then new ones with `follow`; return how many were printed.
    `gone`, checked every `WATCH_SECONDS` while following: why the NATS being read no longer
    serves (e.g. the `gangsched run` whose embedded server it is stopped or restarted on
    another port), or None while it does. `started`, called once NATS is connected and the
    DECISIONS stream found, before the first decision: reading has begun (a NATS that cannot
    be reached, or no such stream, is then the one thing said).

    Raises:
        services.bus.errors.BusUnavailable: NATS unreachable, or `gone` said why.
        services.bus.errors.NotFound: no DECISIONS stream for this prefix.
    """
    if gone is None or not follow:
        return await _print(bus, podgroup, follow=follow, output=output,
                            decision_type=decision_type, started=started)
    reader = asyncio.ensure_future(_print(bus, podgroup, follow=follow, output=output,
                                          decision_type=decision_type, started=started))
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


async def _print(bus: BusSettings, podgroup: tuple[str, str] | None, *, follow: bool,
                 output: str, decision_type: str | None,
                 started: Callable[[], None] | None) -> int:
    """`print_decisions` without the watch."""
    client = await connection.connect(bus, name="gangsched-decisions",
                                      first_connect_timeout_seconds=10)
    view, printed = audit_view.DecisionView(output), 0
    about = None if podgroup is None else f"{podgroup[0]}/{podgroup[1]}"
    subject_filter = decisions_filter(bus.prefix, podgroup, decision_type)
    try:
        stream = subjects.stream_name(bus.prefix, "DECISIONS")
        if started is not None:
            await reading.stream_state(client.jetstream(), stream)  # NotFound: said alone
            started()
        async for message in reading.read(client.jetstream(), stream,
                                          subject_filter, follow=follow):
            decision, group, junk = _decode(message.data)
            if junk is not None:  # on the bus, not from the planner: named, never printed
                audit_view.skipped(message.seq, junk)
                continue
            if not wanted(decision, group, about):
                continue  # another group whose name maps to the same subject token, or a
                # Preemption of others
            if decision is None and output != "json":
                continue  # a decision type newer than this gangsched: only JSON shows it
            view.show(message.seq, decision, message.data)
            printed += 1
    finally:  # closing a connection that is lost raises nothing, nor hides a Ctrl-C
        await connection.close_at_once(client)
    return printed


def _decode(data: bytes) -> tuple[Decision | None, str, str | None]:
    """The decision (None for a type this version does not know: a JSON object), its group,
    and why `data` is no decision at all (not UTF-8, not a JSON object, nested too deep), or
    None."""
    try:
        decision = codec.decode_decision(data)
    except codec.PoisonedMessage as error:
        try:
            body = json.loads(data)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return None, "", str(error)
        if not isinstance(body, dict):
            return None, "", str(error)
        return None, str(body.get("group", "")), None
    return decision, decision.group, None
