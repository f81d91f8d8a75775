"""FailedScheduling reports: at most one per interval per key, unless the message changes."""

from __future__ import annotations

from services.binder.ratelimit import ReportLimiter


def test_a_repeated_message_is_allowed_again_only_after_the_interval() -> None:
    limiter = ReportLimiter(30.0)
    assert limiter.is_allowed("p1", "no fit", 0.0)
    limiter.record("p1", "no fit", 0.0)
    assert not limiter.is_allowed("p1", "no fit", 29.9)
    assert limiter.is_allowed("p1", "no fit", 30.0)


def test_a_changed_message_is_allowed_at_once() -> None:
    limiter = ReportLimiter(30.0)
    limiter.record("p1", "no fit", 0.0)
    assert limiter.is_allowed("p1", "PodGroup default/g not found", 1.0)


def test_keys_are_independent_and_forget_clears_one() -> None:
    limiter = ReportLimiter(30.0)
    limiter.record("p1", "m", 0.0)
    assert limiter.is_allowed("p2", "m", 1.0)
    limiter.forget("p1")
    assert limiter.is_allowed("p1", "m", 1.0)


def test_prune_drops_only_expired_records() -> None:
    limiter = ReportLimiter(10.0)
    limiter.record("old", "m", 0.0)
    limiter.record("new", "m", 15.0)
    limiter.prune(20.0)
    assert len(limiter) == 1
    assert not limiter.is_allowed("new", "m", 20.0)
