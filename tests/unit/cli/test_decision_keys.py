"""Where the planner's and binder's decision key comes from, and what a missing one says."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import decision_keys
from services.cli.main import app
from services.config.settings import Settings


def test_run_makes_an_owner_only_key_once_and_keeps_it(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = decision_keys.with_key(settings, ("watcher", "planner", "binder"))
    path = tmp_path / "data" / "decision.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert first.decision_key is not None and first.decision_key_file == path
    again = decision_keys.with_key(settings, ("watcher", "planner", "binder"))
    assert again.decision_key == first.decision_key  # decisions in the stream stay valid


def test_a_given_key_file_is_used_by_a_service_run_apart(tmp_path: Path) -> None:
    key = tmp_path / "k"
    key.write_text("a" * 64 + "\n")
    settings = decision_keys.with_key(Settings(decision_key_file=key), ("binder",))
    assert settings.decision_key is not None and settings.decision_key.secret == b"a" * 64


def test_the_watcher_needs_no_key(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert decision_keys.with_key(settings, ("watcher",)) is settings
    assert not (tmp_path / "decision.key").exists()


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read the decision key file"),
    ("short", "it needs at least 32"),
    (b"\xff" * 40, "cannot read the decision key file"),
])
def test_an_unusable_key_file_is_one_clear_error(
    tmp_path: Path, content: str | bytes | None, message: str
) -> None:
    key = tmp_path / "k"
    if isinstance(content, bytes):
        key.write_bytes(content)
    elif content is not None:
        key.write_text(content)
    with pytest.raises(decision_keys.BadKey, match=message):
        decision_keys.with_key(Settings(decision_key_file=key), ("planner",))


@pytest.mark.parametrize("service", ["planner", "binder"])
def test_a_planner_or_binder_apart_without_a_key_is_a_usage_error(service: str) -> None:
    result = CliRunner().invoke(app, [service, "--nats", "nats://127.0.0.1:1"],
                                env={"GANGSCHED_DECISION_KEY_FILE": ""})
    assert result.exit_code == 2
    assert "--decision-key-file" in result.output
    assert "Traceback" not in result.output


def test_a_world_writable_key_file_is_refused_and_a_world_readable_one_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = tmp_path / "k"
    key.write_text("b" * 64)
    key.chmod(0o666)
    with pytest.raises(decision_keys.BadKey, match="writable by every user"):
        decision_keys.with_key(Settings(decision_key_file=key), ("binder",))
    key.chmod(0o644)
    with caplog.at_level("WARNING"):
        settings = decision_keys.with_key(Settings(decision_key_file=key), ("binder",))
    assert settings.decision_key is not None
    assert "readable by every user" in caplog.text
    key.chmod(0o440)  # a Secret volume read through fsGroup: fine, silently
    caplog.clear()
    decision_keys.with_key(Settings(decision_key_file=key), ("binder",))
    assert caplog.text == ""


def test_an_unusable_key_file_is_a_usage_line_with_status_2(tmp_path: Path) -> None:
    """Bad input (exit 2) is told in the usage form, `gangsched <command>: ...`, as every
    usage error; `Error: ...` is kept for status 1."""
    key = tmp_path / "key"
    key.write_text("short\n")
    key.chmod(0o600)
    result = CliRunner().invoke(app, ["planner", "--nats", "nats://127.0.0.1:1",
                                      "--decision-key-file", str(key)])
    assert result.exit_code == 2
    assert result.output.startswith(f"gangsched planner: {key}: "), result.output
    assert len(result.output.splitlines()) == 1


@pytest.mark.parametrize("command", [["planner", "--nats", "nats://127.0.0.1:1"], ["replay"]])
def test_a_world_readable_key_file_holding_no_key_gets_one_line_without_advice(
        command: list[str], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The permission warning used to come first (on standard error, as logged), two lines
    for one refusal."""
    key = tmp_path / "key"
    key.write_text("short\n")
    key.chmod(0o644)
    with caplog.at_level("WARNING"):
        result = CliRunner().invoke(app, [*command, "--data-dir", str(tmp_path / "data"),
                                          "--decision-key-file", str(key)])
    assert result.exit_code == 2
    assert len(result.output.splitlines()) == 1, result.output
    assert "the decision key has 5 bytes" in result.output and "chmod" not in result.output
    assert caplog.text == ""


def test_a_key_file_that_is_not_text_says_so_plainly(tmp_path: Path) -> None:
    """It used to give the codec's own words: `'utf-8' codec can't decode byte 0xff ...`."""
    key = tmp_path / "key"
    key.write_bytes(b"0123456789abcdef" * 2 + b"\xff\xfe")
    key.chmod(0o600)
    with pytest.raises(decision_keys.BadKey) as raised:
        decision_keys.with_key(Settings(decision_key_file=key), ("binder",))
    assert str(raised.value) == (f"cannot read the decision key file {key}: not UTF-8 text "
                                 "(byte 32); a key is text, e.g. `openssl rand -hex 32`")


@pytest.mark.parametrize(("path", "what"), [
    ("/tmp", "is a directory"), ("/dev/null", "is not a regular file")])
@pytest.mark.parametrize("command", [["planner", "--nats", "nats://127.0.0.1:1"], ["replay"]])
def test_a_key_path_that_is_no_file_is_said_so_before_any_permission_advice(
        path: str, what: str, command: list[str], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*command, "--data-dir", str(tmp_path / "data"),
                                      "--decision-key-file", path])
    assert result.exit_code == 2
    assert f"the decision key file {path} {what}" in result.output
    assert "chmod" not in result.output and len(result.output.splitlines()) == 1


def test_a_refused_key_leaves_no_data_directory_behind(tmp_path: Path) -> None:
    """The key is read before `run` makes its data directory (and any missing parent)."""
    key = tmp_path / "short"
    key.write_text("short\n")
    key.chmod(0o600)
    result = CliRunner().invoke(app, ["run", "--data-dir", str(tmp_path / "new" / "data"),
                                      "--decision-key-file", str(key)])
    assert result.exit_code == 2
    assert "it needs at least 32" in result.output
    assert not (tmp_path / "new").exists()
