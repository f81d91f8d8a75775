"""Compare re-derived decisions with the recorded ones, byte for byte; keep the first difference.

Layer: planner rederive (pure). A decision matches when its encoded JSON equals the recorded
bytes and its subject equals the recorded subject; anything else (different bytes, a decision
only one side has, a recorded decision whose plan point has no round) is a `Divergence`.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.contracts.decisions import Decision, decision_subject
from services.planner.core import revision
from services.planner.rederive.replay import RoundResult
from services.planner.rederive.rounds import RecordedDecision

DECISIONS_MARKER = ".decisions."


@dataclass(frozen=True)
class Divergence:
    """The first decision where replay and record differ.

    Shapes: `index` is the decision's position in its round; `recorded`/`derived` are
    `(subject, JSON bytes)` or None for the side that has no decision there.
    """

    plan_seq: int | None
    index: int
    recorded: tuple[str, bytes] | None
    derived: tuple[str, bytes] | None
    recorded_by: str | None = None
    replayed_by: str = revision.PLANNER

    def describe(self) -> str:
        """One line naming where the divergence is (and, when the log says the round was
        planned by another planner than this one, both planners)."""
        where = (f"plan point {self.plan_seq}" if self.plan_seq is not None
                 else "a recorded decision with no recorded round")
        if self.recorded is None:
            what = "replay derived an extra one"
        elif self.derived is None:
            what = "replay did not derive it"
        else:
            what = "they differ"
        line = f"divergence at {where}, decision {self.index}: {what}"
        if self.other_planner:
            line += (f" (the round was planned by {self.recorded_by} and replayed by "
                     f"{self.replayed_by}: the difference may be theirs, not a bug)")
        return line

    @property
    def other_planner(self) -> bool:
        """Whether the log names a planner for the round other than the replaying one."""
        return self.recorded_by is not None and self.recorded_by != self.replayed_by


class Verifier:
    """Counts matching decisions and plan points; stops counting at the first divergence.

    `prefix` is the subject prefix used for a re-derived decision when no recorded subject
    tells the recorded run's prefix.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.decisions = 0
        self.plan_points = 0
        self.divergence: Divergence | None = None
        self._subjects: dict[tuple[str, str, str], str] = {}

    def check(self, result: RoundResult) -> Divergence | None:
        """Compare one replayed round; return (and keep) the first divergence, if any."""
        if self.divergence is not None:
            return self.divergence
        recorded = result.round.recorded
        for index in range(max(len(recorded), len(result.derived))):
            mine = self._derived(result, index, recorded)
            theirs = recorded[index] if index < len(recorded) else None
            if theirs is None or mine is None or (theirs.subject, theirs.data) != mine:
                self.divergence = Divergence(
                    result.round.plan_seq, index,
                    None if theirs is None else (theirs.subject, theirs.data), mine,
                    result.round.planner)
                return self.divergence
            self.decisions += 1
        if result.round.plan_seq is not None:
            self.plan_points += 1
        return None

    def summary(self) -> str:
        """`verified N decisions at M plan points`."""
        return f"verified {self.decisions} decisions at {self.plan_points} plan points"

    def _derived(self, result: RoundResult, index: int,
                 recorded: list[RecordedDecision]) -> tuple[str, bytes] | None:
        if index >= len(result.derived):
            return None
        prefix = self.prefix
        if recorded and DECISIONS_MARKER in recorded[0].subject:
            prefix = recorded[0].subject.split(DECISIONS_MARKER, 1)[0]
        decision: Decision = result.derived[index]
        key = (prefix, type(decision).__name__, decision.group)
        subject = self._subjects.get(key)
        if subject is None:
            subject = self._subjects[key] = decision_subject(prefix, decision)
        return subject, result.encoded[index]
