"""Retrying transient API errors (KubeUnavailable) with tenacity, free for a first success.

Layer: binder shell. A tenacity loop costs ~40 µs of CPU per call even when its first attempt
succeeds (its retry state, statistics and per-step coroutines), and building the policy per
call ~5 µs more: for every API request of the binder. `Retry` builds the policy once and runs
the first attempt outside tenacity; only a transient failure enters tenacity's loop, as that
loop's own first attempt, so the waits, the stop and the hooks see what they would have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import tenacity

from services.kube import errors

T = TypeVar("T")

BeforeSleep = Callable[[tenacity.RetryCallState], None]
"""A tenacity `before_sleep` hook: called after each failed attempt that will be retried."""


class Retry:
    """Retry `KubeUnavailable` with capped exponential backoff; re-raise any other error, and
    the last transient one when `attempts` are used up.

    Units: waits in seconds, the n-th wait `first_wait_seconds * 2**(n-1)` capped at
    `max_wait_seconds` (tenacity's `wait_exponential`), or longer when the API server asked
    for longer (`KubeError.retry_after_seconds`: a 429's or 5xx's `Retry-After`, which
    client-go waits for; retrying sooner adds to the overload the server is shedding);
    `attempts` None retries without limit (the caller bounds the time). Safe to share between
    concurrent calls: each retrying call runs its own copy of the policy.
    """

    def __init__(self, *, first_wait_seconds: float, max_wait_seconds: float,
                 attempts: int | None = None) -> None:
        self._policy = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(errors.KubeUnavailable),
            wait=_AsTheServerAsks(tenacity.wait_exponential(multiplier=first_wait_seconds,
                                                            max=max_wait_seconds)),
            stop=tenacity.stop_never if attempts is None else tenacity.stop_after_attempt(attempts),
            reraise=True,
        )

    async def call(self, call: Callable[[], Awaitable[T]], *,
                   before_sleep: BeforeSleep | None = None) -> T:
        """`await call()`, retried while it raises KubeUnavailable (`before_sleep` before each
        wait), as `tenacity.AsyncRetrying(...)(call)` would.

        Raises:
            whatever `call` raised last that is not retried (`reraise=True`).
        """
        try:
            return await call()
        except errors.KubeUnavailable as error:
            first: errors.KubeUnavailable | None = error

        async def attempt() -> T:
            nonlocal first
            if first is not None:
                failed, first = first, None
                raise failed  # tenacity's first attempt: the one already made
            return await call()

        result: T = await self._policy.copy(before_sleep=before_sleep)(attempt)
        return result


class _AsTheServerAsks(tenacity.wait.wait_base):
    """A tenacity wait: `base`'s, or the wait the failed attempt's answer asked for
    (`KubeError.retry_after_seconds`) when longer."""

    def __init__(self, base: tenacity.wait.wait_base) -> None:
        self._base = base

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        wait = self._base(retry_state)
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None and outcome.failed else None
        asked = error.retry_after_seconds if isinstance(error, errors.KubeError) else None
        return wait if asked is None else max(wait, float(asked))
