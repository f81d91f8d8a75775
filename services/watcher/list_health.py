"""Why the watcher's list/watches fail, in words for its readiness: /readyz names it (`not
ready: watcher (cannot reach the API server at https://10.0.0.1:6443: connection refused)`),
as the binder's says why it cannot take its Lease.

Layer: watcher. Bookkeeping on top of `services.kube.listwatch.Health`; never does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from services.kube import errors
from services.kube.listwatch import Health
from services.kube.resources import Resource


class ReasonedHealth(Health):
    """`Health` that also keeps why each failing list/watch fails (`reasons`), by the plural
    name `Health.failing` gives."""

    def __init__(self) -> None:
        super().__init__()
        self._why: dict[str, str] = {}

    def reached(self, resource: Resource) -> None:
        """As `Health.reached`; its reason is forgotten."""
        self._why.pop(resource.plural, None)
        super().reached(resource)

    def silent(self, resource: Resource) -> None:
        """As `Health.silent`, the silence being its reason."""
        self._why[resource.plural] = (f"the watch of {resource.plural} went silent; opening "
                                      "it again")
        super().silent(resource)

    def failed(self, resource: Resource, error: errors.KubeError, delay_seconds: float) -> None:
        """As `Health.failed`, `error` in words (`problem`) being its reason."""
        self._why[resource.plural] = problem(resource, error)
        super().failed(resource, error, delay_seconds)

    def reasons(self, plurals: Iterable[str]) -> set[str]:
        """Why the list/watches of `plurals` fail (those `failing` names), each reason once."""
        return {self._why[plural] for plural in plurals if plural in self._why}


def problem(resource: Resource, error: errors.KubeError) -> str:
    """Why a list/watch of `resource` failed with `error`, in one line naming the server when
    it could not be reached (`cannot reach the API server at <url>: connection refused`, the
    same for every resource), else what the server answered."""
    if isinstance(error, errors.KubeUnreachable):
        return f"cannot reach the API server at {error.server}: {error.why}"
    if isinstance(error, errors.KubeCredentialsUnavailable):
        return f"no credentials for the API server at {error.server} now: {error.why}"
    return f"list/watch of {resource.plural} failing: {error.detail}"
