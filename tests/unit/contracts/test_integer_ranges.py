"""Integers beyond what the stores and NumPy hold are poisoned messages, not crashes."""

from __future__ import annotations

import pytest

from services.contracts import codec
from services.contracts.events import ClockTicked, GroupBound
from services.contracts.integers import INT64_MAX, MAX_EPOCH_MS

BEYOND = [
    b'{"type":"GroupBound","at_ms":9223372036854775808,"decision_id":"6-0","group":"default/g"}',
    b'{"type":"ClockTicked","at_ms":-9223372036854775809}',
    b'{"type":"ClockTicked","at_ms":-1}',
    b'{"type":"ClockTicked","at_ms":253402300800000}',
    b'{"type":"PodGroupObserved","at_ms":1,"uid":"u","namespace":"d","name":"g",'
    b'"resource_version":"1","created_at_ms":1,"min_member":9223372036854775808}',
]


@pytest.mark.parametrize("data", BEYOND)
def test_an_integer_out_of_range_is_a_poisoned_message(data: bytes) -> None:
    with pytest.raises(codec.PoisonedMessage, match=r"Expected `int` (>=|<=)"):
        codec.decode_event(data)


def test_the_ends_of_the_ranges_decode() -> None:
    assert codec.decode_event(codec.encode(ClockTicked(at_ms=MAX_EPOCH_MS))) == ClockTicked(
        at_ms=MAX_EPOCH_MS)
    assert codec.decode_event(codec.encode(ClockTicked(at_ms=0))) == ClockTicked(at_ms=0)
    bound = GroupBound(at_ms=1, decision_id="6-0", group="default/g")
    assert codec.decode_event(codec.encode(bound)) == bound
    assert INT64_MAX == 2**63 - 1
