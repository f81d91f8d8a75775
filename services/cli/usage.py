"""A usage error (bad flag, missing argument, bad choice) in one line, never click's usage block.

Layer: cli. Click tells a usage error in four lines (`Usage: ...`, `Try ... for help.`, a blank
line, `Error: ...`); gangsched tells it in one, on standard error, with exit status
`exit_codes.USAGE`:

    gangsched simulate: no such option: --nodez (see gangsched simulate --help)

`main.app` runs every command under `in_one_line`, so every command, its options and the
group's own (`gangsched bogus`) are told so. A bare `gangsched` still prints its help.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import click
from click.exceptions import NoArgsIsHelpError

from services.cli import exit_codes

CLOSE_MATCH = 0.8
"""How alike (difflib's ratio, 0 to 1) a real option must be to a mistyped one to be offered
for it: click offers any above 0.6, which pairs `--kubeconfg` with `--scoring` too."""


def close_matches(given: str, offered: list[str]) -> list[str]:
    """The options of `offered` (click's suggestions) close enough to `given` to be what was
    meant (`CLOSE_MATCH`), in click's order."""
    return [option for option in offered
            if difflib.SequenceMatcher(None, given, option).ratio() >= CLOSE_MATCH]


class UsageLine(click.ClickException):
    """A usage error already put in one line (`one_line`): shown as it is, exit status
    `exit_codes.USAGE`."""

    exit_code = exit_codes.USAGE

    def show(self, file: IO[Any] | None = None) -> None:
        """Write the one line to `file` (standard error when None)."""
        click.echo(self.message, file=file, err=file is None)


def one_line(error: click.UsageError) -> str:
    """`error` as `<command path>: <what> (see <command path> --help)`: click's message with
    its first letter in lower case (unless it starts an acronym, `NATS`) and its closing full
    stop dropped; an unknown option as `no such option: --x`, with click's suggestions that are
    close matches (`close_matches`)."""
    command = error.ctx.command_path if error.ctx is not None else "gangsched"
    if isinstance(error, click.NoSuchOption):
        what = f"no such option: {error.option_name}"
        meant = close_matches(error.option_name, list(error.possibilities or ()))
        if meant:
            what += f" (did you mean {' or '.join(meant)}?)"
    else:
        what = " ".join(error.format_message().split()).removesuffix(".")
        if what[:2] != what[:2].upper():
            what = what[0].lower() + what[1:]
    return f"{command}: {what} (see {command} --help)"


@contextmanager
def in_one_line() -> Iterator[None]:
    """Run the body, a usage error of it raised as `UsageLine` (a bare command's help, click's
    `NoArgsIsHelpError`, is left as it is).

    Raises:
        UsageLine: the body raised a `click.UsageError`.
    """
    try:
        yield
    except NoArgsIsHelpError:
        raise
    except click.UsageError as error:
        raise UsageLine(one_line(error)) from None
