"""bench.cluster.phases: a placement's time split at creation, first sight, plan point, bound."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, insert

from bench.cluster import phases
from bench.cluster.phases import Traced
from services.contracts import codec
from services.contracts.decisions import Assignment, Placement
from services.contracts.events import ClockTicked, Event, GroupBound
from services.store import tables
from tests.unit.planner.builders import make_pod, pod_uid


def test_phases_split_each_bound_placement_and_skip_the_unbound() -> None:
    traced = [Traced(1, 1_000, 1_400, 2_000, 2_500), Traced(3, 1_000, 1_100, 1_900, 4_900),
              Traced(2, 1_000, 1_200, 1_300, None)]
    assert phases.phases(traced) == {
        "created → seen": [100, 400], "seen → planned": [600, 800],
        "planned → bound": [500, 3_000]}


def test_in_flight_counts_planned_and_not_yet_bound_placements_per_window() -> None:
    traced = [Traced(1, 0, 0, 1_000, 2_500), Traced(1, 0, 0, 1_500, 6_000),
              Traced(1, 0, 0, 4_000, None)]
    # windows end at 3,000, 5,000 and 7,000 ms: a bound at 2,500 is gone by the first
    assert phases.in_flight(traced) == [1, 2, 1]


def _database(path: Path) -> None:
    """A gangsched database, schema from `services.store.tables`: pods a (created at 1,000,
    seen at 1,300) and b (created at 1,100, seen at 1,800), a tick at 2,400 (seq 3), gang g
    placed at that plan point, bound at 5,000; singleton c seen, placed, never bound."""
    engine = create_engine(f"sqlite:///{path}")
    tables.metadata.create_all(engine)
    a = make_pod("a")._with(created_at_ms=1_000).build(1_300)
    b = make_pod("b")._with(created_at_ms=1_100).build(1_800)
    c = make_pod("c")._with(created_at_ms=1_100).build(1_900)
    gang = Placement(id="3-0", plan_seq=3, at_ms=2_400, group="default/g", attempt=1,
                     deadline_ms=62_400,
                     members=tuple(Assignment(pod_uid(n), "default", n, "n1") for n in "ab"))
    alone = Placement(id="4-0", plan_seq=4, at_ms=2_400, group="default/c", attempt=1,
                      deadline_ms=62_400, members=(Assignment(pod_uid("c"), "default", "c", "n1"),))
    events: list[Event] = [a, b, ClockTicked(at_ms=2_400), c, GroupBound(5_000, "3-0", "default/g")]
    with engine.begin() as db:
        db.execute(insert(tables.audit_events), [
            {"seq": seq, "subject": "s", "type": type(event).__name__, "at_ms": event.at_ms,
             "data": codec.encode(event)} for seq, event in enumerate(events, start=1)])
        db.execute(insert(tables.outbox), [
            {"id": p.id, "plan_seq": p.plan_seq, "position": 0, "subject": "s",
             "data": codec.encode(p), "published_at_ms": None} for p in (gang, alone)])
    engine.dispose()


def test_a_database_is_read_into_each_placements_times(tmp_path: Path) -> None:
    _database(tmp_path / "gangsched.db")
    assert phases.read(str(tmp_path / "gangsched.db")) == [
        Traced(2, 1_100, 1_800, 2_400, 5_000), Traced(1, 1_100, 1_900, 1_900, None)]


def test_main_prints_the_report_and_refuses_what_is_not_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    _database(tmp_path / "gangsched.db")
    assert phases.main([str(tmp_path / "gangsched.db")]) == 0
    out = capsys.readouterr().out
    assert "gangs (1 bound of 1 placements), ms:" in out
    assert "seen → planned   p50    600" in out
    assert "singletons (0 bound of 1 placements), ms:\n  created → seen   p50      -" in out
    (tmp_path / "junk.db").write_text("not a database")
    assert phases.main([str(tmp_path / "junk.db")]) == 1
    assert capsys.readouterr().err.startswith(f"cannot read {tmp_path / 'junk.db'}: ")
