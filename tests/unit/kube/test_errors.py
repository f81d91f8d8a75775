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
