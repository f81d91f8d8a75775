"""A duration too short or too long for what it times is refused as parsed, in one line.

Each was taken before and went wrong only at run time: `--tick-seconds 1e-300` made the watcher
publish a ClockTicked event every millisecond (its floor), each one stored and planned, and
`--leader-retry-seconds 1e-300` asked NATS for the lease in a tight loop; a value below the
millisecond durations are kept in became 0, which flips its meaning (`--max-event-lead-seconds
0.0004`: no bound; `--stream-max-age-seconds 1e-10`: 0 ns sent to NATS, unlimited retention;
`--nomination-seconds 1e-300`: a hold that lapses at once, so a preemptor evicts again at each
attempt); `--batch-linger-seconds 1e9` held every partial batch unplanned for 31 years, and
`--tick-seconds 1e9` every timeout and backoff.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from services.cli.main import app

RANGE = "is not in the range"


def invoke(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, argv, env={"GANGSCHED_NATS": "", **(env or {})})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def _usage(command: str, flag: str, reason: str) -> str:
    variable = "GANGSCHED_" + flag.lstrip("-").replace("-", "_").upper()
    return (f"gangsched {command}: invalid value for '{flag}' (env var: '{variable}'): "
            f"{reason} (see gangsched {command} --help)\n")


@pytest.mark.parametrize(("command", "flag", "value", "reason"), [
    ("watcher", "--tick-seconds", "1e-300", f"1e-300 {RANGE} 0.1<=x<=60.0"),
    ("run", "--tick-seconds", "0.01", f"0.01 {RANGE} 0.1<=x<=60.0"),
    ("run", "--tick-seconds", "1e9", f"1000000000.0 {RANGE} 0.1<=x<=60.0"),
    ("planner", "--leader-retry-seconds", "1e-320", f"1e-320 {RANGE} 0.1<=x<=1000000000.0"),
    ("planner", "--leader-lease-seconds", "0.05", f"0.05 {RANGE} 0.1<=x<=1000000000.0"),
    ("run", "--nomination-seconds", "1e-300", f"1e-300 {RANGE} 1.0<=x<=1000000000.0"),
    ("planner", "--batch-linger-seconds", "1e9", f"1000000000.0 {RANGE} 0<=x<=10.0"),
    ("planner", "--max-event-lead-seconds", "0.0004",
     "0.0004 is more than 0 but less than 0.001 s (durations are whole milliseconds): give 0 "
     "(no bound) or at least 0.001"),
    ("planner", "--batch-linger-seconds", "1e-300",
     "1e-300 is more than 0 but less than 0.001 s (shorter is no wait worth timing): give 0 "
     "(plan at once) or at least 0.001"),
    ("run", "--backoff-initial-seconds", "5e-324",
     "4.94066e-324 is more than 0 but less than 0.001 s (durations are whole milliseconds): "
     "give 0 (no backoff) or at least 0.001"),
    ("run", "--stream-max-age-seconds", "1e-10",
     "1e-10 is more than 0 but less than 0.1 s (NATS keeps a stream's messages at least "
     "100 ms): give 0 (unlimited) or at least 0.1"),
])
def test_a_degenerate_duration_is_one_usage_line(command: str, flag: str, value: str,
                                                 reason: str) -> None:
    assert invoke([command, flag, value]) == (2, _usage(command, flag, reason))


def test_the_same_value_in_its_variable_is_refused_alike() -> None:
    code, output = invoke(["watcher"], env={"GANGSCHED_TICK_SECONDS": "1e-300"})
    assert (code, output) == (2, _usage("watcher", "--tick-seconds",
                                        f"1e-300 {RANGE} 0.1<=x<=60.0"))


def test_the_audit_commands_take_the_planners_event_lead() -> None:
    code, output = invoke(["replay", "--max-event-lead-seconds", "1e-9"])
    assert code == 2 and output.count("\n") == 1
    assert "1e-09 is more than 0 but less than 0.001 s" in output


@pytest.mark.parametrize(("flag", "value"), [
    ("--tick-seconds", "0.1"), ("--tick-seconds", "60"), ("--leader-retry-seconds", "0.1"),
    ("--nomination-seconds", "1"), ("--batch-linger-seconds", "10"),
    ("--batch-linger-seconds", "0"), ("--max-event-lead-seconds", "0.001"),
    ("--stream-max-age-seconds", "0"), ("--stream-max-age-seconds", "0.1"),
    ("--backoff-initial-seconds", "0"),
])
def test_the_edges_of_each_range_are_taken(flag: str, value: str) -> None:
    command = app.commands["run"]
    param = next(p for p in command.params if flag in getattr(p, "opts", ()))
    assert param.type.convert(value, param, None) == float(value)
