"""Ordering observations by resourceVersion (services/contracts/versions.py): numbers of any
length compared as numbers, anything that is not ASCII digits never older."""

from __future__ import annotations

import pytest

from services.contracts import versions


@pytest.mark.parametrize(("seen", "held", "older"), [
    ("9", "10", True), ("10", "9", False), ("10", "10", False), ("010", "9", False),
    ("007", "8", True), ("0", "00", False),
    ("9" * 5000, "1" + "0" * 5000, True),  # `int` refuses these: ValueError in the planner
    ("1" + "0" * 5000, "9" * 5000, False),
    ("abc", "10", False), ("9", "", False), ("", "9", False),
    ("\u0661", "2", False),  # ARABIC-INDIC DIGIT ONE: decimal to Python, not a resourceVersion
])
def test_resource_versions_compare_as_numbers(seen: str, held: str, older: bool) -> None:
    assert versions.is_older(seen, held) is older
