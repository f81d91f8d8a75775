"""`gangsched replay`, `explain` and `decisions` on a log recorded by the real planner service
(real nats-server; SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import sqlalchemy
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import codec, subjects
from services.contracts.decisions import Placement, StatusUpdate, decision_subject
from services.planner.core import revision
from services.store import audit, tables
from services.store.audit import ReadOnlyViolation
from tests.integration.audit_harness import (
    Recording,
    gangsched,
    json_lines,
    record_pending_gang,
    record_scenario,
)
from tests.support import docs_scripts

pytestmark = pytest.mark.integration


@pytest.fixture
async def recording(js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
                    migrated_db_url: str, tmp_path: Path) -> Recording:
    return await record_scenario(js, bus_settings, engine, migrated_db_url, tmp_path)


def nats_args(recording: Recording) -> list[str]:
    return ["--nats", str(recording.bus.url), "--prefix", recording.bus.prefix]


async def table_contents(engine: AsyncEngine) -> dict[str, list[tuple[object, ...]]]:
    contents = {}
    async with engine.connect() as connection:
        for table in tables.metadata.sorted_tables:
            rows = (await connection.execute(sqlalchemy.select(table))).all()
            contents[table.name] = sorted(tuple(row) for row in rows)
    return contents


async def test_replay_verify_reproduces_every_decision_from_the_database_and_writes_nothing(
        recording: Recording, engine: AsyncEngine) -> None:
    before = await table_contents(engine)
    result = await gangsched("replay", "--verify", "--db", recording.db_url)
    assert result.exit_code == 0, result.output
    async with engine.connect() as connection:
        rounds = (await connection.execute(sqlalchemy.select(sqlalchemy.func.count())
                                           .select_from(tables.rounds))).scalar_one()
    assert result.output.strip() == (f"verified {len(recording.decisions)} decisions at "
                                     f"{rounds} plan points")
    assert await table_contents(engine) == before
    assert any(isinstance(d, Placement) and d.attempt == 2 for d in recording.decisions)


async def test_replay_verify_from_nats_reproduces_the_published_decisions_and_acks_nothing(
        recording: Recording, js: JetStreamContext) -> None:
    prefix = recording.bus.prefix
    consumers_before = await durable_consumers(js, prefix)
    result = await gangsched("replay", "--source", "nats", "--verify", *nats_args(recording),
                             "-o", "json")
    assert result.exit_code == 0, result.output
    (report,) = json_lines(result.output)
    assert report["verified"] == len(recording.decisions) and report["divergence"] is None
    assert await durable_consumers(js, prefix) == consumers_before
    for suffix in ("EVENTS", "DECISIONS"):
        info = await js.stream_info(subjects.stream_name(prefix, suffix))
        expected = recording.events if suffix == "EVENTS" else len(recording.decisions)
        assert info.state.messages == expected


async def durable_consumers(js: JetStreamContext, prefix: str) -> dict[str, tuple[int, int]]:
    """Durable consumers of the streams with their ack floor and delivered sequences."""
    found = {}
    for suffix in ("EVENTS", "DECISIONS"):
        for info in await js.consumers_info(subjects.stream_name(prefix, suffix)):
            if info.config.durable_name:
                assert info.ack_floor is not None and info.delivered is not None
                found[info.name] = (info.ack_floor.stream_seq, info.delivered.stream_seq)
    return found


@pytest.mark.parametrize("changed", [["--scoring", "most-allocated"],
                                     ["--default-timeout-seconds", "30"]])
async def test_replay_verify_with_another_planner_config_reports_the_first_divergence(
        recording: Recording, changed: list[str]) -> None:
    result = await gangsched("replay", "--verify", "--db", recording.db_url, *changed)
    assert result.exit_code == 3, result.output  # a negative verdict
    lines = result.output.splitlines()
    assert lines[0].startswith("divergence at plan point ") and lines[0].endswith("they differ")
    assert lines[1].startswith("  recorded: ") and lines[3].startswith("  re-derived: ")
    recorded, derived = json.loads(lines[2]), json.loads(lines[4])
    assert recorded["type"] == derived["type"] == "Placement"
    field = "members" if changed[0] == "--scoring" else "deadline_ms"
    assert recorded[field] != derived[field]
    assert f"fields that differ: {field}" in result.output
    first = next(d for d in recording.decisions
                 if isinstance(d, Placement) and (changed[0] != "--scoring"
                                                  or d.group == "default/train"))
    assert recorded["id"] == first.id


async def test_replay_from_nats_with_another_config_diverges_too(recording: Recording) -> None:
    result = await gangsched("replay", "--source", "nats", "--verify", *nats_args(recording),
                             "--scoring", "most-allocated")
    assert result.exit_code == 3 and "divergence at plan point" in result.output
    assert "verify from the database (--source db)" in result.stderr


async def test_replay_finds_the_database_and_nats_in_run_json(recording: Recording,
                                                              tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "run.json").write_text(json.dumps({
        "nats": recording.bus.url, "prefix": recording.bus.prefix, "db": recording.db_url}))
    for source in ("db", "nats"):
        result = await gangsched("replay", "--verify", "--source", source,
                                 "--data-dir", str(data_dir))
        assert result.exit_code == 0, result.output
        assert result.output.startswith(f"verified {len(recording.decisions)} decisions")


async def test_the_timeline_of_a_podgroup_shows_events_decisions_and_outcomes(
        recording: Recording) -> None:
    result = await gangsched("replay", "--db", recording.db_url, "--podgroup", "default/train",
                             "-o", "json")
    assert result.exit_code == 0, result.output
    entries = json_lines(result.output)
    kinds = [(entry["kind"], entry["type"]) for entry in entries]
    assert ("event", "PodGroupObserved") in kinds and ("outcome", "GroupRolledBack") in kinds
    assert kinds.count(("decision", "Placement")) == 2
    assert all("nginx" not in str(entry["summary"]) for entry in entries)
    table = await gangsched("replay", "--db", recording.db_url, "--pod", "default/train-0",
                            "--from-seq", "12")
    assert table.exit_code == 0 and table.output.splitlines()[0].split()[:3] == [
        "Seq", "Time", "(UTC)"]
    assert "GroupRolledBack" in table.output and "PodGroupObserved" not in table.output


async def test_replay_until_a_sequence_verifies_only_the_rounds_before_it(
        recording: Recording, engine: AsyncEngine) -> None:
    # How many rounds end at or before seq 8 depends on how the live planner batched: count them.
    async with engine.connect() as connection:
        rounds = (await connection.execute(
            sqlalchemy.select(sqlalchemy.func.count()).select_from(tables.rounds)
            .where(tables.rounds.c.plan_seq <= 8))).scalar_one()
        total = (await connection.execute(sqlalchemy.select(sqlalchemy.func.count())
                                          .select_from(tables.rounds))).scalar_one()
    assert 0 < rounds < total
    result = await gangsched("replay", "--verify", "--db", recording.db_url, "--until", "8")
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith(f"at {rounds} plan points")


async def test_explain_a_bound_pod_names_its_node_time_and_decision(recording: Recording) -> None:
    placement = next(d for d in recording.decisions if isinstance(d, Placement))
    member = placement.members[0]
    result = await gangsched("explain", f"default/{member.name}", "--db", recording.db_url)
    assert result.exit_code == 0, result.output
    verdict = result.output.splitlines()[-1]
    assert verdict.startswith(f"verdict: Bound to {member.node} at 2023-11-14T")
    assert verdict.endswith(f"by decision {placement.id}")


async def test_explain_a_pending_pod_of_the_min_member_4_gang_names_the_gang_and_the_capacity(
        js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
        migrated_db_url: str, tmp_path: Path) -> None:
    await record_pending_gang(js, bus_settings, engine, tmp_path)
    result = await gangsched("explain", "pod", "default/nginx-5", "--db", migrated_db_url)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == (
        "verdict: Pending: gang default/nginx: 3 of 4 members fit; 0/1 nodes are available: "
        "1 Insufficient cpu.")
    group = await gangsched("explain", "podgroup", "default/nginx", "--db", migrated_db_url,
                            "-o", "json")
    body = json.loads(group.output)
    assert "3 of 4 members fit" in body["verdict"] and "6 pending" in body["status"]
    unknown = await gangsched("explain", "default/ghost", "--db", migrated_db_url)
    assert unknown.exit_code == 3 and "does not appear in the log" in unknown.output


async def test_decisions_of_one_podgroup_are_only_that_groups(recording: Recording) -> None:
    result = await gangsched("decisions", "--podgroup", "default/train", *nats_args(recording),
                             "-o", "json")
    assert result.exit_code == 0, result.output
    printed = json_lines(result.output)
    expected = [d for d in recording.decisions if d.group == "default/train"]
    assert [line["id"] for line in printed] == [d.id for d in expected]
    everything = await gangsched("decisions", *nats_args(recording), "-o", "json")
    assert len(json_lines(everything.output)) == len(recording.decisions)
    table = await gangsched("decisions", "--podgroup", "default/nginx", *nats_args(recording))
    assert table.exit_code == 0 and "train" not in table.output
    statuses = [d for d in recording.decisions
                if isinstance(d, StatusUpdate) and d.group == "default/nginx"]
    assert table.output.count("StatusUpdate") == len(statuses)
    none = await gangsched("decisions", "--podgroup", "none", *nats_args(recording))
    assert none.exit_code == 3 and none.stdout == ""  # a bare name is in default, as explain
    assert none.stderr.strip() == "no decision of PodGroup default/none on the DECISIONS stream"


async def test_an_audit_connection_refuses_to_write(recording: Recording) -> None:
    engine = audit.open_read_only(recording.db_url)
    try:
        async with engine.connect() as connection:
            with pytest.raises(ReadOnlyViolation):
                await connection.execute(tables.tracking.delete())
    finally:
        await engine.dispose()


async def test_replay_of_a_missing_database_fails_with_status_1(tmp_path: Path) -> None:
    result = await gangsched("replay", "--verify", "--db",
                             f"sqlite+aiosqlite:///{tmp_path / 'none.db'}")
    assert result.exit_code == 1 and "no SQLite database" in result.output
    assert not (tmp_path / "none.db").exists()


async def test_the_nats_py_subscriber_of_the_docs_prints_one_groups_decisions(
        recording: Recording, tmp_path: Path) -> None:
    script = docs_scripts.write_python_block("decisions.md", tmp_path / "subscribe.py")
    expected = [d.id for d in recording.decisions if d.group == "default/train"]
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(recording.bus.url), recording.bus.prefix, "default/train",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert process.stdout is not None
    printed: list[str] = []
    try:
        while len(printed) < len(expected):
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line, "the subscriber exited"
            printed.append(line.decode().split()[2])
    finally:
        process.terminate()
        await process.wait()
    assert printed == expected


async def test_decisions_follow_prints_the_stored_ones_then_new_ones_as_they_come(
        recording: Recording, js: JetStreamContext) -> None:
    prefix = recording.bus.prefix
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli.main", "decisions", "--follow", "-o", "json",
        *nats_args(recording), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert process.stdout is not None
    late = StatusUpdate(id="900-0", plan_seq=900, at_ms=1, group="default/late", phase="Pending",
                        running=0, succeeded=0, failed=0)
    seen: list[str] = []
    try:
        while len(seen) < len(recording.decisions) + 1:
            if len(seen) == len(recording.decisions):
                await Publisher(js).publish(
                    decision_subject(prefix, late), codec.encode(late), msg_id=late.id)
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line, "decisions --follow exited"
            seen.append(json.loads(line)["id"])
    finally:
        process.terminate()
        await process.wait()
    assert seen == [d.id for d in recording.decisions] + ["900-0"]


async def test_replay_from_nats_refuses_a_stream_whose_oldest_events_expired(
        recording: Recording, js: JetStreamContext) -> None:
    # as retention drops the oldest events (the streams deny purges): keep the newest only
    name = subjects.stream_name(recording.bus.prefix, "EVENTS")
    info = await js.stream_info(name)
    info.config.max_msgs = info.state.messages - 2
    await js.update_stream(config=info.config)
    result = await gangsched("replay", "--source", "nats", "--verify", *nats_args(recording))
    assert result.exit_code == 1 and "older events expired" in result.output


async def test_every_round_records_its_planner_and_a_divergence_names_another_one(
        recording: Recording, engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        planners = (await connection.execute(sqlalchemy.select(tables.rounds.c.planner)
                                              .distinct())).scalars().all()
    assert planners == [revision.PLANNER]
    older = "gangsched 0.0.9 core 0"
    async with engine.begin() as connection:  # as if an older planner had recorded the log
        await connection.execute(sqlalchemy.update(tables.rounds).values(planner=older))
    same = await gangsched("replay", "--verify", "--db", recording.db_url)
    assert same.exit_code == 0, same.output  # the same decisions: no word about planners
    changed = await gangsched("replay", "--verify", "--db", recording.db_url,
                              "--scoring", "most-allocated", "-o", "json")
    assert changed.exit_code == 3
    (report,) = json_lines(changed.output)
    divergence = report["divergence"]
    assert divergence["recorded_by"] == older
    assert divergence["replayed_by"] == revision.PLANNER
    assert (f"planned by {older} and replayed by {revision.PLANNER}: the difference may be "
            f"theirs") in divergence["description"]


async def test_rounds_from_before_planners_recorded_themselves_are_named_so(
        recording: Recording, engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.execute(sqlalchemy.update(tables.rounds).values(planner=None))
    changed = await gangsched("replay", "--verify", "--db", recording.db_url,
                              "--scoring", "most-allocated")
    assert changed.exit_code == 3
    assert "planned by a planner that did not record itself and replayed by" in changed.output


async def test_a_focus_or_until_that_matches_nothing_says_so(recording: Recording) -> None:
    nothing = await gangsched("replay", "--db", recording.db_url, "--podgroup", "nope")
    assert nothing.exit_code == 3 and nothing.stdout == ""  # as explain of an unknown object
    assert nothing.stderr.strip() == "nothing in the log is about podgroup default/nope"
    # a time before every event (not seq 1: whether the planner's first round was at seq 1
    # depends on how it fetched the first events, as it ran while they were published)
    early = await gangsched("replay", "--verify", "--db", recording.db_url,
                            "--until", "2000-01-01T00:00:00Z")
    assert early.exit_code == 3
    assert early.stderr.strip() == ("nothing was verified: no planning round at or before "
                                    "--until 2000-01-01T00:00:00.000Z")
    malformed = await gangsched("replay", "--db", recording.db_url, "--podgroup", "a/b/c")
    assert malformed.exit_code == 2 and "expected <namespace>/<name>, got 'a/b/c'" in (
        malformed.output)
