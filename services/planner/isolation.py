"""Plan one round, and when the core raises, isolate the events that make it raise.

Layer: planner shell, synchronous and pure (imports the core and contracts only). An exception
in the core is a bug; isolating it keeps one bad event from stalling the consumer: the events
that make the core raise are refused (dead-lettered with the error), the others are planned.
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
    """

    state: state.PlannerState
    decisions: list[Decision]
    applied: list[FreshEvent]
    refused: list[tuple[FreshEvent, str]] = field(default_factory=list)


def plan_round(
    current: state.PlannerState,
    committed: bytes,
    fresh: Sequence[FreshEvent],
    config: core_config.PlannerConfig,
    plan_seq: int,
) -> Round:
    """Apply `fresh` to `current` and plan at `plan_seq`.

    `committed` is the encoded state `current` was before (it may be mutated by a failed step
    and is then rebuilt from these bytes).
    """
    try:
        new_state, decisions = plan.step(current, [item.event for item in fresh], config, plan_seq)
    except Exception:
        log.exception("planner core raised on the round at seq %d; isolating its events", plan_seq)
        return isolate(committed, fresh, config, plan_seq)
    return Round(new_state, list(decisions), list(fresh))


def isolate(
    committed: bytes,
    fresh: Sequence[FreshEvent],
    config: core_config.PlannerConfig,
    plan_seq: int,
) -> Round:
    """Find the events on which the core raises (one at a time, on copies), refuse them, and
    plan the rest in one round at `plan_seq`; if even that raises, refuse them all."""
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
            refused + bad, key=lambda pair: pair[0].seq))
    return Round(new_state, list(decisions), good, bad)
