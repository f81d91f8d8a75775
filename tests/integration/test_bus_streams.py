"""Stream set-up on a real nats-server: idempotent, config-checked."""

from __future__ import annotations

import dataclasses

import pytest
from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType

from services.bus import streams
from services.config.settings import BusSettings
from services.contracts import subjects

pytestmark = pytest.mark.integration


async def test_ensure_streams_creates_events_decisions_and_deadletter(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    prefix = bus_settings.prefix
    for suffix, subject in (
        ("EVENTS", subjects.events_wildcard(prefix)),
        ("DECISIONS", subjects.decisions_wildcard(prefix)),
        ("DEADLETTER", subjects.dead_letter_subject(prefix)),
    ):
        info = await js.stream_info(subjects.stream_name(prefix, suffix))
        assert info.config.subjects == [subject]
        assert info.config.storage == StorageType.FILE
        assert info.config.retention == RetentionPolicy.LIMITS
        assert info.config.duplicate_window >= 120
        assert info.config.max_age == pytest.approx(bus_settings.max_age_seconds)


async def test_ensure_streams_twice_changes_nothing(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    name = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await js.publish(subjects.events_subject(bus_settings.prefix, "node", "", "n1"), b"{}")
    before = await js.stream_info(name)
    await streams.ensure_streams(js, bus_settings)
    after = await js.stream_info(name)
    assert after.created == before.created
    assert after.config == before.config
    assert after.state.messages == 1


async def test_ensure_streams_updates_a_stream_whose_config_differs(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    changed = dataclasses.replace(bus_settings, max_age_seconds=3600.0)
    await streams.ensure_streams(js, changed)
    info = await js.stream_info(subjects.stream_name(bus_settings.prefix, "DECISIONS"))
    assert info.config.max_age == pytest.approx(3600.0)


async def test_duplicate_window_is_at_least_two_minutes(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    short = dataclasses.replace(bus_settings, duplicate_window_seconds=5.0)
    await streams.ensure_streams(js, short)
    info = await js.stream_info(subjects.stream_name(bus_settings.prefix, "EVENTS"))
    assert info.config.duplicate_window == pytest.approx(120.0)
