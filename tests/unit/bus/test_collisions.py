"""Telling our own duplicate from another message under our id (no server)."""

from __future__ import annotations

from services.bus import collisions

SUBJECT = "gs.events.clock._.tick"
DATA = b'{"type":"ClockTicked","at_ms":5000}'
OURS = {"Nats-Msg-Id": "clock/5"}


def test_the_same_subject_bytes_and_headers_are_our_own_duplicate() -> None:
    stored_headers = {**OURS, "Nats-Expected-Stream": "X"}
    assert collisions.verdict(SUBJECT, DATA, stored_headers, SUBJECT, DATA, OURS) is None


def test_another_subject_or_payload_under_our_id_is_a_collision() -> None:
    outcome = "gs.events.outcome.default.train"
    assert collisions.verdict(outcome, DATA, OURS, SUBJECT, DATA, OURS) == collisions.DIFFERS
    assert collisions.verdict(SUBJECT, b"{}", OURS, SUBJECT, DATA, OURS) == collisions.DIFFERS


def test_a_copy_without_our_signature_header_is_not_ours() -> None:
    signed = {**OURS, "Gangsched-Signature": "v1 k s"}
    assert collisions.verdict(SUBJECT, DATA, OURS, SUBJECT, DATA, signed) == collisions.DIFFERS


def test_the_content_fallback_is_stable_and_the_last_one_random() -> None:
    hashed, random_one = collisions.fallback_ids("clock/5", SUBJECT, DATA)
    again, other_random = collisions.fallback_ids("clock/5", SUBJECT, DATA)
    assert hashed == again and hashed.startswith("clock/5/h")
    assert random_one != other_random and random_one.startswith("clock/5/r")
    assert collisions.fallback_ids("clock/5", SUBJECT, b"x")[0] != hashed
