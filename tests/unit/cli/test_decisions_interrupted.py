"""Ctrl-C stops `decisions --follow` (exit 0), but a listing it cuts short must not read as a
whole one: `Aborted!` and exit 1, as every other one-shot command."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from services.cli import exit_codes, following
from services.cli.main import app


@pytest.fixture
def interrupted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the DECISIONS stream is interrupted by Ctrl-C."""
    async def print_decisions(*_args: Any, **_kwargs: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(following, "print_decisions", print_decisions)


@pytest.mark.usefixtures("interrupted")
def test_an_interrupted_listing_is_no_success() -> None:
    result = CliRunner().invoke(app, ["decisions", "--nats", "nats://127.0.0.1:1"])
    assert result.exit_code == exit_codes.FAILED
    assert "Aborted!" in result.output


@pytest.mark.usefixtures("interrupted")
def test_ctrl_c_stops_following_cleanly() -> None:
    result = CliRunner().invoke(app, ["decisions", "--follow", "--nats", "nats://127.0.0.1:1"])
    assert result.exit_code == exit_codes.OK
    assert "Aborted!" not in result.output
