"""Plan one round, and when the core raises, isolate the events that make it raise.

Layer: planner shell, synchronous and pure (imports the core and contracts only). An exception
in the core is a bug; isolating it keeps one bad event from stalling the consumer: the events
that make the core raise are refused (dead-lettered with the error), the others are planned.
Isolation starts from the state before the batch, which the caller restores from the store
(snapshot plus catch-up): the in-memory state is not copied per batch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from services.contracts.decisions import Decision
from services.planner.core import config as core_config
from services.planner.core import plan, state
from services.planner.intake import FreshEvent, reason

log = logging.getLogger(__name__)


@dataclass
class Round:
    """The outcome of one planning round.

    `applied` are the events the round planned with (stream order); `refused` pairs each
    event the core could not apply with the error (empty unless the core raised).
    `is_planned` is False only when not even the good events could be planned: then no round
    ran (none is recorded) and `state` is the state before the batch.
    """

    state: state.PlannerState
    decisions: list[Decision]
    applied: list[FreshEvent]
    refused: list[tuple[FreshEvent, str]] = field(default_factory=list)
    is_planned: bool = True


def plan_round(
    current: state.PlannerState,
    fresh: Sequence[FreshEvent],
    config: core_config.PlannerConfig,
    plan_seq: int,
) -> Round | None:
    """Apply `fresh` to `current` and plan at `plan_seq`; None if the core raised.

    After None, `current` may be half-updated (the core updates in place): the caller
    discards it and calls `isolate` with the state as it was before the batch.
    """
    try:
        new_state, decisions = plan.step(current, [item.event for item in fresh], config, plan_seq)
    except Exception:
        log.exception("planner core raised on the round at seq %d; isolating its events", plan_seq)
        return None
    return Round(new_state, list(decisions), list(fresh))


def isolate(
    before: state.PlannerState,
    fresh: Sequence[FreshEvent],
    config: core_config.PlannerConfig,
    plan_seq: int,
) -> Round:
    """Find the events on which the core raises (one at a time, on copies of `before`),
    refuse them, and plan the rest in one round at `plan_seq`; if even that raises, refuse
    them all. `before` itself is never changed."""
    committed = state.encode_state(before)
    current = state.decode_state(committed)
    good: list[FreshEvent] = []
    bad: list[tuple[FreshEvent, str]] = []
    for item in fresh:
        trial = state.decode_state(state.encode_state(current))
        try:
            current, _ = plan.step(trial, [item.event], config, item.seq)
        except Exception as error:
            bad.append((item, f"planner core raised: {reason(error)}"))
        else:
            good.append(item)
    try:
        new_state, decisions = plan.step(
            state.decode_state(committed), [item.event for item in good], config, plan_seq
        )
    except Exception as error:
        refused = [(item, f"planner core raised: {reason(error)}") for item in good]
        return Round(state.decode_state(committed), [], [], sorted(
            refused + bad, key=lambda pair: pair[0].seq), is_planned=False)
    return Round(new_state, list(decisions), good, bad)
