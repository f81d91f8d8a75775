"""A filter of the audit commands that names nothing (`--pod ''`, `--podgroup ' '`,
`--prefix ''`, `--scheduler-name ''`) is a usage error in one line naming the option, exit 2,
like any other bad value: never taken for no filter at all (a whole timeline, every decision), for
the default, or for a name of blanks."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli.main import app

NAME = "expected <namespace>/<name>, got {value!r}"
EMPTY = "expected <namespace>/<name>, got an empty value"
BLANKS = "expected <namespace>/<name>, got only whitespace"
PREFIX = ("{value!r} is not a prefix: dot-separated tokens of letters, digits, _ and - (e.g. "
          "gangsched or prod.gangsched)")
SCHEDULER = "an empty scheduler name is the default scheduler's, not gangsched's"
VARIABLES = {"--prefix": "GANGSCHED_PREFIX", "--scheduler-name": "GANGSCHED_SCHEDULER_NAME"}
"""The variable each option of the tests also is."""


def invoke(tmp_path: Path, *argv: str) -> tuple[int, str]:
    """`gangsched *argv` on an empty data directory (but `simulate`, which has none): its exit
    status and output."""
    data_dir = [] if argv[0] == "simulate" else ["--data-dir", str(tmp_path / "data")]
    result = CliRunner().invoke(app, [*argv, *data_dir])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert not (tmp_path / "data").exists()  # refused before anything was looked at
    return result.exit_code, result.output


BLANK = [
    ("replay", "--pod", "", EMPTY),
    ("replay", "--pod", "  ", BLANKS),
    ("replay", "--pod", "\t", BLANKS),
    ("replay", "--pod", "default/ ", NAME),
    ("replay", "--pod", " /x", NAME),
    ("replay", "--pod", "a/b/c", NAME),
    ("replay", "--podgroup", "", EMPTY),
    ("replay", "--podgroup", " ", BLANKS),
    ("replay", "--podgroup", "ns/", NAME),
    ("decisions", "--podgroup", "", EMPTY),
    ("decisions", "--podgroup", "  ", BLANKS),
    ("decisions", "--podgroup", "/x", NAME),
    ("replay", "--prefix", "", PREFIX),
    ("decisions", "--prefix", "", PREFIX),
    ("replay", "--scheduler-name", "", SCHEDULER),
    ("replay", "--scheduler-name", " ", SCHEDULER),
]
"""(command, option, value, message): each filter of the audit commands given what names
nothing, or not one object."""


@pytest.mark.parametrize(("command", "option", "value", "why"), BLANK,
                         ids=[f"{command}{option}={value!r}" for command, option, value, _ in
                              BLANK])
def test_a_filter_that_names_nothing_is_a_usage_error_naming_the_option(
        tmp_path: Path, command: str, option: str, value: str, why: str) -> None:
    variable = f" (env var: '{VARIABLES[option]}')" if option in VARIABLES else ""
    assert invoke(tmp_path, command, option, value) == (2, (
        f"gangsched {command}: invalid value for '{option}'{variable}: "
        f"{why.format(value=value)} (see gangsched {command} --help)\n"))


def test_explain_or_simulate_for_an_empty_scheduler_name_is_a_usage_error(tmp_path: Path) -> None:
    for command, argv in (("explain", ["pod", "x"]), ("simulate", [str(tmp_path)])):
        assert invoke(tmp_path, command, *argv, "--scheduler-name", "") == (2, (
            f"gangsched {command}: invalid value for '--scheduler-name' (env var: "
            f"'GANGSCHED_SCHEDULER_NAME'): {SCHEDULER} (see gangsched {command} --help)\n"))


@pytest.mark.parametrize(("argv", "why"), [
    ([" "], BLANKS), (["pod", ""], EMPTY), (["pod", "\t "], BLANKS),
    (["podgroup", "default/ "], NAME), (["pg", " /x"], NAME)])
def test_explain_of_a_name_that_names_nothing_is_a_usage_error(
        tmp_path: Path, argv: list[str], why: str) -> None:
    assert invoke(tmp_path, "explain", *argv) == (2, (
        f"gangsched explain: invalid value: {why.format(value=argv[-1])} "
        "(see gangsched explain --help)\n"))


@pytest.mark.parametrize(("text", "parsed"), [
    ("x", ("default", "x")), ("team/x", ("team", "x")), ("team/x-1.b", ("team", "x-1.b"))])
def test_a_namespaced_name_or_a_bare_one_is_taken(text: str, parsed: tuple[str, str]) -> None:
    from services.cli.audit import NAMESPACED_NAME

    assert NAMESPACED_NAME.convert(text, None, None) == parsed
