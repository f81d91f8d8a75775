"""JSON encoding and decoding of events and decisions (msgspec; readable by any client).

Layer: contracts. Pure; never does I/O.
"""

from __future__ import annotations

import msgspec

from services.contracts.decisions import Decision
from services.contracts.events import Event

_event_decoder = msgspec.json.Decoder(Event)
_decision_decoder = msgspec.json.Decoder(Decision)
_encoder = msgspec.json.Encoder()


UNDECODABLE = (msgspec.DecodeError, RecursionError)
"""What msgspec raises for bytes that are no valid document of the type asked: not JSON, the
wrong types (`ValidationError` is a `DecodeError`), or nested deeper than it decodes (a JSON
array of arrays 5,000 deep, 10 KB on the bus, raised RecursionError past every handler)."""


class PoisonedMessage(ValueError):
    """A message that cannot be decoded as a known, valid event or decision."""


def encode(message: Event | Decision) -> bytes:
    """Encode an event or decision to JSON bytes (field `type` carries the tag)."""
    return _encoder.encode(message)


def decode_event(data: bytes) -> Event:
    """Decode one event.

    Raises:
        PoisonedMessage: not JSON, unknown `type`, fields of the wrong type, or nested too
            deep; the message says which.
    """
    try:
        return _event_decoder.decode(data)
    except UNDECODABLE as error:
        raise PoisonedMessage(str(error)) from error


def decode_decision(data: bytes) -> Decision:
    """Decode one decision.

    Raises:
        PoisonedMessage: as `decode_event`.
    """
    try:
        return _decision_decoder.decode(data)
    except UNDECODABLE as error:
        raise PoisonedMessage(str(error)) from error
