"""An empty path or host is refused in one line (exit 2), never taken for the current directory
or for every interface."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli.main import app


@pytest.mark.parametrize(("argv", "option"), [
    (["run", "--data-dir", ""], "--data-dir"),
    (["migrate", "--data-dir", ""], "--data-dir"),
    (["replay", "--data-dir", ""], "--data-dir"),
    (["explain", "pod", "x", "--data-dir", ""], "--data-dir"),
    (["decisions", "--data-dir", ""], "--data-dir"),
    (["schema", "--out", ""], "--out"),
    (["watcher", "--kubeconfig", ""], "--kubeconfig"),
    (["planner", "--decision-key-file", ""], "--decision-key-file"),
    (["replay", "--decision-key-file", ""], "--decision-key-file"),
    (["decisions", "--nats-password-file", ""], "--nats-password-file"),
    (["decisions", "--nats-creds", ""], "--nats-creds"),
    (["simulate", ""], "FILES"),
    (["watcher", "--http-host", ""], "--http-host"),
    (["run", "--http-host", " "], "--http-host"),
])
def test_an_empty_path_or_host_is_a_usage_line_and_nothing_is_made(
        argv: list[str], option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, argv, env={"GANGSCHED_NATS": ""})
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and option in result.output
    assert "empty" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_blank_host_variable_is_refused_as_its_flag_is(tmp_path: Path) -> None:
    """An empty variable is an unset one (click's rule: the default, 127.0.0.1); blanks are
    a value, refused as `--http-host ' '` is."""
    result = CliRunner().invoke(app, ["watcher"],
                                env={"GANGSCHED_NATS": "", "GANGSCHED_HTTP_HOST": "  "})
    assert result.exit_code == 2
    assert "GANGSCHED_HTTP_HOST" in result.output and "empty host" in result.output
