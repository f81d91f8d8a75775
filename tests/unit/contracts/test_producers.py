"""Every event type has one subject kind and one producer."""

from __future__ import annotations

import typing

from services.contracts import producers
from services.contracts.events import Event, EventKind, Outcome


def test_every_event_type_has_a_subject_kind_and_every_kind_a_producer() -> None:
    assert set(producers.KIND_OF_TYPE) == set(typing.get_args(Event))
    assert set(producers.PRODUCER_OF_KIND) == set(typing.get_args(EventKind))


def test_the_binder_produces_exactly_the_outcomes_and_the_watcher_the_rest() -> None:
    by_binder = {event_type for event_type, kind in producers.KIND_OF_TYPE.items()
                 if producers.PRODUCER_OF_KIND[kind] == producers.BINDER}
    assert by_binder == set(typing.get_args(Outcome))
