"""`ack_reply.parse` reads what nats-py's own `Msg.metadata` reads, for both reply forms."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.msg import Msg
from nats.errors import NotJSMessageError

from services.bus import ack_reply, reading

counts = st.integers(min_value=0, max_value=2**63 - 1)
stamps = st.integers(min_value=0, max_value=4_102_444_800 * 10**9)  # up to 2100, in ns


def reference(reply: str) -> ack_reply.Delivered:
    """nats-py's reading of the same subject."""
    meta = Msg(_client=None, reply=reply).metadata  # type: ignore[arg-type]
    stored_at_us = reading.stored_at_us(meta.timestamp)
    assert stored_at_us is not None
    return ack_reply.Delivered(meta.sequence.stream, meta.sequence.consumer, meta.num_delivered,
                               meta.num_pending, round(meta.timestamp.timestamp() * 1000),
                               stored_at_us)


@given(counts, counts, counts, counts, stamps)
def test_the_short_form_reads_as_nats_py_reads_it(
        delivered: int, stream_seq: int, consumer_seq: int, pending: int, ns: int) -> None:
    reply = f"$JS.ACK.EVENTS.planner.{delivered}.{stream_seq}.{consumer_seq}.{ns}.{pending}"
    parsed = ack_reply.parse(reply)
    expected = reference(reply)
    assert parsed[:4] == expected[:4] == (stream_seq, consumer_seq, delivered, pending)
    # nats-py goes through a datetime (microseconds, float seconds): within a millisecond
    assert abs(parsed.stored_at_ms - expected.stored_at_ms) <= 1
    assert parsed.stored_at_ms == round(ns / 1_000_000)
    assert parsed.stored_at_us == ns // 1000  # the microseconds a lookup by sequence keeps


@given(counts, counts, counts, counts, stamps, st.booleans())
def test_the_long_form_with_domain_and_account_reads_as_nats_py_reads_it(
        delivered: int, stream_seq: int, consumer_seq: int, pending: int, ns: int,
        with_random: bool) -> None:
    tail = ".x7Gq" if with_random else ""
    reply = (f"$JS.ACK._.ACCHASH.EVENTS.binder.{delivered}.{stream_seq}.{consumer_seq}.{ns}."
             f"{pending}{tail}")
    parsed = ack_reply.parse(reply)
    assert parsed[:4] == reference(reply)[:4] == (stream_seq, consumer_seq, delivered, pending)


@pytest.mark.parametrize("reply", [
    None, "", "_INBOX.abc", "$JS.ACK.EVENTS.planner.1.2.3.4",  # one token short
    "$JS.NAK.EVENTS.planner.1.2.3.4.5", "$JS.ACK.EVENTS.planner.1.two.3.4.5",
])
def test_what_is_no_ack_subject_is_refused(reply: str | None) -> None:
    with pytest.raises(NotJSMessageError):
        ack_reply.parse(reply)
