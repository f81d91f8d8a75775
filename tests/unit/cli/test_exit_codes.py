"""Every command follows one exit-status scheme (services/cli/exit_codes.py, README "Exit
codes"): 0 done, 1 could not do its work, 2 bad usage or input, 3 the audit's answer is no.
Each family is shown by real invocations of the commands, on a real recorded log."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import exit_codes
from services.cli.main import app
from tests.unit.audit.recorded import scenario
from tests.unit.audit.recorded_db import write_database

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """`{log}` a database holding a real recorded log, `{empty}` a migrated empty one, `{tmp}`
    a scratch directory, `{key}` a usable decision key file, `{short}` an unusable one."""
    tmp = tmp_path_factory.mktemp("exit-codes")
    empty = tmp / "empty.db"
    write_database(scenario(), tmp / "log.db")
    assert invoke("migrate", "--db", str(empty), "--log-level", "WARNING")[0] == 0
    (tmp / "key").write_text("0123456789abcdef" * 4 + "\n")
    (tmp / "short").write_text("short\n")
    (tmp / "key").chmod(0o600)
    (tmp / "short").chmod(0o600)
    (tmp / "notes.db").write_text("not a database\n")
    (tmp / "bad.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n")
    return {"log": str(tmp / "log.db"), "empty": str(empty), "tmp": str(tmp),
            "key": str(tmp / "key"), "short": str(tmp / "short")}


def invoke(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv), env={"GANGSCHED_NATS": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


CASES = [
    # 0: done
    (("version",), exit_codes.OK, "gangsched "),
    (("simulate", str(EXAMPLES), "-o", "json"), exit_codes.OK, '"pods"'),
    (("migrate", "--db", "{tmp}/new.db", "--log-level", "WARNING"), exit_codes.OK,
     "database at head revision"),
    (("schema", "--out", "{tmp}/schema"), exit_codes.OK, "schema"),
    (("replay", "--verify", "--db", "{log}"), exit_codes.OK,
     "verified 13 decisions at 6 plan points"),
    (("explain", "pod", "default/nginx-0", "--db", "{log}"), exit_codes.OK,
     "verdict: Bound to kwok-node-0"),
    # 1: the command could not do its work
    (("planner", "--nats", "nats://127.0.0.1:1", "--db", "postgresql+asyncpg://u@127.0.0.1:1/x",
      "--decision-key-file", "{key}", "--http-port", "-1", "--log-level", "CRITICAL"),
     exit_codes.FAILED, "Error: cannot reach the database"),
    (("migrate", "--db", "{tmp}/notes.db", "--log-level", "WARNING"), exit_codes.FAILED,
     "Error: cannot migrate the database {tmp}/notes.db: not a SQLite database file"),
    (("schema", "--out", "/proc/nope"), exit_codes.FAILED, "Error: cannot write the schemas"),
    (("schema", "--out", "{tmp}/typo/schema"), exit_codes.FAILED,
     "Error: cannot write the schemas to {tmp}/typo/schema: directory {tmp}/typo does not "
     "exist"),
    (("migrate", "--db", "{tmp}/notes.db/new.db", "--log-level", "WARNING"),
     exit_codes.FAILED, "Error: cannot open the SQLite database {tmp}/notes.db/new.db: "
                        "{tmp}/notes.db is not a directory"),
    (("migrate", "--db", "{tmp}/typo/new.db", "--log-level", "WARNING"),
     exit_codes.FAILED, "Error: cannot open the SQLite database {tmp}/typo/new.db: directory "
                        "{tmp}/typo does not exist"),
    (("migrate", "--data-dir", "{tmp}/notes.db/dir", "--log-level", "WARNING"),
     exit_codes.FAILED, "Error: cannot use data directory {tmp}/notes.db/dir: {tmp}/notes.db "
                        "is a file, not a directory"),
    (("planner", "--nats", "nats://127.0.0.1:1", "--db", "{tmp}/notes.db/new.db",
      "--decision-key-file", "{key}", "--http-port", "-1", "--log-level", "CRITICAL"),
     exit_codes.FAILED, "Error: cannot open the SQLite database {tmp}/notes.db/new.db: "
                        "{tmp}/notes.db is not a directory"),
    (("run", "--data-dir", "{tmp}/notes.db", "--http-port", "-1", "--log-level", "CRITICAL"),
     exit_codes.FAILED, "Error: cannot use data directory {tmp}/notes.db: it is a file, not "
                        "a directory"),
    (("replay", "--db", "{tmp}/missing.db"), exit_codes.FAILED, "no SQLite database"),
    (("explain", "pod", "default/x", "--db", "{tmp}/notes.db"), exit_codes.FAILED,
     "Error: cannot read the database {tmp}/notes.db: not a SQLite database file"),
    (("decisions", "--data-dir", "{tmp}/nothing"), exit_codes.FAILED,
     "Error: data directory {tmp}/nothing does not exist"),
    (("decisions", "--data-dir", "{tmp}"), exit_codes.FAILED, "no gangsched runs there"),
    # 2: bad usage or input
    (("run", "--batch-size", "0"), exit_codes.USAGE, "invalid value for '--batch-size'"),
    (("binder", "--http-port", "-1"), exit_codes.USAGE, "`gangsched binder` needs --nats"),
    (("planner", "--nats", "nats://127.0.0.1:1", "--decision-key-file", "{short}",
      "--http-port", "-1"), exit_codes.USAGE, "it needs at least 32"),
    (("migrate", "--db", "not a url"), exit_codes.USAGE, "is neither a database URL"),
    (("simulate", "{tmp}/bad.yaml"), exit_codes.USAGE, "status.allocatable: missing"),
    (("replay", "--from-seq", "-5", "--db", "{log}"), exit_codes.USAGE,
     "invalid value for '--from-seq'"),
    (("replay", "--verify", "--db", "{log}", "--until", "0001-01-01T00:00:00+14:00"),
     exit_codes.USAGE, "outside the years 1 to 9999 in UTC"),
    (("explain", "pod"), exit_codes.USAGE, "needs <namespace>/<name>"),
    (("decisions", "--nats", "http://127.0.0.1:4222"), exit_codes.USAGE, "not a NATS URL"),
    (("schema", "--bogus"), exit_codes.USAGE, "gangsched schema: no such option: --bogus"),
    # 3: the audit ran and its answer is no
    (("replay", "--verify", "--db", "{log}", "--default-timeout-seconds", "30"),
     exit_codes.NEGATIVE, "divergence at plan point"),
    (("replay", "--verify", "--db", "{empty}"), exit_codes.NEGATIVE,
     "nothing was verified: the log is empty"),
    (("replay", "--db", "{log}", "--from-seq", "999"), exit_codes.NEGATIVE,
     "nothing to show from --from-seq 999: the log ends at sequence 21"),
    (("explain", "pod", "default/ghost", "--db", "{log}"), exit_codes.NEGATIVE,
     "Unknown: pod default/ghost does not appear in the log"),
    (("explain", "podgroup", "default/ghost", "--db", "{log}"), exit_codes.NEGATIVE,
     "Unknown: PodGroup default/ghost does not appear in the log"),
    (("explain", "nginx", "--db", "{log}"), exit_codes.NEGATIVE,  # a PodGroup's name
     "Unknown: pod default/nginx does not appear in the log; a PodGroup default/nginx is in "
     "the log: gangsched explain podgroup default/nginx"),
]


@pytest.mark.parametrize(("argv", "code", "told"), CASES,
                         ids=[f"{code}-{' '.join(argv[:2])}" for argv, code, _ in CASES])
def test_each_outcome_has_the_exit_status_of_its_family(
        places: dict[str, str], argv: tuple[str, ...], code: int, told: str) -> None:
    status, output = invoke(*(arg.format(**places) for arg in argv))
    assert (status, told.format(**places) in output) == (code, True), output
    assert "Traceback" not in output
    if code in (exit_codes.FAILED, exit_codes.USAGE):
        assert len(output.strip().splitlines()) == 1, output  # one line, no usage text


def test_the_four_values_are_distinct_and_click_s_own_agree() -> None:
    import click

    assert (exit_codes.OK, exit_codes.FAILED, exit_codes.USAGE, exit_codes.NEGATIVE) == (
        0, 1, 2, 3)
    assert click.ClickException.exit_code == exit_codes.FAILED
    assert click.UsageError.exit_code == exit_codes.USAGE
