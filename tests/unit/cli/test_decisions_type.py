"""`gangsched decisions --type T` takes every spelling the docs and its --help give (the type
tags, `Placement`, ...) and the same in any case (`placement`), and filters by the type tag
itself, the `<type>` token of decision subjects; anything else is one usage line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from services.cli import exit_codes, following
from services.cli.main import app
from services.contracts.decisions import DECISION_TYPES

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IN_PAGE = re.compile(r"^gangsched decisions [^\n]*?--type[ =](\w+)|`[^`\n]*?--type[ =](\w+)",
                     re.MULTILINE)
"""A `--type` given a value in a page: in a command line, or in code (`--type Preemption`)."""
IN_HELP = re.compile(r"--type ([A-Z]\w*)|--type \[([\w|]+)\]")
"""A `--type` given a value in the help (`with --type Preemption`), or its list of values."""


def decisions(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["decisions", "--nats", "nats://127.0.0.1:4223", *argv],
                                env={"GANGSCHED_NATS": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def help_text() -> str:
    return CliRunner().invoke(app, ["decisions", "--help"], terminal_width=100).output


def documented() -> list[str]:
    """Every `--type` value the pages show or the command's --help names."""
    found = [IN_PAGE.findall(page.read_text()) for page in PAGES]
    found.append(IN_HELP.findall(help_text()))
    return sorted({value for matches in found for match in matches for group in match
                   for value in group.split("|") if value})


def test_the_help_and_the_docs_name_the_types_as_the_subjects_do() -> None:
    assert set(documented()) == {*DECISION_TYPES, "placement"}  # docs/decisions.md: any case


@pytest.mark.parametrize("given", sorted({spelling for value in documented()
                                          for spelling in (value, value.lower(),
                                                           value.upper())}))
def test_every_documented_spelling_filters_by_its_type(
        given: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str | None] = []

    async def one_decision(*_args: Any, decision_type: str | None = None, **_kwargs: Any) -> int:
        asked.append(decision_type)
        return 1

    monkeypatch.setattr(following, "print_decisions", one_decision)
    assert decisions("--type", given) == (exit_codes.OK, "")
    assert asked == [next(tag for tag in DECISION_TYPES if tag.lower() == given.lower())]


def test_another_type_is_one_usage_line_naming_the_types() -> None:
    code, output = decisions("--type", "Placements")
    assert (code, output) == (exit_codes.USAGE, (
        "gangsched decisions: invalid value for '--type': 'Placements' is not one of "
        "'Placement', 'Rejection', 'StatusUpdate', 'Preemption' "
        "(see gangsched decisions --help)\n"))
