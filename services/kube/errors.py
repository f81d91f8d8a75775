"""The errors of the Kubernetes boundary, and the mapping from HTTP statuses to them.

Layer: kube. Pure classification; never does I/O. Callers outside `services/kube` catch these,
never kubernetes_asyncio or aiohttp types. Transient and permanent failures are different types:
only `KubeUnavailable` is worth retrying as is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from services.contracts.integers import INT64_MAX, INT64_MIN


class KubeError(Exception):
    """A request to the API server failed. `status` is the HTTP status (0: no response);
    `detail` is the server's side of the story (`HTTP 403 Forbidden: ...`), without the
    request, for messages users read."""

    def __init__(
        self, message: str, *, status: int = 0, reason: str = "", detail: str = "",
        retry_after_seconds: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.detail = detail or message
        self.retry_after_seconds = retry_after_seconds
        """Seconds the API server asked to wait before trying again (`Retry-After` of a 429
        or 5xx, or the Status's `details.retryAfterSeconds`); None when it asked nothing."""


class KubeNoCredentials(KubeError):
    """Permanent, found before any request: no configuration to reach the API server with, or
    one no retry can mend (a kubeconfig that is empty or malformed, a server that is not a
    URL, TLS material that is not PEM). The message starts `no Kubernetes credentials: ` and
    names the file, and the entry and field, at fault."""

    def __init__(self, why: str) -> None:
        super().__init__(f"no Kubernetes credentials: {why}")


class KubeConflict(KubeError):
    """409: a precondition (uid, resourceVersion) failed or the object changed meanwhile.

    Also what `pods/binding` answers for a pod already assigned to a node or being deleted.
    """


class KubeNotFound(KubeError):
    """404: the object (or its namespace, or the resource type) does not exist."""


class KubeGone(KubeError):
    """410: the resourceVersion is too old (compacted); the caller must list again."""


class KubeForbidden(KubeError):
    """401 or 403: the credentials are refused or lack the permission (RBAC)."""


class KubeInvalid(KubeError):
    """400 or 422: the API server rejected the request as invalid (a bug or a bad object)."""


class KubeUnavailable(KubeError):
    """Transient: 429, 5xx, a timeout or a broken connection. Retrying later may succeed."""


class KubeCredentialsUnavailable(KubeUnavailable):
    """Transient, and nothing was sent: the credentials of the request cannot be read now (a
    service-account token file being rotated, an exec plugin failing). `server` is the API
    server's URL without credentials; `why` is the library's error (`ConfigException('Token
    file exists but empty.')`)."""

    def __init__(self, what: str, *, server: str, why: str) -> None:
        super().__init__(f"{what}: credentials unavailable: {why}")
        self.server = server
        self.why = why


class KubeUnreachable(KubeUnavailable):
    """Transient, and no answer at all: the connection could not be made, timed out or broke.

    `server` is the API server's URL without credentials; `why` says what went wrong in plain
    words (`connection refused`, `timed out`, `TLS certificate not accepted: ...`).
    """

    def __init__(self, what: str, *, server: str, why: str) -> None:
        super().__init__(f"{what}: cannot reach the API server at {server}: {why}")
        self.server = server
        self.why = why


class KubeSilent(KubeUnreachable):
    """A stream the API server had accepted (a watch) brought nothing for its read timeout:
    the server froze, or the connection was dropped without being closed (a NAT or load
    balancer forgetting it). `why` says for how long (`nothing received for 90s`)."""


MAX_RETRY_AFTER_SECONDS = 300
"""The longest wait an answer's `Retry-After` (or `retryAfterSeconds`) is honoured for: the
API server's priority and fairness asks for 1 s; anything past minutes is a broken proxy."""
INT32_MAX = 2**31 - 1
ATOI_DIGITS_MAX = 20
"""More characters than an int64 with its sign has: out of range without being converted."""
_ATOI = re.compile(r"[+-]?[0-9]+")
"""What Go's `strconv.Atoi` takes (before its range check)."""

_BY_STATUS: Mapping[int, type[KubeError]] = {
    400: KubeInvalid,
    401: KubeForbidden,
    403: KubeForbidden,
    404: KubeNotFound,
    409: KubeConflict,
    410: KubeGone,
    422: KubeInvalid,
    429: KubeUnavailable,
}


def error_type(status: int) -> type[KubeError]:
    """The error class for an HTTP `status` that is not a success.

    Source: k8s.io/apimachinery StatusReason codes; 408, 429 and every 5xx are transient, as
    client-go's `IsRetryableError`/`IsTooManyRequests` treat them; other unknown statuses are
    the base `KubeError` (permanent).
    """
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status == 408 or status >= 500:
        return KubeUnavailable
    return KubeError


def from_status(status: int, body: Mapping[str, Any] | None, what: str, *,
                retry_after_seconds: int | None = None) -> KubeError:
    """Build the error for a failed request on `what` (e.g. `"bind default/p1"`).

    Shapes: `body` is the decoded `Status` object the API server returns with errors, if any;
    its `message` and `reason` become the error's message and `reason`; `retry_after_seconds`
    is the answer's `Retry-After` (`retry_after_seconds`), else the Status's
    `details.retryAfterSeconds` (what client-go's `SuggestsClientDelay` reads).
    """
    if retry_after_seconds is None:
        retry_after_seconds = _suggested_delay(body)
    message = str((body or {}).get("message") or "")
    reason = str((body or {}).get("reason") or "")
    detail = f"HTTP {status}" + (f" {reason}" if reason else "")
    if message:
        detail += f": {message}"
    return error_type(status)(f"{what}: {detail}", status=status, reason=reason, detail=detail,
                              retry_after_seconds=retry_after_seconds)


def retry_after_seconds(status: int, header: str | None) -> int | None:
    """The seconds a `Retry-After` header value asks a client to wait, for an answer with
    HTTP `status`; None when it asks nothing.

    Source: client-go `rest.checkWait`: only a 429 or a 5xx asks, and only with a whole
    number of seconds as `strconv.Atoi` reads one (ASCII digits with an optional sign, no
    spaces, within int64; an HTTP date asks nothing); a negative number asks for no wait.
    Waits are capped at `MAX_RETRY_AFTER_SECONDS` (client-go's are not: a server asking for
    days would stop a watcher for days).
    """
    if header is None or not (status == 429 or status >= 500) or not _ATOI.fullmatch(header):
        return None
    seconds = int(header[:ATOI_DIGITS_MAX + 1])
    if len(header) > ATOI_DIGITS_MAX or not INT64_MIN <= seconds <= INT64_MAX:
        return None  # Atoi: out of range
    return min(max(seconds, 0), MAX_RETRY_AFTER_SECONDS)


def _suggested_delay(body: Mapping[str, Any] | None) -> int | None:
    """A Status's `details.retryAfterSeconds` when a positive integer (an int32 in the API),
    capped at `MAX_RETRY_AFTER_SECONDS`, else None."""
    details = (body or {}).get("details")
    seconds = details.get("retryAfterSeconds") if isinstance(details, Mapping) else None
    if isinstance(seconds, int) and not isinstance(seconds, bool) and 0 < seconds <= INT32_MAX:
        return min(seconds, MAX_RETRY_AFTER_SECONDS)
    return None
