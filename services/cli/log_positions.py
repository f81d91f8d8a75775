"""Options naming a point of the log: an EVENTS sequence number or a UTC time.

Layer: cli. Click types of `gangsched replay --from-seq`, `--since` and `--until`, checked when
the options are parsed, so a value that names no point of the log (a negative or zero
sequence, a time that is not ISO 8601) is click's one-line usage error, exit status 2.
"""

from __future__ import annotations

import re
from typing import Any

import click

from services.audit import times
from services.audit.until import Until

MAX_SEQUENCE = 2**63 - 1
"""The largest sequence the audit tables hold (a signed 64-bit integer column)."""
SEQUENCE = click.IntRange(min=1, max=MAX_SEQUENCE)
"""An EVENTS stream sequence: they start at 1."""
_INTEGER = re.compile(r"[+-]?[0-9]+")


class UtcTime(click.ParamType):  # type: ignore[type-arg]
    """An ISO 8601 time (`2024-05-01T12:00:00Z`; naive means UTC), converted to epoch ms."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        """Epoch milliseconds; `self.fail` (exit 2) for text that is not ISO 8601."""
        if isinstance(value, int):
            return value
        try:
            return times.parse_ms(str(value))
        except times.InvalidTime as error:
            self.fail(str(error), param, ctx)


class SeqOrTime(click.ParamType):  # type: ignore[type-arg]
    """`--until`: an integer is a sequence (in `SEQUENCE`'s range), anything else an ISO 8601
    time; converted to the `Until` it means."""

    name = "seq|time"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Until:
        """The `Until` of `value`; `self.fail` (exit 2) for a sequence below 1 or text that is
        neither a sequence nor a time."""
        if isinstance(value, Until):
            return value
        text = str(value).strip()
        if _INTEGER.fullmatch(text):
            return Until(seq=SEQUENCE.convert(int(text), param, ctx))
        try:
            return Until(at_ms=times.parse_ms(text))
        except times.InvalidTime as error:
            self.fail(f"{error} (give a sequence number or an ISO 8601 time)", param, ctx)


def shown(until: Until) -> str:
    """`--until` as a person gave it: the sequence, or the time in UTC ISO 8601."""
    return str(until.seq) if until.seq is not None else times.iso(until.at_ms or 0)
