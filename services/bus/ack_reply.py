"""What a delivered JetStream message's ack reply subject says about it, read in one split.

Layer: bus. JetStream names each delivery in its reply subject:
`$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ns>.<pending>` (9 tokens),
or with `<domain>.<account hash>` after `ACK` and a random token at the end (12; servers since
2.9). nats-py's `Msg.metadata` parses the same tokens into a dataclass with a `datetime`, which
cost every consumer about a tenth of its time per message in the cluster benchmark's profile;
this reads only the integers gangsched uses.
"""

from __future__ import annotations

from typing import NamedTuple

from nats.errors import NotJSMessageError

_PREFIX = ("$JS", "ACK")
_SHORT = 9
"""Tokens of the reply without domain and account hash."""
_LONG_AT_LEAST = 11
"""Tokens of the reply with domain and account hash (the random last token is optional)."""


class Delivered(NamedTuple):
    """One delivery, as its reply subject gives it.

    Units: `stored_at_ms` is when the stream stored the message, UTC epoch milliseconds
    (rounded); `stored_at_us` the same time in UTC epoch microseconds, truncated from the
    server's nanoseconds (the precision of `reading.stored_at_us`, a lookup by sequence).
    """

    stream_seq: int
    consumer_seq: int
    num_delivered: int
    num_pending: int
    stored_at_ms: int
    stored_at_us: int


def parse(reply: str | None) -> Delivered:
    """The delivery `reply` (a message's reply subject) names.

    Raises:
        nats.errors.NotJSMessageError: not a JetStream ack subject (as `Msg.metadata`).
    """
    tokens = reply.split(".") if reply else []
    if len(tokens) == _SHORT:
        first = 4
    elif len(tokens) >= _LONG_AT_LEAST:
        first = 6
    else:
        raise NotJSMessageError
    if (tokens[0], tokens[1]) != _PREFIX:
        raise NotJSMessageError
    try:
        delivered, stream_seq, consumer_seq, stamp_ns, pending = (
            int(token) for token in tokens[first : first + 5])
    except ValueError as error:
        raise NotJSMessageError from error
    return Delivered(stream_seq, consumer_seq, delivered, pending, round(stamp_ns / 1_000_000),
                     stamp_ns // 1000)
