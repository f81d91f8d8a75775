"""Wrong use of the CLI gets a one-line reason and a non-zero exit, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli.main import app


def invoke(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv), env={"GANGSCHED_NATS": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize("url", ["postgres://x", "mysql://u@h/db"])
def test_a_database_url_gangsched_cannot_use_is_refused_when_parsed(url: str) -> None:
    code, output = invoke("replay", "--db", url)
    assert code == 2
    assert "is not a database URL gangsched can use" in output


def test_a_plain_file_path_is_a_sqlite_database(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    code, output = invoke("migrate", "--db", str(path))
    assert code == 0, output
    assert path.is_file()


@pytest.mark.parametrize("service", ["watcher", "planner", "binder"])
def test_a_service_run_apart_needs_nats(service: str) -> None:
    code, output = invoke(service, "--http-port", "-1")
    assert code == 2
    assert f"`gangsched {service}` needs --nats" in output


@pytest.mark.parametrize("kind", ["pod", "podgroup", "pg"])
def test_explain_of_a_kind_without_a_name_is_a_usage_error(kind: str) -> None:
    code, output = invoke("explain", kind)
    assert code == 2
    assert "needs <namespace>/<name>" in output


def test_decisions_without_nats_or_a_running_gangsched_says_where_to_look(tmp_path: Path) -> None:
    code, output = invoke("decisions", "--data-dir", str(tmp_path))
    assert code == 1
    assert "no running `gangsched run`" in output and "gangsched replay" in output


@pytest.mark.parametrize(("service", "shown", "hidden"), [
    ("watcher", "--tick-seconds", "--scoring"),
    ("planner", "--scoring", "--kubeconfig"),
    ("binder", "--bind-concurrency", "--db"),
])
def test_a_service_help_shows_its_own_options_only(service: str, shown: str, hidden: str) -> None:
    code, output = invoke(service, "--help")
    assert code == 0
    assert shown in output and f"{hidden} " not in output


def test_a_service_still_accepts_another_services_options() -> None:
    code, output = invoke("planner", "--kubeconfig", "/nowhere", "--http-port", "-1")
    assert code == 2
    assert "needs --nats" in output  # not "no such option"
