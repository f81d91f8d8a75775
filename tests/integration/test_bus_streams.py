"""Stream set-up on a real nats-server: idempotent, config-checked, repaired or refused."""

from __future__ import annotations

import dataclasses

import nats
import pytest
from nats.js import JetStreamContext
from nats.js.api import RePublish, RetentionPolicy, StorageType

from services.bus import streams
from services.bus.errors import BusMisconfigured
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


async def test_a_stream_limited_to_one_message_by_an_intruder_is_repaired_at_the_next_start(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    name = subjects.stream_name(bus_settings.prefix, "DECISIONS")
    damaged = (await js.stream_info(name)).config
    damaged.max_msgs = 1
    damaged.republish = RePublish(src=">", dest="elsewhere.>")
    await js.update_stream(config=damaged)
    await streams.ensure_streams(js, bus_settings)
    repaired = (await js.stream_info(name)).config
    assert repaired.max_msgs == -1 and repaired.republish is None
    assert streams.differences(repaired, streams.stream_specs(bus_settings)[1]) == []


async def test_a_sealed_stream_is_refused_loudly_naming_the_stream_and_the_field(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    name = subjects.stream_name(bus_settings.prefix, "EVENTS")
    sealed = (await js.stream_info(name)).config
    sealed.sealed = True
    await js.update_stream(config=sealed)
    with pytest.raises(BusMisconfigured) as refused:
        await streams.ensure_streams(js, bus_settings)
    message = str(refused.value)
    # sealing also clears the age limit and discards new messages: all three are named
    assert message.startswith(f"stream {name} differs (") and "\n" not in message
    assert "sealed True -> False" in message and "and cannot update" in message


async def test_the_streams_refuse_to_delete_or_purge_messages(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    name = subjects.stream_name(bus_settings.prefix, "EVENTS")
    ack = await js.publish(subjects.events_subject(bus_settings.prefix, "node", "", "n1"), b"{}")
    with pytest.raises(nats.js.errors.APIError):
        await js.purge_stream(name)
    with pytest.raises(nats.js.errors.APIError):
        await js.delete_msg(name, ack.seq)
    assert (await js.stream_info(name)).state.messages == 1


async def test_a_stream_made_before_deletes_were_denied_is_hardened(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    older = dataclasses.replace(bus_settings, prefix=f"{bus_settings.prefix}old")
    spec = streams.stream_specs(older)[0]
    await js.add_stream(config=dataclasses.replace(spec.config(), deny_delete=False,
                                                   deny_purge=False))
    await streams.ensure_streams(js, older)
    hardened = (await js.stream_info(spec.name)).config
    assert hardened.deny_delete and hardened.deny_purge


async def test_a_prefix_whose_stream_names_are_another_prefixs_takes_nothing_over(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    first = dataclasses.replace(bus_settings, prefix="team.a")
    second = dataclasses.replace(bus_settings, prefix="team_A")  # both map to TEAM_A_*
    await streams.ensure_streams(js, first)
    await js.publish(subjects.events_subject("team.a", "node", "", "n1"), b"{}")
    with pytest.raises(BusMisconfigured) as refused:
        await streams.ensure_streams(js, second)
    assert str(refused.value) == (
        "stream TEAM_A_EVENTS holds the subjects of another prefix (team.a.events.>), not "
        "prefix team_A's: stream names keep only letters, digits, _ and - of a prefix, in "
        "capitals, so both prefixes map to this one; choose a prefix that differs in those "
        "(nothing was changed)")
    info = await js.stream_info("TEAM_A_EVENTS")
    assert info.config.subjects == ["team.a.events.>"]
    assert info.state.messages == 1
    await js.publish(subjects.events_subject("team.a", "node", "", "n2"), b"{}")  # still stored


async def test_a_shorter_retention_is_refused_while_a_stream_holds_messages_and_nothing_changes(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    name = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await js.publish(subjects.events_subject(bus_settings.prefix, "node", "", "n1"), b"{}")
    shorter = dataclasses.replace(bus_settings, max_age_seconds=3600.0)
    with pytest.raises(BusMisconfigured) as refused:
        await streams.ensure_streams(js, shorter)
    assert str(refused.value) == (
        f"stream {name} holds 1 message(s) and --stream-max-age-seconds 3600 is shorter than "
        f"its retention (604800 s): NATS would delete those older than that. To keep them, "
        f"start with --stream-max-age-seconds 604800; to delete them, start once with "
        f"--stream-shorten-retention (nothing was changed)")
    info = await js.stream_info(name)
    assert info.config.max_age == pytest.approx(bus_settings.max_age_seconds)
    assert info.state.messages == 1


async def test_a_shorter_retention_is_applied_with_consent(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    name = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await js.publish(subjects.events_subject(bus_settings.prefix, "node", "", "n1"), b"{}")
    consented = dataclasses.replace(bus_settings, max_age_seconds=3600.0,
                                    shorten_retention=True)
    await streams.ensure_streams(js, consented)
    info = await js.stream_info(name)
    assert info.config.max_age == pytest.approx(3600.0)
    assert info.state.messages == 1  # younger than an hour: kept


async def test_a_stream_without_messages_is_shortened_and_any_stream_lengthened_freely(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    events, decisions, _ = streams.stream_specs(
        dataclasses.replace(bus_settings, max_age_seconds=60.0))
    await streams.ensure_stream(js, decisions)  # empty
    assert (await js.stream_info(decisions.name)).config.max_age == pytest.approx(60.0)
    await js.publish(subjects.events_subject(bus_settings.prefix, "node", "", "n1"), b"{}")
    with pytest.raises(BusMisconfigured, match=rf"stream {events.name} holds 1 message\(s\)"):
        await streams.ensure_stream(js, events)
    longer = dataclasses.replace(bus_settings, max_age_seconds=30 * 24 * 3600.0)
    await streams.ensure_streams(js, longer)
    assert (await js.stream_info(events.name)).config.max_age == pytest.approx(30 * 24 * 3600)
    assert (await js.stream_info(events.name)).state.messages == 1


async def test_a_stream_made_unlimited_by_someone_else_is_not_cut_back_without_consent(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    name = subjects.stream_name(bus_settings.prefix, "EVENTS")
    damaged = (await js.stream_info(name)).config
    damaged.max_age = 0
    await js.update_stream(config=damaged)
    await js.publish(subjects.events_subject(bus_settings.prefix, "node", "", "n1"), b"{}")
    with pytest.raises(BusMisconfigured) as refused:
        await streams.ensure_streams(js, bus_settings)
    assert "is shorter than its retention (unlimited): NATS would delete those older than " \
        "that. To keep them, start with --stream-max-age-seconds 0;" in str(refused.value)
    assert (await js.stream_info(name)).config.max_age == 0
