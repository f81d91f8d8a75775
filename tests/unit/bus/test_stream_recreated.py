"""The line of `StreamRecreated` for each thing a stream can hold at the position checked."""

from __future__ import annotations

import pytest

from services.bus.errors import StreamRecreated

WAS, NOW = "2026-12-06T00:00:01.000001Z", "2026-12-06T00:00:02.000002Z"


@pytest.mark.parametrize(("found", "first_seq", "there"), [
    ("other", 1, "holds another message at seq 5"),
    ("ends_before", 1, "ends at seq 4, before seq 5"),
    ("removed", 7, "no longer holds seq 5 (retention removed it: it starts at seq 7)"),
    # retention removed it between the stream info (first seq 3) and the lookup
    ("removed", 3, "no longer holds seq 5 (retention removed it)"),
    ("unrecorded", 1, "holds seq 5, with nothing recorded to compare"),
])
def test_the_line_names_what_the_stream_holds_at_the_position(
        found: str, first_seq: int, there: str) -> None:
    error = StreamRecreated("EVENTS", WAS, NOW, seq=5, found=found, first_seq=first_seq,
                            last_seq=4)
    assert str(error) == (f"stream EVENTS was created anew at {NOW} and {there}, the position "
                          f"read up to in the one created at {WAS}")
