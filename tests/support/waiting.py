"""Named waiting helpers: `eventually` and `consistently`, never a bare sleep-then-check."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T], *, timeout: float, interval: float = 0.5,
               what: str = "condition") -> T:
    """Call `check` until it returns without raising AssertionError and a truthy value.

    Returns the last value. Raises AssertionError naming `what` and the last failure after
    `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = check()
            if value:
                return value
            last = value
        except AssertionError as error:
            last = error
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not reached within {timeout:.0f}s; last: {last}")
        time.sleep(interval)


def consistently(check: Callable[[], object], *, duration: float, interval: float = 1.0,
                 what: str = "condition") -> None:
    """Assert that `check` holds (no AssertionError, truthy) for the whole `duration` seconds."""
    deadline = time.monotonic() + duration
    while True:
        value = check()
        assert value, f"{what} stopped holding: {value}"
        if time.monotonic() >= deadline:
            return
        time.sleep(interval)


async def eventually_async(check: Callable[[], Awaitable[T]], *, timeout: float,
                           interval: float = 0.1, what: str = "condition") -> T:
    """Async `eventually`: await `check` until it returns a truthy value without AssertionError."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = await check()
            if value:
                return value
            last = value
        except AssertionError as error:
            last = error
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not reached within {timeout:.0f}s; last: {last}")
        await asyncio.sleep(interval)
