"""docs/simulate.md's sample output is the command's real output: each ```console block that
runs `gangsched simulate` is run (from the repository root, on the inputs it names, all shipped
in the repository) and must print exactly what the page shows.

Nothing in it depends on the time or the place: the simulated clock starts at the earliest
creationTimestamp (else 0), pod name suffixes are a hash of the workload, paths are not printed, and
a pipe is `audit_view.PIPE_WIDTH` columns wide whatever the terminal. Trailing blanks are not
compared (rich pads centred titles; editors strip them).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli.main import app

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "simulate.md"
BLOCK = re.compile(r"^```console\n\$ (gangsched simulate [^\n]*)\n(.*?)^```$",
                   re.MULTILINE | re.DOTALL)


def samples() -> list[tuple[str, str]]:
    """Each `gangsched simulate` command the page shows and the output it shows for it."""
    return BLOCK.findall(PAGE.read_text())


def test_the_page_shows_a_sample() -> None:
    assert [command for command, _ in samples()] == [
        "gangsched simulate tests/golden/simulate/preemption.yaml"]


@pytest.mark.parametrize(("command", "shown"), samples())
def test_the_sample_output_is_what_the_command_prints(
        command: str, shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, shlex.split(command)[1:], env={
        "FORCE_COLOR": None, "TTY_COMPATIBLE": None, "TTY_INTERACTIVE": None, "COLUMNS": None})
    printed = [line.rstrip() for line in result.stdout.splitlines()]
    assert (result.exit_code, printed) == (0, shown.splitlines()), (
        f"docs/simulate.md has drifted: regenerate its sample with `{command} | cat`")
