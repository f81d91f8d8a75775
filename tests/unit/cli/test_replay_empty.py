"""`gangsched replay` of a log with no events says so, in one line, instead of printing
nothing (or a pass)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

EMPTY = ("the log is empty: no event recorded in the database (is this the data directory or "
         "--db of the run you mean?)")


def gangsched(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli.main", *argv],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def empty_data_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    data = str(tmp_path_factory.mktemp("empty") / "data")
    assert gangsched("migrate", "--data-dir", data).returncode == 0
    return data


def test_replaying_an_empty_database_says_the_log_is_empty(empty_data_dir: str) -> None:
    result = gangsched("replay", "--data-dir", empty_data_dir)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", EMPTY + "\n")


@pytest.mark.parametrize("narrowed", [("--pod", "default/x"), ("--podgroup", "x"),
                                      ("--from-seq", "999"), ("--until", "2020-01-01")])
def test_an_empty_log_asked_for_a_part_is_told_once_and_a_negative_verdict(
        empty_data_dir: str, narrowed: tuple[str, str]) -> None:
    """A pod, a group or a stretch of an empty log shows nothing: exit 3, as for one past the
    end of a log that holds events (docs/audit.md), not 0; the empty log told once."""
    result = gangsched("replay", "--data-dir", empty_data_dir, *narrowed)
    assert (result.returncode, result.stdout, result.stderr) == (3, "", EMPTY + "\n")


def test_verifying_an_empty_log_is_one_line_and_a_negative_verdict(empty_data_dir: str) -> None:
    result = gangsched("replay", "--verify", "--data-dir", empty_data_dir)
    assert (result.returncode, result.stdout) == (3, "")
    assert result.stderr == f"nothing was verified: {EMPTY}\n"


def test_verifying_an_empty_log_as_json_still_reports_on_stdout(empty_data_dir: str) -> None:
    result = gangsched("replay", "--verify", "--data-dir", empty_data_dir, "-o", "json")
    assert result.returncode == 3
    assert json.loads(result.stdout) == {"kind": "verification", "verified": 0,
                                         "plan_points": 0, "divergence": None}
    assert result.stderr == f"nothing was verified: {EMPTY}\n"
