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


class PoisonedMessage(ValueError):
    """A message that cannot be decoded as a known, valid event or decision."""


def encode(message: Event | Decision) -> bytes:
    """Encode an event or decision to JSON bytes (field `type` carries the tag)."""
    return _encoder.encode(message)


def decode_event(data: bytes) -> Event:
    """Decode one event.

    Raises:
        PoisonedMessage: not JSON, unknown `type`, or fields of the wrong type; the message
            says which.
    """
    try:
        return _event_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise PoisonedMessage(str(error)) from error


def decode_decision(data: bytes) -> Decision:
    """Decode one decision.

    Raises:
        PoisonedMessage: as `decode_event`.
    """
    try:
        return _decision_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise PoisonedMessage(str(error)) from error
