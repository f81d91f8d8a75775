"""bench.cluster.observations: each object's observations sorted into first, changed, repeated."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, insert

from bench.cluster import observations
from services.contracts import codec
from services.contracts.events import ClockTicked, Event
from services.store import tables
from tests.unit.planner.builders import make_node, make_pod


def _database(path: Path) -> None:
    """Node n1 once; pod a listed, repeated (a condition written), bound, bound again with a
    new label; pod b once; a tick."""
    engine = create_engine(f"sqlite:///{path}")
    tables.metadata.create_all(engine)
    a = make_pod("a")
    events: list[Event] = [
        make_node("n1").build(1_000), a._with(resource_version="1").build(1_000),
        a._with(resource_version="2").build(1_500), ClockTicked(at_ms=2_000),
        a.on_node("n1")._with(resource_version="3").build(2_100),
        a.on_node("n1").labelled(team="x")._with(resource_version="4").build(2_200),
        make_pod("b").build(2_300)]
    with engine.begin() as db:
        db.execute(insert(tables.audit_events), [
            {"seq": seq, "subject": "s", "type": type(event).__name__, "at_ms": event.at_ms,
             "data": codec.encode(event)} for seq, event in enumerate(events, start=1)])
    engine.dispose()


def test_each_observation_is_first_changed_or_repeated_with_the_fields_it_changed(
    tmp_path: Path,
) -> None:
    _database(tmp_path / "gangsched.db")
    tallies, counts = observations.read(str(tmp_path / "gangsched.db"))
    pods, nodes = tallies["PodObserved"], tallies["NodeObserved"]
    assert (pods.first, pods.changed, pods.repeated) == (2, 2, 1)
    assert pods.fields == {("node_name", "phase"): 1, ("labels",): 1}
    assert (nodes.first, nodes.changed, nodes.repeated) == (1, 0, 0)
    assert counts == {"PodObserved": 5, "NodeObserved": 1, "ClockTicked": 1}


def test_main_prints_the_report_and_refuses_what_is_not_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    _database(tmp_path / "gangsched.db")
    assert observations.main([str(tmp_path / "gangsched.db")]) == 0
    out = capsys.readouterr().out
    assert "PodObserved                2        2         1" in out
    assert "  changed node_name, phase: 1" in out
    assert "repeated: 1 of 6 observations; all events: PodObserved 5, " in out
    (tmp_path / "junk.db").write_text("not a database")
    assert observations.main([str(tmp_path / "junk.db")]) == 1
    assert capsys.readouterr().err.startswith(f"cannot read {tmp_path / 'junk.db'}: ")
