"""Each service's --help, the README and the behaviour agree: a service accepts the options of
the others (one set of flags or GANGSCHED_* variables starts any service, as the README's
`gangsched watcher|planner|binder --nats ... --db ... --decision-key-file ...` does), and its
help names those it accepts without using them."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli.main import app

README = Path(__file__).parents[3] / "README.md"


def help_text(command: str) -> str:
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize(("command", "unused"), [
    ("watcher", ("--db", "--decision-key-file", "--batch-size", "--bind-concurrency")),
    ("planner", ("--kubeconfig", "--tick-seconds", "--bind-concurrency")),
    ("binder", ("--db", "--tick-seconds", "--batch-size")),
])
def test_a_services_help_names_the_options_it_accepts_and_ignores(
        command: str, unused: tuple[str, ...]) -> None:
    told = help_text(command).partition(f"Accepted and unused by the {command}, so that one "
                                        "set of flags or GANGSCHED_* variables starts any "
                                        "service: ")[2]
    assert told, help_text(command)
    named = told.partition(" (see")[0].split(", ")
    assert set(unused) <= set(named)


def test_run_ignores_nothing_and_the_readme_says_the_services_accept_each_others() -> None:
    assert "Accepted and unused" not in help_text("run")
    assert "each accepts and ignores the others' options" in README.read_text()


def test_the_kubeconfig_help_says_kubeconfig_is_read() -> None:
    assert ("Unset: in-cluster credentials, else the files of $KUBECONFIG (colon-separated, as "
            "kubectl reads them), else ~/.kube/config.") in help_text("watcher")
