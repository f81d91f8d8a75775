"""Telling our own duplicate from another message under our id (no server)."""

from __future__ import annotations

from services.bus import collisions

SUBJECT = "gs.events.clock._.tick"
DATA = b'{"type":"ClockTicked","at_ms":5000}'
OURS = {"Nats-Msg-Id": "clock/5"}


def test_the_same_subject_is_our_own_or_a_replicas_duplicate_whatever_the_bytes() -> None:
    # two watchers observe one change at different times: it must be stored once
    stored_headers = {**OURS, "Nats-Expected-Stream": "X"}
    assert collisions.verdict(SUBJECT, stored_headers, SUBJECT, OURS) is None


def test_another_subject_under_our_id_is_a_collision() -> None:
    outcome = "gs.events.outcome.default.train"
    assert collisions.verdict(outcome, OURS, SUBJECT, OURS) == collisions.DIFFERS


def test_on_a_shared_subject_a_copy_without_our_signature_is_not_ours() -> None:
    signed = {**OURS, "Gangsched-Signature": "v1 k s"}
    assert collisions.verdict(SUBJECT, OURS, SUBJECT, signed) == collisions.DIFFERS
    assert collisions.verdict(SUBJECT, {**OURS, "Gangsched-Signature": "v1 k t"}, SUBJECT,
                              signed) == collisions.DIFFERS
    assert collisions.verdict(SUBJECT, signed, SUBJECT, signed) is None


def test_the_content_fallback_is_stable_and_the_last_one_random() -> None:
    hashed, random_one = collisions.fallback_ids("clock/5", SUBJECT, DATA)
    again, other_random = collisions.fallback_ids("clock/5", SUBJECT, DATA)
    assert hashed == again and hashed.startswith("clock/5/h")
    assert random_one != other_random and random_one.startswith("clock/5/r")
    assert collisions.fallback_ids("clock/5", SUBJECT, b"x")[0] != hashed
