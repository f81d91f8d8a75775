"""Replay re-derives the recorded decisions byte for byte; any difference is the first
divergence, with both versions."""

from __future__ import annotations

import msgspec

from services.contracts.decisions import Placement, Rejection
from services.planner.core.config import MOST_ALLOCATED, PlannerConfig
from services.planner.rederive.replay import Replay
from services.planner.rederive.rounds import RecordedDecision, RoundInput
from services.planner.rederive.verify import Verifier
from tests.unit.audit.recorded import PREFIX, scenario


def verify(rounds: list[RoundInput], config: PlannerConfig | None = None) -> Verifier:
    replay, verifier = Replay(config or PlannerConfig()), Verifier(PREFIX)
    for rnd in rounds:
        if verifier.check(replay.play(rnd)) is not None:
            break
    return verifier


def test_the_scenario_has_a_placement_a_rollback_and_a_retry() -> None:
    decisions = scenario().decisions
    attempts = [(d.group, d.attempt) for d in decisions if isinstance(d, Placement)]
    assert attempts == [("default/nginx", 1), ("default/train", 1), ("default/train", 2)]
    assert any(isinstance(d, Rejection) and "rolled back" in d.reason for d in decisions)


def test_replaying_with_the_same_config_reproduces_every_decision() -> None:
    rec = scenario()
    verifier = verify(rec.rounds)
    assert verifier.divergence is None
    assert verifier.decisions == len(rec.decisions)
    assert verifier.plan_points == len(rec.rounds)
    assert verifier.summary() == (f"verified {len(rec.decisions)} decisions at "
                                  f"{len(rec.rounds)} plan points")


def test_another_scoring_strategy_diverges_at_the_first_placement_it_changes() -> None:
    rec = scenario()
    verifier = verify(rec.rounds, PlannerConfig(scoring=MOST_ALLOCATED))
    divergence = verifier.divergence
    assert divergence is not None and divergence.recorded and divergence.derived
    recorded = msgspec.json.decode(divergence.recorded[1])
    derived = msgspec.json.decode(divergence.derived[1])
    assert recorded["type"] == derived["type"] == "Placement"
    assert recorded["group"] == "default/train"
    assert recorded["members"] != derived["members"]
    assert verifier.decisions > 0  # everything before it matched


def test_another_default_timeout_diverges_at_the_first_deadline() -> None:
    verifier = verify(scenario().rounds, PlannerConfig(default_timeout_seconds=30))
    divergence = verifier.divergence
    assert divergence is not None and divergence.recorded and divergence.derived
    recorded = msgspec.json.decode(divergence.recorded[1])
    derived = msgspec.json.decode(divergence.derived[1])
    assert recorded["group"] == "default/nginx"
    assert recorded["deadline_ms"] - recorded["at_ms"] == 60_000
    assert derived["deadline_ms"] - derived["at_ms"] == 30_000
    assert verifier.decisions == 0


def test_a_recorded_decision_replay_does_not_derive_is_a_divergence() -> None:
    rounds = scenario().rounds
    extra = RecordedDecision("99-9", rounds[0].plan_seq or 0, 99, "gangsched.decisions.x",
                             b"{}")
    rounds[0] = msgspec.structs.replace(rounds[0], recorded=[*rounds[0].recorded, extra])
    divergence = verify(rounds).divergence
    assert divergence is not None and divergence.derived is None
    assert divergence.recorded == ("gangsched.decisions.x", b"{}")
    assert "did not derive" in divergence.describe()


def test_a_decision_missing_from_the_record_is_a_divergence() -> None:
    rounds = scenario().rounds
    rounds[0] = msgspec.structs.replace(rounds[0], recorded=rounds[0].recorded[:-1])
    divergence = verify(rounds).divergence
    assert divergence is not None and divergence.recorded is None
    assert divergence.index == len(rounds[0].recorded)
    assert "extra" in divergence.describe()


def test_a_different_subject_is_a_divergence_even_with_the_same_bytes() -> None:
    rounds = scenario().rounds
    first = rounds[0].recorded[0]
    moved = msgspec.structs.replace(first, subject=first.subject.replace("default", "other"))
    rounds[0] = msgspec.structs.replace(rounds[0], recorded=[moved, *rounds[0].recorded[1:]])
    divergence = verify(rounds).divergence
    assert divergence is not None and divergence.plan_seq == rounds[0].plan_seq
    assert divergence.index == 0


def test_a_recorded_decision_without_a_round_is_reported() -> None:
    rounds = scenario().rounds
    orphan = RecordedDecision("5000-0", 5000, 0, "gangsched.decisions.x", b"{}")
    divergence = verify([*rounds, RoundInput(None, [], [orphan])]).divergence
    assert divergence is not None and divergence.plan_seq is None
    assert "no recorded round" in divergence.describe()


def test_events_after_the_last_plan_point_are_applied_but_not_planned() -> None:
    rec = scenario()
    last = rec.rounds[-1]
    tail = RoundInput(None, last.events, [])
    replay = Replay(PlannerConfig())
    for rnd in rec.rounds[:-1]:
        replay.play(rnd)
    result = replay.play(tail)
    assert result.derived == [] and replay.events_applied == sum(
        len(r.events) for r in rec.rounds)
