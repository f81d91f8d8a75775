"""Times print as UTC ISO 8601 with milliseconds; options parse ISO 8601."""

from __future__ import annotations

import pytest

from services.audit import times


def test_epoch_milliseconds_print_as_utc_iso():
    assert times.iso(1_700_000_000_250) == "2023-11-14T22:13:20.250Z"


def test_iso_times_parse_back_to_epoch_milliseconds():
    assert times.parse_ms("2023-11-14T22:13:20.250Z") == 1_700_000_000_250
    assert times.parse_ms("2023-11-14T23:13:20.250+01:00") == 1_700_000_000_250
    assert times.parse_ms("2023-11-14T22:13:20.250") == 1_700_000_000_250  # naive is UTC


def test_a_malformed_time_is_refused():
    with pytest.raises(times.InvalidTime):
        times.parse_ms("yesterday")
