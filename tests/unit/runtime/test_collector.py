"""A service runs with the collector paced for a large long-lived heap (`runtime.collector`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from services.cli.main import run_service
from services.runtime import collector


@pytest.fixture
def restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_a_service_runs_with_the_service_thresholds(restored: None) -> None:
    seen: list[tuple[int, ...]] = []

    async def service() -> None:
        seen.append(gc.get_threshold())

    gc.set_threshold(700, 10, 10)
    run_service(service())
    assert seen == [collector.THRESHOLDS] == [(50_000, 20, 10)]
