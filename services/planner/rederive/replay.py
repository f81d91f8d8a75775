"""Re-derive the planner's decisions from the log, round by round, with the production core.

Layer: planner rederive (pure: the planner core only, no I/O, no clock). The state starts
empty (or at a snapshot) and is rebuilt from the first event; each round applies its events and
plans at its recorded plan point, exactly as the live planner did, so the same log and config
give the same decisions.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.contracts import codec
from services.contracts.decisions import Decision
from services.planner.core import plan, state
from services.planner.core.config import PlannerConfig
from services.planner.rederive.rounds import RoundInput


class ReplayFailed(Exception):
    """The planner core raised while replaying a round (the live planner would have refused
    those events as dead letters; a replay of the database never meets them)."""


@dataclass(frozen=True)
class RoundResult:
    """A replayed round: its input and the decisions re-derived for it (encoded too)."""

    round: RoundInput
    derived: list[Decision]
    encoded: list[bytes]


class Replay:
    """The planner state rebuilt so far, and the config it plans with."""

    def __init__(self, config: PlannerConfig) -> None:
        self.config = config
        self.state = state.empty_state()
        self.events_applied = 0

    def play(self, rnd: RoundInput) -> RoundResult:
        """Apply the round's events and, when it has a plan point, plan there.

        Raises:
            ReplayFailed: the core raised (names the plan point, chained to the error).
        """
        try:
            for item in rnd.events:
                self.state = plan.apply(self.state, item.event)
            decisions: list[Decision] = []
            if rnd.plan_seq is not None:
                self.state, decisions = plan.plan(self.state, self.config, rnd.plan_seq)
        except Exception as error:
            where = rnd.plan_seq if rnd.plan_seq is not None else "the tail of the log"
            raise ReplayFailed(f"planner core raised replaying the round at {where}: "
                               f"{error!r}") from error
        self.events_applied += len(rnd.events)
        return RoundResult(rnd, decisions, [codec.encode(d) for d in decisions])
