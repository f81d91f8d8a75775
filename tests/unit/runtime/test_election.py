"""The planner's leader lease: timing arithmetic and one renewal, against an in-memory lease."""

from __future__ import annotations

import asyncio

import pytest

from services.runtime import election
from services.runtime.election import Term, Timing

TIMING = Timing(lease_seconds=9.0, retry_seconds=1.0)


class FakeLease:
    """An in-memory `LeaseStore`: `renew` answers from a script, or raises from it."""

    def __init__(self, *answers: int | Exception | None) -> None:
        self.answers = list(answers)
        self.renewed: list[int] = []

    async def acquire(self) -> int | None:
        return None

    async def renew(self, revision: int) -> int | None:
        self.renewed.append(revision)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def release(self, revision: int) -> None:
        return None


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_leader_must_stop_two_thirds_into_the_lease() -> None:
    assert TIMING.renew_deadline_seconds == pytest.approx(6.0)
    assert election.deadline(Term(revision=4, renewed_at=100.0), TIMING) == pytest.approx(106.0)


def test_a_retry_interval_as_long_as_the_renew_deadline_is_refused() -> None:
    with pytest.raises(ValueError, match="shorter than two thirds"):
        Timing(lease_seconds=3.0, retry_seconds=2.0)
    with pytest.raises(ValueError):
        Timing(lease_seconds=3.0, retry_seconds=0.0)


def test_renewals_come_every_retry_interval_until_the_deadline_cuts_them_short() -> None:
    term = Term(revision=1, renewed_at=100.0)
    assert election.wait_before_renewal(term, 100.0, TIMING) == pytest.approx(1.0)
    assert election.wait_before_renewal(term, 105.5, TIMING) == pytest.approx(0.5)
    assert election.wait_before_renewal(term, 106.0, TIMING) is None


async def test_a_successful_renewal_starts_the_term_when_the_request_was_sent() -> None:
    lease, clock = FakeLease(8), Clock(103.0)
    renewed = await election.renew(lease, Term(revision=7, renewed_at=100.0), TIMING, clock)
    assert renewed == Term(revision=8, renewed_at=103.0)
    assert lease.renewed == [7]


async def test_a_lease_someone_else_wrote_is_lost_at_once() -> None:
    lease = FakeLease(None)
    assert await election.renew(lease, Term(7, 100.0), TIMING, Clock(101.0)) is None


async def test_a_transient_failure_keeps_the_term_until_its_deadline() -> None:
    term = Term(7, 100.0)
    kept = await election.renew(FakeLease(TimeoutError()), term, TIMING, Clock(104.0))
    assert kept == term
    lost = await election.renew(FakeLease(TimeoutError()), term, TIMING, Clock(106.5))
    assert lost is None


class AnsweringAsCancelled(FakeLease):
    """A lease whose answer comes in the same instant as a cancellation of `victim`; `acquire`
    waits for it with `wait_for`, as nats-py's requests do."""

    victim: asyncio.Task[object]

    async def acquire(self) -> int | None:
        return await asyncio.wait_for(self._not_ours(), timeout=5)

    async def _not_ours(self) -> None:
        self.victim.cancel()

    async def renew(self, revision: int) -> int | None:
        self.victim.cancel()
        return await super().renew(revision)


async def test_a_cancel_arriving_with_the_renewal_answer_stops_the_renewal() -> None:
    # Python 3.11's wait_for returned the answer and dropped the cancel (CPython gh-86296)
    lease = AnsweringAsCancelled(8)
    lease.victim = asyncio.create_task(election.renew(lease, Term(7, 100.0), TIMING, Clock(101.0)))
    with pytest.raises(asyncio.CancelledError):
        await lease.victim
    assert lease.renewed == [7]


async def test_a_cancel_arriving_with_the_acquire_answer_stops_the_campaign() -> None:
    lease = AnsweringAsCancelled()
    lease.victim = asyncio.create_task(election.campaign(lease, TIMING, Clock(101.0)))
    with pytest.raises(asyncio.CancelledError):
        await lease.victim


def test_each_candidate_has_its_own_identity() -> None:
    assert election.identity() != election.identity()


class RefusingLease(FakeLease):
    """Refuses `acquire` with each message of `refusals` in turn, then grants revision 1."""

    def __init__(self, *refusals: str) -> None:
        super().__init__()
        self.refusals = list(refusals)

    async def acquire(self) -> int | None:
        if self.refusals:
            raise election.LeaseRefused(self.refusals.pop(0))
        return 1


async def test_a_campaign_warns_once_per_new_refusal_not_at_every_attempt(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="services.runtime.election")
    lease = RefusingLease("forbidden", "forbidden", "forbidden", "no such namespace",
                          "forbidden")
    term = await election.campaign(lease, Timing(lease_seconds=0.09, retry_seconds=0.001))
    assert term.revision == 1
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == [
        "leader lease refused (will retry every 0.001s): forbidden",
        "leader lease refused (will retry every 0.001s): no such namespace",
        "leader lease refused (will retry every 0.001s): forbidden"]
    assert sum(r.levelname == "DEBUG" and "refused" in r.getMessage()
               for r in caplog.records) == 2


class Flag:
    """A readiness flag recording every value it is set to, and every hold and release."""

    def __init__(self) -> None:
        self.values: list[bool] = []
        self.holds: list[str] = []

    def set(self, is_ready: bool = True) -> None:
        self.values.append(is_ready)

    def hold(self, reason: str) -> None:
        self.holds.append(f"hold {reason}")

    def release(self, reason: str) -> None:
        self.holds.append(f"release {reason}")


async def test_a_refused_candidate_is_not_ready_until_an_attempt_is_answered() -> None:
    class Lease(RefusingLease):
        async def acquire(self) -> int | None:
            if self.refusals:
                raise election.LeaseRefused(self.refusals.pop(0))
            self.free = getattr(self, "free", 0) + 1
            return 1 if self.free > 1 else None  # held by another once, then ours

    flag = Flag()
    await election.campaign(Lease("forbidden", "forbidden"),
                            Timing(lease_seconds=0.09, retry_seconds=0.001), ready=flag)
    assert flag.values == [False, False, True, True]  # refused twice, answered twice
    # the refusal said on /readyz until the next answer (the same one again keeps it)
    assert flag.holds == ["hold forbidden", "release forbidden"]


async def test_a_renewal_the_store_refuses_steps_down_in_one_line(
        caplog: pytest.LogCaptureFixture) -> None:
    term = Term(revision=4, renewed_at=100.0)
    lost = await election.renew(FakeLease(election.LeaseRefused("namespace gone")), term,
                                TIMING, Clock(101.0))
    assert lost is None
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("ERROR", "leader lease renewal refused: namespace gone; stepping down")]


async def test_a_candidate_stopped_while_standing_by_after_a_term_releases_what_may_name_it(
) -> None:
    class Lease(FakeLease):
        def __init__(self) -> None:
            super().__init__(None)  # the one renewal: lost
            self.taken = 0
            self.released: list[int] = []

        async def acquire(self) -> int | None:
            self.taken += 1
            return 7 if self.taken == 1 else None

        async def release(self, revision: int) -> None:
            self.released.append(revision)

    lease = Lease()
    never = asyncio.Event()

    async def work() -> None:
        await never.wait()

    task = asyncio.create_task(election.lead(
        lease, Timing(lease_seconds=0.09, retry_seconds=0.01), work, service="binder"))
    while lease.taken < 3:  # lost its term, standing by
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert lease.released == [7]


class UnreachableLease(FakeLease):
    """`acquire` fails with each of `failures` in turn, then is answered: held by another
    installation once, then granted."""

    def __init__(self, *failures: BaseException) -> None:
        super().__init__()
        self.failures = list(failures)
        self.answers_given = 0

    async def acquire(self) -> int | None:
        if self.failures:
            raise self.failures.pop(0)
        self.answers_given += 1
        return 1 if self.answers_given > 1 else None


def api_server_down(why: str = "connection refused") -> election.LeaseUnavailable:
    return election.LeaseUnavailable(
        f"taking Lease kube-system/gangsched: GET ...: cannot reach the API server at "
        f"https://127.0.0.1:1: {why}", server="the API server at https://127.0.0.1:1", why=why)


async def test_a_standby_that_cannot_reach_the_server_warns_at_once_and_every_tenth_time(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="services.runtime.election")
    lease = UnreachableLease(*[api_server_down()] * 11, api_server_down("timed out"),
                             *[api_server_down()] * 10)
    flag = Flag()
    await election.campaign(lease, Timing(lease_seconds=0.09, retry_seconds=0.001), ready=flag)
    said = [(r.levelname, r.getMessage()) for r in caplog.records
            if r.levelname in ("WARNING", "INFO") and "standing by" not in r.getMessage()]
    assert said == [
        ("WARNING", "cannot reach the API server at https://127.0.0.1:1: connection refused; "
                    "retrying every 0.001s"),
        ("WARNING", "cannot reach the API server at https://127.0.0.1:1: connection refused; "
                    "retrying every 0.001s (11 such failures)"),
        ("WARNING", "cannot reach the API server at https://127.0.0.1:1: timed out; "
                    "retrying every 0.001s"),
        ("WARNING", "cannot reach the API server at https://127.0.0.1:1: connection refused; "
                    "retrying every 0.001s (21 such failures)"),
        ("INFO", "the API server at https://127.0.0.1:1 answers again")]
    assert flag.values == [True, True]  # ready once answered
    refused = "cannot reach the API server at https://127.0.0.1:1: connection refused"
    timed_out = "cannot reach the API server at https://127.0.0.1:1: timed out"
    assert flag.holds == [  # not ready while unreachable, /readyz saying why
        f"hold {refused}", f"release {refused}", f"hold {timed_out}", f"release {timed_out}",
        f"hold {refused}", f"release {refused}"]


async def test_a_store_that_reports_its_own_outages_leaves_the_campaign_quiet(
        caplog: pytest.LogCaptureFixture) -> None:
    lease = UnreachableLease(election.LeaseUnavailable("NATS is down"), TimeoutError(),
                             ConnectionRefusedError())
    await election.campaign(lease, Timing(lease_seconds=0.09, retry_seconds=0.001))
    assert [r.getMessage() for r in caplog.records if r.levelname != "INFO"] == []
    assert not any("answers again" in r.getMessage() for r in caplog.records)
