"""`gangsched run` as processes: what a child is given, and how a child that cannot start
ends the run (one line, exit 1)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from services.cli.main import run_service
from services.cli.run_processes import _child_settings
from services.config.settings import BusSettings, Settings
from services.runtime.process_supervision import ChildFailed, describe_exit


def test_a_child_gets_the_database_url_spelt_out_and_a_private_metrics_port(tmp_path: Path) -> None:
    parent = Settings(data_dir=tmp_path, http_host="0.0.0.0", http_port=9400,
                      bus=BusSettings(url="nats://127.0.0.1:4222", user="u", password="p"))
    child = _child_settings(parent)
    assert child.store.url == f"sqlite+aiosqlite:///{(tmp_path / 'gangsched.db').resolve()}"
    assert (child.http_host, child.http_port) == ("127.0.0.1", 0)
    assert child.bus == parent.bus
    assert _child_settings(Settings(data_dir=tmp_path, http_port=-1)).http_port == -1


def test_a_child_that_cannot_start_ends_the_run_with_its_reason_in_one_line() -> None:
    reason = ("the planner process exited 5 times in a row before it was ready, last with "
              "code 1 (its log is above)")

    async def supervising() -> None:
        raise ChildFailed(reason)

    with pytest.raises(click.ClickException) as failure:
        run_service(supervising())
    assert failure.value.message == reason
    assert failure.value.exit_code == 1


@pytest.mark.parametrize(("code", "said"), [(0, "with code 0"), (1, "with code 1"),
                                            (-9, "on SIGKILL"), (-15, "on SIGTERM")])
def test_an_exit_is_told_by_code_or_signal(code: int, said: str) -> None:
    assert describe_exit(code) == said
