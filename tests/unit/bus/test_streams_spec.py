"""Stream specifications and config comparison (no server)."""

from __future__ import annotations

import dataclasses

from nats.js.api import DiscardPolicy, RePublish, StreamSource

from services.bus import streams
from services.config.settings import BusSettings
from services.contracts import subjects


def test_specs_name_the_three_streams_under_the_prefix() -> None:
    specs = streams.stream_specs(BusSettings(prefix="acme.prod"))
    assert [(spec.name, spec.subjects) for spec in specs] == [
        ("ACME_PROD_EVENTS", ("acme.prod.events.>",)),
        ("ACME_PROD_DECISIONS", ("acme.prod.decisions.>",)),
        ("ACME_PROD_DEADLETTER", ("acme.prod.deadletter",)),
    ]


def test_each_subject_is_mapped_to_the_stream_that_stores_it() -> None:
    of = streams.stream_of(BusSettings(prefix="acme.prod"))
    assert [of(subject) for subject in (
        "acme.prod.events.pod.ml.w-0",
        "acme.prod.decisions.Placement.ml.g",
        "acme.prod.deadletter",
        "acme.prod.deadletter.x",
        "acme.prod.events",
        "acme.test.events.pod.ml.w-0",
    )] == ["ACME_PROD_EVENTS", "ACME_PROD_DECISIONS", "ACME_PROD_DEADLETTER", None, None, None]


def test_subject_patterns_match_as_nats_does() -> None:
    assert [subjects.matches(pattern, subject) for pattern, subject in (
        ("a.>", "a.b"), ("a.>", "a.b.c"), ("a.>", "a"),
        ("a.*.c", "a.b.c"), ("a.*.c", "a.b.d"), ("a.*", "a.b.c"),
        ("a.b", "a.b"), ("a.b", "a.b.c"), ("a.b.c", "a.b"),
    )] == [True, True, False, True, False, False, True, False, False]


def test_duplicate_window_is_raised_to_two_minutes_and_capped_by_max_age() -> None:
    assert streams.stream_specs(BusSettings(duplicate_window_seconds=1))[0] \
        .duplicate_window_seconds == 120
    capped = BusSettings(duplicate_window_seconds=600, max_age_seconds=300)
    assert streams.stream_specs(capped)[0].duplicate_window_seconds == 300
    unlimited = BusSettings(duplicate_window_seconds=600, max_age_seconds=0)
    assert streams.stream_specs(unlimited)[0].duplicate_window_seconds == 600


def test_config_differences_names_each_changed_field() -> None:
    spec = streams.stream_specs(BusSettings())[0]
    assert streams.config_differences(spec.config(), spec) == []
    other = dataclasses.replace(spec, max_age_seconds=60.0, replicas=3)
    assert [line.split()[0] for line in streams.config_differences(spec.config(), other)] == [
        "num_replicas", "max_age",
    ]


def test_the_config_sets_every_limit_to_unlimited_and_denies_deletes_and_purges() -> None:
    config = streams.stream_specs(BusSettings())[0].config()
    assert (config.max_msgs, config.max_bytes, config.max_msgs_per_subject,
            config.max_msg_size, config.max_consumers) == (-1, -1, -1, -1, -1)
    assert config.deny_delete and config.deny_purge and not config.allow_rollup_hdrs


def test_fields_an_attacker_could_set_are_each_named_as_a_difference() -> None:
    spec = streams.stream_specs(BusSettings())[1]
    damaged = dataclasses.replace(
        spec.config(), max_msgs=1, max_bytes=1024, max_msgs_per_subject=1, max_msg_size=1,
        discard=DiscardPolicy.NEW, no_ack=True, sealed=True, deny_delete=False,
        deny_purge=False, allow_rollup_hdrs=True, allow_msg_ttl=True, allow_msg_schedules=True,
        republish=RePublish(src=">", dest="elsewhere.>"),
        sources=[StreamSource(name="FORGED")], subjects=["gangsched.decisions.>", "more.>"])
    found = {d.field: str(d) for d in streams.differences(damaged, spec)}
    assert found["max_msgs"] == "max_msgs 1 -> -1"
    assert found["republish"] == "republish {'src': '>', 'dest': 'elsewhere.>'} -> None"
    assert set(found) == {
        "subjects", "max_msgs", "max_bytes", "max_msgs_per_subject", "max_msg_size",
        "discard", "no_ack", "sealed", "deny_delete", "deny_purge", "allow_rollup_hdrs",
        "allow_msg_ttl", "allow_msg_schedules", "republish", "sources"}


def test_unset_and_zero_limits_read_as_unlimited_as_nats_reads_them() -> None:
    spec = streams.stream_specs(BusSettings())[0]
    loose = dataclasses.replace(spec.config(), max_msgs=None, max_bytes=0, max_consumers=None,
                                allow_msg_ttl=None, sources=[], discard=None)
    assert streams.differences(loose, spec) == []


def test_only_a_max_age_made_shorter_or_limited_shortens_the_retention() -> None:
    def found(have: float, want: float) -> list[streams.Difference]:
        return [streams.Difference("num_replicas", 1, 3), streams.Difference("max_age", have, want)]

    assert streams.shortens_retention(found(604800.0, 3600.0)) == \
        streams.Difference("max_age", 604800.0, 3600.0)
    assert streams.shortens_retention(found(0.0, 3600.0)) is not None  # unlimited to a limit
    assert streams.shortens_retention(found(3600.0, 0.0)) is None  # to unlimited
    assert streams.shortens_retention(found(3600.0, 7200.0)) is None
    assert streams.shortens_retention([streams.Difference("max_msgs", 1, -1)]) is None


def test_the_shorten_retention_consent_reaches_every_stream_spec() -> None:
    assert not any(spec.shorten_allowed for spec in streams.stream_specs(BusSettings()))
    assert all(spec.shorten_allowed
               for spec in streams.stream_specs(BusSettings(shorten_retention=True)))
