"""Times in audit output and options: UTC ISO 8601 text and epoch milliseconds.

Layer: audit (pure). Never reads the clock.
"""

from __future__ import annotations

from datetime import UTC, datetime


class InvalidTime(ValueError):
    """A time option that is not an ISO 8601 timestamp."""


def iso(at_ms: int) -> str:
    """UTC ISO 8601 with milliseconds, e.g. `2024-05-01T12:00:00.250Z` (four-digit years, as
    `parse_ms` accepts them). Units: epoch ms. A time outside the years 1 to 9999, which no
    clock gave (a damaged log), is told as its number: `99999999999999999 ms (beyond the
    years 1 to 9999)`."""
    try:
        moment = datetime.fromtimestamp(at_ms // 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return f"{at_ms} ms (beyond the years 1 to 9999)"
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{at_ms % 1000:03d}Z"


def parse_ms(text: str) -> int:
    """Epoch milliseconds of an ISO 8601 timestamp (`2024-05-01T12:00:00Z`; naive means UTC).

    Raises:
        InvalidTime: not ISO 8601, or a time whose UTC date is outside the years 1 to 9999
            (which `iso` could not print back).
    """
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError as error:
        raise InvalidTime(f"not an ISO 8601 time: {text!r}") from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except OverflowError as error:
        raise InvalidTime(f"{text!r} is outside the years 1 to 9999 in UTC") from error
    return round(moment.timestamp() * 1000)
