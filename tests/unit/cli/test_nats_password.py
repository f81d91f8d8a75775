"""The NATS password: a file or the variable, never only the command line (ps shows it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner

from services.cli import options


@click.command()
@options.nats_auth_options
def show(**parsed: Any) -> None:
    click.echo(f"password={options.settings_from(parsed).bus.password}")


def invoke(*argv: str, **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(show, list(argv), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_a_password_on_the_command_line_works_but_warns_that_ps_shows_it() -> None:
    code, out, err = invoke("--nats-password", "pw")
    assert (code, out) == (0, "password=pw\n")
    assert "warning: --nats-password on the command line is deprecated" in err


def test_the_password_variable_gives_no_warning() -> None:
    assert invoke(GANGSCHED_NATS_PASSWORD="pw") == (0, "password=pw\n", "")


def test_a_password_file_is_read_without_its_trailing_newline(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("pw\n")
    assert invoke("--nats-password-file", str(secret)) == (0, "password=pw\n", "")
    assert invoke(GANGSCHED_NATS_PASSWORD_FILE=str(secret)) == (0, "password=pw\n", "")


def test_a_missing_or_empty_password_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, _, err = invoke("--nats-password-file", str(tmp_path / "absent"))
    assert code == 2 and "cannot read" in err and "Traceback" not in err
    (tmp_path / "empty").write_text("")
    code, _, err = invoke("--nats-password-file", str(tmp_path / "empty"))
    assert code == 2 and "is empty" in err


def test_a_password_and_a_password_file_together_are_refused(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("pw")
    code, _, err = invoke("--nats-password-file", str(secret), GANGSCHED_NATS_PASSWORD="x")
    assert code == 2 and "not both" in err
