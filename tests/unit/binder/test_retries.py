"""`retries.Retry` retries as a tenacity policy built per call did: the same attempts, waits,
hook calls and final outcome, with the first attempt run outside tenacity."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
import tenacity

from services.binder import retries
from services.kube import errors

FIRST_WAIT = 0.001
MAX_WAIT = 0.004

Seen = list[tuple[int, float | None, BaseException | None]]
"""Per `before_sleep` call: attempt number, the wait to come, the error of that attempt."""


class Script:
    """A call failing with the scripted errors in turn, then returning "done"."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        await asyncio.sleep(0)
        if self.failures:
            raise self.failures.pop(0)
        return "done"


def recording(seen: Seen) -> retries.BeforeSleep:
    def before_sleep(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        seen.append((state.attempt_number, state.upcoming_sleep, error))
    return before_sleep


async def outcome(run: Callable[[], Awaitable[str]]) -> str | BaseException:
    try:
        return await run()
    except Exception as error:
        return error


async def per_call_tenacity(script: Script, seen: Seen, attempts: int | None) -> str:
    """How the binder retried before: a tenacity policy built for each call."""
    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception_type(errors.KubeUnavailable),
        wait=tenacity.wait_exponential(multiplier=FIRST_WAIT, max=MAX_WAIT),
        stop=tenacity.stop_never if attempts is None else tenacity.stop_after_attempt(attempts),
        before_sleep=recording(seen), reraise=True)
    result: str = await retrying(script)
    return result


def unavailable(number: int) -> errors.KubeUnavailable:
    return errors.KubeUnavailable(f"timeout {number}")


CASES = {
    "at once": ((), None),
    "after transient errors": ((unavailable(1), unavailable(2), unavailable(3),
                                unavailable(4)), None),
    "attempts used up": ((unavailable(1), unavailable(2), unavailable(3)), 3),
    "a permanent error first": ((errors.KubeConflict("taken"),), None),
    "a permanent error later": ((unavailable(1), errors.KubeNotFound("gone")), 3),
}


@pytest.mark.parametrize("case", CASES)
async def test_a_shared_policy_retries_as_a_policy_built_per_call(case: str) -> None:
    failures, attempts = CASES[case]
    policy = retries.Retry(first_wait_seconds=FIRST_WAIT, max_wait_seconds=MAX_WAIT,
                           attempts=attempts)
    before, now = Script(*failures), Script(*failures)
    seen_before: Seen = []
    seen_now: Seen = []
    expected = await outcome(lambda: per_call_tenacity(before, seen_before, attempts))
    got = await outcome(lambda: policy.call(now, before_sleep=recording(seen_now)))
    assert got is expected  # the same result, or the very same error object
    assert seen_now == seen_before
    assert now.calls == before.calls


async def test_the_waits_double_up_to_the_cap_and_the_hook_sees_each_failed_attempt() -> None:
    policy = retries.Retry(first_wait_seconds=FIRST_WAIT, max_wait_seconds=MAX_WAIT)
    first, second, third, fourth = (unavailable(n) for n in range(1, 5))
    seen: Seen = []
    assert await policy.call(Script(first, second, third, fourth),
                             before_sleep=recording(seen)) == "done"
    assert seen == [(1, 0.001, first), (2, 0.002, second), (3, 0.004, third),
                    (4, 0.004, fourth)]


async def test_concurrent_calls_of_one_policy_count_their_own_attempts() -> None:
    policy = retries.Retry(first_wait_seconds=FIRST_WAIT, max_wait_seconds=MAX_WAIT,
                           attempts=3)
    seen_a: Seen = []
    seen_b: Seen = []
    a = Script(unavailable(1), unavailable(2))
    b = Script(unavailable(1), unavailable(2), unavailable(3))
    done, refused = await asyncio.gather(
        outcome(lambda: policy.call(a, before_sleep=recording(seen_a))),
        outcome(lambda: policy.call(b, before_sleep=recording(seen_b))))
    assert done == "done"
    assert isinstance(refused, errors.KubeUnavailable)
    assert str(refused) == "timeout 3"
    assert [attempt for attempt, _, _ in seen_a] == [1, 2]
    assert [attempt for attempt, _, _ in seen_b] == [1, 2]
    assert (a.calls, b.calls) == (3, 3)


async def test_a_retry_waits_as_long_as_the_api_server_asked() -> None:
    """A 429 whose Retry-After asks for 2 s: the next attempt comes after 2 s, not after the
    backoff's 1 ms (client-go waits for it; retrying sooner adds to the overload the server
    sheds); an answer that asked nothing keeps the backoff."""
    seen: Seen = []
    throttled = errors.from_status(429, {"message": "too many"}, "bind", retry_after_seconds=2)
    policy = retries.Retry(first_wait_seconds=FIRST_WAIT, max_wait_seconds=MAX_WAIT)
    sleeps: list[float] = []

    async def no_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    policy._policy.sleep = no_sleep  # type: ignore[assignment]
    result = await policy.call(Script(throttled, unavailable(2)), before_sleep=recording(seen))
    assert result == "done"
    assert [wait for _, wait, _ in seen] == [2.0, FIRST_WAIT * 2]
    assert sleeps == [2.0, FIRST_WAIT * 2]
