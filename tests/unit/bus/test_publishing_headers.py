"""Message-id headers and error classification (no server)."""

from __future__ import annotations

import nats

from services.bus import transience
from services.bus.publishing import with_msg_id
from services.bus.reading import MSG_ID_HEADER


def test_with_msg_id_adds_the_id_without_touching_the_given_headers() -> None:
    given = {"Gangsched-Reason": "bad"}
    assert with_msg_id("d-1", given) == {"Gangsched-Reason": "bad", MSG_ID_HEADER: "d-1"}
    assert given == {"Gangsched-Reason": "bad"}
    assert with_msg_id("d-2", None) == {MSG_ID_HEADER: "d-2"}


def test_outages_are_transient_and_refusals_are_not() -> None:
    assert transience.is_transient(nats.errors.TimeoutError())
    assert transience.is_transient(nats.js.errors.NoStreamResponseError())
    assert transience.is_transient(nats.js.errors.ServiceUnavailableError())
    assert not transience.is_transient(nats.js.errors.BadRequestError())
    assert not transience.is_transient(ValueError("bug"))
