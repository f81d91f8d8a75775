"""Decision signatures: what the planner signs, the binder's key accepts and nothing else."""

from __future__ import annotations

import pytest

from services.contracts.signing import DecisionKey, UnusableKey

KEY = DecisionKey.from_text("0123456789abcdef" * 4 + "\n")
SUBJECT = "gangsched.decisions.Placement.default.g"


def test_a_signed_message_checks_out_with_the_same_key() -> None:
    header = KEY.sign(SUBJECT, b'{"type":"Placement"}')
    assert KEY.check(SUBJECT, b'{"type":"Placement"}', header) is None
    assert header.startswith(f"v1 {KEY.key_id} ")
    assert KEY.secret.decode() not in header


@pytest.mark.parametrize(("subject", "data", "header", "reason"), [
    (SUBJECT, b"{}", None, "not signed (no Gangsched-Signature header)"),
    (SUBJECT, b"{}", "v2 x y", "malformed Gangsched-Signature header"),
    (SUBJECT, b"{}", "garbage", "malformed Gangsched-Signature header"),
    (SUBJECT, b"{} ", KEY.sign(SUBJECT, b"{}"),
     "signature does not match the message (altered or forged)"),
    (SUBJECT + "x", b"{}", KEY.sign(SUBJECT, b"{}"),
     "signature does not match the message (altered or forged)"),
])
def test_anything_else_is_refused_with_its_reason(
    subject: str, data: bytes, header: str | None, reason: str
) -> None:
    assert KEY.check(subject, data, header) == reason


def test_a_message_signed_with_another_key_names_both_key_ids_only() -> None:
    other = DecisionKey(b"z" * 40)
    reason = KEY.check(SUBJECT, b"{}", other.sign(SUBJECT, b"{}"))
    assert reason == (f"signed with another key (key id {other.key_id}, this binder's "
                      f"{KEY.key_id})")


def test_a_short_key_is_refused_and_the_key_never_shows_in_repr() -> None:
    with pytest.raises(UnusableKey, match="at least 32"):
        DecisionKey.from_text("  short \n")
    assert "0123456789abcdef" not in repr(KEY)
