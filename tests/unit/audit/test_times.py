"""Times print as UTC ISO 8601 with milliseconds; options parse ISO 8601."""

from __future__ import annotations

import pytest

from services.audit import times


def test_epoch_milliseconds_print_as_utc_iso() -> None:
    assert times.iso(1_700_000_000_250) == "2023-11-14T22:13:20.250Z"


def test_iso_times_parse_back_to_epoch_milliseconds() -> None:
    assert times.parse_ms("2023-11-14T22:13:20.250Z") == 1_700_000_000_250
    assert times.parse_ms("2023-11-14T23:13:20.250+01:00") == 1_700_000_000_250
    assert times.parse_ms("2023-11-14T22:13:20.250") == 1_700_000_000_250  # naive is UTC


def test_a_malformed_time_is_refused() -> None:
    with pytest.raises(times.InvalidTime):
        times.parse_ms("yesterday")


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_a_time_whose_utc_year_is_outside_1_to_9999_is_refused(text: str) -> None:
    with pytest.raises(times.InvalidTime, match="outside the years 1 to 9999 in UTC"):
        times.parse_ms(text)


def test_every_time_parsed_prints_back_in_utc_with_four_digit_years() -> None:
    for text, shown in [("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"),
                        ("0001-01-01T00:00:00-10:00", "0001-01-01T10:00:00.000Z"),
                        ("0999-03-04T05:06:07.890+02:00", "0999-03-04T03:06:07.890Z"),
                        ("9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z")]:
        assert times.iso(times.parse_ms(text)) == shown


@pytest.mark.parametrize("at_ms", [10**17, -(10**17), 253_402_300_800_000, 2**63])
def test_a_time_no_clock_gave_prints_as_its_number(at_ms: int) -> None:
    assert times.iso(at_ms) == f"{at_ms} ms (beyond the years 1 to 9999)"
