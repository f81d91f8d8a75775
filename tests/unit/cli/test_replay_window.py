"""`gangsched replay` asked for a timeline from where the log holds nothing (`--from-seq` or
`--since` past its end, `--until` before its start) says so in one line and exits 3, instead
of printing nothing with status 0."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from services.cli import exit_codes
from services.cli.main import app

LAST_SEQ = 21
"""The last sequence of the recorded scenario's log."""
LATEST = "2023-11-14T22:13:26.100Z"
"""The time of its latest event."""



def replay(log: str, *argv: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["replay", "--db", log, *argv], env={"GANGSCHED_NATS": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("argv", "told"), [
    (("--from-seq", str(LAST_SEQ + 1)),
     f"nothing to show from --from-seq {LAST_SEQ + 1}: the log ends at sequence {LAST_SEQ}"),
    (("--from-seq", "999", "--pod", "default/train-0"),
     f"nothing to show from --from-seq 999: the log ends at sequence {LAST_SEQ}"),
    (("--since", "2099-01-01T00:00:00Z"),
     "nothing to show from --since 2099-01-01T00:00:00.000Z: the log ends at sequence "
     f"{LAST_SEQ}, its latest event at {LATEST}"),
    (("--from-seq", "19", "--until", "2023-11-14T22:13:21.500Z"),
     "nothing to show from --from-seq 19: the replay stops at sequence 18 "
     "(--until 2023-11-14T22:13:21.500Z)"),
    (("--until", "2000-01-01T00:00:00Z"),
     "nothing to show: --until 2000-01-01T00:00:00.000Z stops the replay before the first "
     "round"),
])
def test_a_window_past_the_end_of_the_log_is_one_line_and_status_3(
        log: str, argv: tuple[str, ...], told: str) -> None:
    assert replay(log, *argv) == (exit_codes.NEGATIVE, "", told + "\n")


def test_the_last_sequence_and_time_of_the_log_still_show_their_entries(log: str) -> None:
    for argv in (("--from-seq", str(LAST_SEQ)), ("--since", LATEST)):
        code, shown, told = replay(log, *argv)
        assert (code, told) == (exit_codes.OK, "")
        assert shown.splitlines()[-1].startswith(f"{LAST_SEQ}      {LATEST} ")


def test_with_verify_the_verification_decides_the_status(log: str) -> None:
    code, shown, told = replay(log, "--verify", "--timeline", "--from-seq", "999")
    assert (code, shown, told) == (
        exit_codes.OK, "verified 13 decisions at 6 plan points\n",
        f"nothing to show from --from-seq 999: the log ends at sequence {LAST_SEQ}\n")


def test_from_seq_after_an_until_sequence_is_a_usage_error(log: str) -> None:
    code, _, told = replay(log, "--from-seq", "15", "--until", "10")
    assert (code, told) == (
        exit_codes.USAGE, "gangsched replay: --from-seq 15 is after --until 10: the timeline "
                          "would show nothing (see gangsched replay --help)\n")
