"""Stream specifications and config comparison (no server)."""

from __future__ import annotations

import dataclasses

from services.bus import streams
from services.config.settings import BusSettings


def test_specs_name_the_three_streams_under_the_prefix() -> None:
    specs = streams.stream_specs(BusSettings(prefix="acme.prod"))
    assert [(spec.name, spec.subjects) for spec in specs] == [
        ("ACME_PROD_EVENTS", ("acme.prod.events.>",)),
        ("ACME_PROD_DECISIONS", ("acme.prod.decisions.>",)),
        ("ACME_PROD_DEADLETTER", ("acme.prod.deadletter",)),
    ]


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
