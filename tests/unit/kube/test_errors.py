"""HTTP statuses map onto our error tree; transient and permanent are different types."""

from __future__ import annotations

import pytest

from services.kube import errors


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, errors.KubeInvalid),
        (401, errors.KubeForbidden),
        (403, errors.KubeForbidden),
        (404, errors.KubeNotFound),
        (408, errors.KubeUnavailable),
        (409, errors.KubeConflict),
        (410, errors.KubeGone),
        (422, errors.KubeInvalid),
        (429, errors.KubeUnavailable),
        (500, errors.KubeUnavailable),
        (503, errors.KubeUnavailable),
        (504, errors.KubeUnavailable),
    ],
)
def test_each_status_maps_to_its_error_type(status: int, expected: type[errors.KubeError]) -> None:
    assert errors.error_type(status) is expected


def test_an_unknown_client_error_is_the_permanent_base_type() -> None:
    error = errors.from_status(418, None, "GET /x")
    assert type(error) is errors.KubeError
    assert not isinstance(error, errors.KubeUnavailable)


def test_the_message_names_the_request_status_reason_and_server_message() -> None:
    body = {"kind": "Status", "reason": "Conflict",
            "message": 'pod p1 is already assigned to node "n1"'}
    error = errors.from_status(409, body, "POST /api/v1/namespaces/default/pods/p1/binding")
    assert isinstance(error, errors.KubeConflict)
    assert error.status == 409
    assert error.reason == "Conflict"
    assert str(error) == (
        "POST /api/v1/namespaces/default/pods/p1/binding: HTTP 409 Conflict: "
        'pod p1 is already assigned to node "n1"'
    )


def test_every_error_is_a_kube_error() -> None:
    for status in (400, 403, 404, 409, 410, 429, 500):
        assert isinstance(errors.from_status(status, {}, "x"), errors.KubeError)


def test_the_detail_leaves_out_the_request_for_user_facing_messages() -> None:
    error = errors.from_status(403, {"reason": "Forbidden", "message": "no"}, "POST /x")
    assert error.detail == "HTTP 403 Forbidden: no"
    assert errors.KubeUnavailable("GET /x: TimeoutError()").detail == "GET /x: TimeoutError()"


@pytest.mark.parametrize(("status", "header", "expected"), [
    (429, "3", 3), (503, "10", 10), (500, "-1", 0), (429, "+7", 7),
    (429, "Fri, 31 Dec 1999 23:59:59 GMT", None), (429, " 10 ", None), (429, "1_0", None),
    (429, "\u0661", None), (429, "9" * 18, 300), (429, "9" * 19, None), (429, "9" * 400, None),
    (429, "9" * 5000, None), (429, "86400", 300),
    (429, None, None), (404, "3", None), (409, "5", None)])
def test_retry_after_is_read_as_client_go_reads_it(status: int, header: str | None,
                                                   expected: int | None) -> None:
    """Whole seconds of a 429's or 5xx's Retry-After only, as `strconv.Atoi` reads them
    (client-go `checkWait`: no spaces, underscores or non-ASCII digits; beyond int64 asks
    nothing), capped at five minutes (a huge one crashed the watcher's list and watch)."""
    assert errors.retry_after_seconds(status, header) == expected


def test_a_status_suggesting_a_delay_asks_for_it_when_no_header_did() -> None:
    """The Status's `details.retryAfterSeconds` (client-go `SuggestsClientDelay`), unless a
    Retry-After header asked for a wait of its own."""
    body = {"message": "slow down", "details": {"retryAfterSeconds": 4}}
    assert errors.from_status(429, body, "list pods").retry_after_seconds == 4
    assert errors.from_status(429, body, "list pods",
                              retry_after_seconds=1).retry_after_seconds == 1
    assert errors.from_status(429, {"message": "x"}, "list pods").retry_after_seconds is None
    assert errors.from_status(
        500, {"details": {"retryAfterSeconds": "4"}}, "x").retry_after_seconds is None
    assert errors.from_status(
        500, {"details": {"retryAfterSeconds": 10**30}}, "x").retry_after_seconds is None
    assert errors.from_status(
        500, {"details": {"retryAfterSeconds": 3600}}, "x").retry_after_seconds == 300
