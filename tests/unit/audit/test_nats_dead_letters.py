"""Which dead letters NATS replay honours: only the planner's, proven by its signature."""

from __future__ import annotations

from services.audit.nats_log import is_planners
from services.contracts import dead_letters
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey

KEY = DecisionKey.from_text("k" * 64)
SUBJECT = "gs.deadletter"
DATA = b'{"type":"ClockTicked","at_ms":1}'


def letter(seq: str = "7", consumer: str = "planner") -> dict[str, str]:
    return {dead_letters.CONSUMER_HEADER: consumer, dead_letters.SEQ_HEADER: seq}


def test_a_signed_planner_dead_letter_names_its_event() -> None:
    headers = {**letter(), SIGNATURE_HEADER: KEY.sign(SUBJECT, DATA)}
    assert is_planners(SUBJECT, DATA, headers, KEY) == 7


def test_an_unsigned_or_resigned_dead_letter_is_not_honoured() -> None:
    other = DecisionKey.from_text("o" * 64)
    assert is_planners(SUBJECT, DATA, letter(), KEY) is None
    assert is_planners(SUBJECT, DATA, {**letter(), SIGNATURE_HEADER: other.sign(SUBJECT, DATA)},
                       KEY) is None
    assert is_planners(SUBJECT, b"{}", {**letter(), SIGNATURE_HEADER: KEY.sign(SUBJECT, DATA)},
                       KEY) is None


def test_another_consumers_or_a_malformed_dead_letter_is_not_honoured() -> None:
    signature = {SIGNATURE_HEADER: KEY.sign(SUBJECT, DATA)}
    assert is_planners(SUBJECT, DATA, {**letter(consumer="binder"), **signature}, KEY) is None
    assert is_planners(SUBJECT, DATA, {**letter(seq="x"), **signature}, KEY) is None
