"""Decision ids, `<plan_seq>-<index>`, read back in the order the planner made them."""

from __future__ import annotations

import pytest

from services.contracts import ids


def test_a_decision_id_gives_its_plan_point_and_index() -> None:
    assert ids.decision_order(ids.decision_id(12, 3)) == (12, 3)


@pytest.mark.parametrize("text", ["bogus", "12-", "-3", "12-3-4", "12-\u00b2", "\u00b9-0", "12-+3"])
def test_a_string_that_is_no_decision_id_orders_first_and_never_raises(text: str) -> None:
    """`"\u00b2".isdigit()` holds, yet `int("\u00b2")` raises: such an id from a message used to
    be a ValueError."""
    assert ids.decision_order(text) == (-1, -1)
