"""`gangsched explain` tells its steps in log order, on a real recorded log read from SQLite:
by EVENTS sequence, a round's decisions after the events up to its plan point in publication
order, the same for ties (events at the same time) however the rows were written, and every
time in UTC; an outcome carrying the binder's earlier clock stays where the log has it."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from services.cli.main import app
from services.contracts.decisions import Placement
from services.contracts.events import Event
from tests.unit.audit.recorded import T0, Recorder, bind_all, observed_bound, placements
from tests.unit.audit.recorded_db import write_database
from tests.unit.planner.builders import make_node, make_pod, make_podgroup

SKEW_MS = 700
"""How far the binder's clock is behind the watcher's in this log."""
STEP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)  (.*)  "
                  r"\[(seq|decision) (\d+)(?:-(\d+))?\]$")
"""A step: its UTC time, its text, its reference (an event's sequence or a decision's id)."""


def recorded() -> tuple[Recorder, Placement]:
    """Six pods of a gang observed at the same instant (3 fit the node), the placement bound
    by a binder whose clock is `SKEW_MS` behind, then a second gang at that same instant."""
    rec = Recorder()
    seed: list[Event] = [make_node("kwok-node-0").capacity(cpu_milli=10_000).build(T0),
                         make_podgroup("nginx", 3).created(T0).build(T0),
                         *[make_pod(f"nginx-{i}").requests(cpu_milli=3000).in_group("nginx")
                           .created(T0).build(T0) for i in range(6)]]
    (placement,) = placements(rec.round(*seed))
    rec.round(*bind_all(placement, T0 - SKEW_MS), *observed_bound(rec, placement, T0 + 50))
    rec.round(make_podgroup("late", 2).created(T0 + 50).build(T0 + 50),
              *[make_pod(f"late-{i}").requests(cpu_milli=3000).in_group("late")
                .created(T0 + 50).build(T0 + 50) for i in range(2)])
    return rec, placement


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The same log written in order and with every table's rows reversed."""
    tmp = tmp_path_factory.mktemp("explain-order")
    rec, _ = recorded()
    return (write_database(rec, tmp / "forward.db"),
            write_database(rec, tmp / "reversed.db", reversed_rows=True))


def explain(db_url: str, *what: str) -> list[str]:
    result = CliRunner().invoke(app, ["explain", *what, "--db", db_url])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def order_key(line: str) -> tuple[int, int, int]:
    """(sequence or plan point, 0 for an event / 1 for a decision, position in the round)."""
    found = STEP.match(line)
    assert found is not None, line
    _, _, ref, number, position = found.groups()
    return (int(number), 0, 0) if ref == "seq" else (int(number), 1, int(position))


def step_time(line: str) -> str:
    """A step's UTC time."""
    found = STEP.match(line)
    assert found is not None, line
    return found.group(1)


@pytest.mark.parametrize("what", [("podgroup", "default/nginx"), ("pod", "default/nginx-0"),
                                  ("pod", "default/nginx-5")])
def test_steps_are_in_log_order_and_the_same_however_the_rows_were_written(
        databases: tuple[str, str], what: tuple[str, str]) -> None:
    forward, backward = (explain(url, *what) for url in databases)
    assert forward == backward
    steps = [line for line in forward[1:] if not line.startswith(("status: ", "verdict: "))]
    keys = [order_key(line) for line in steps]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_ties_follow_the_sequence_and_times_are_utc(databases: tuple[str, str]) -> None:
    lines = explain(databases[0], "podgroup", "default/nginx")
    observed = [line for line in lines if " observed Pending" in line]
    assert [line.split("member ")[1].split(" ")[0] for line in observed] == [
        f"nginx-{i}" for i in range(6)]  # all at T0: by sequence 3..8
    assert {step_time(line) for line in observed} == {"2023-11-14T22:13:20.000Z"}


def test_an_outcome_on_the_binders_earlier_clock_stays_after_its_placement(
        databases: tuple[str, str]) -> None:
    _, placement = recorded()
    lines = explain(databases[0], "pod", f"default/{placement.members[0].name}")
    placed = next(i for i, line in enumerate(lines) if f"[decision {placement.id}]" in line)
    bound = next(i for i, line in enumerate(lines) if " bound to kwok-node-0 " in line)
    assert placed < bound
    assert lines[placed].startswith("2023-11-14T22:13:20.000Z")
    assert lines[bound].startswith("2023-11-14T22:13:19.300Z")  # the binder's clock, as logged
