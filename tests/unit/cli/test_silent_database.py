"""A PostgreSQL address where something listens but no PostgreSQL answers (a wrong port, a
proxy whose backend is down) is told in one line within `CONNECT_TIMEOUT_SECONDS`. It held
`migrate` a minute (asyncpg's own timeout) and then said `TimeoutError: ` and nothing; a URL
setting its own `?timeout=5` failed inside asyncpg with a TypeError traceback (the driver got
the text "5"); a number parameter that is none reached the driver unchecked."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from services.cli.main import app
from services.store import engines

ROOT = Path(__file__).resolve().parents[3]
SILENCE = "TimeoutError: no answer in time (is a PostgreSQL server at that host and port?)"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that takes connections and never says a word."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        for connection in held:
            connection.close()


def _migrate(url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", "migrate", "--db", url, "--data-dir",
         str(tmp_path / "data")], capture_output=True, text=True, timeout=30, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GANGSCHED_NATS": ""}, check=False)


def test_a_silent_server_is_one_line_and_the_urls_timeout_wins(silent_port: int,
                                                               tmp_path: Path) -> None:
    """The default connect timeout (10 s) and the URL's own (`?timeout=1`, given to the driver
    as a number): each ends in one line; the URL's ends about 9 s sooner (compared with each
    other, so a slow interpreter start-up on a loaded machine counts in both)."""
    took = {}
    for url in (f"postgresql://u@127.0.0.1:{silent_port}/db",
                f"postgresql://u@127.0.0.1:{silent_port}/db?timeout=1"):
        started = time.monotonic()
        result = _migrate(url, tmp_path)
        took[url] = time.monotonic() - started
        assert (result.returncode, result.stdout, result.stderr) == (
            1, "", f"Error: cannot migrate the database {url}: {SILENCE}\n")
    default, own = took.values()
    assert default - own > 5, took


def test_the_connect_arguments_hold_numbers_and_a_default_timeout() -> None:
    args = engines.postgresql_connect_args
    assert args(make_url("postgresql+asyncpg://u@h/db"), {}) == {
        "timeout": engines.CONNECT_TIMEOUT_SECONDS}
    assert args(make_url("postgresql+asyncpg://u@h/db?timeout=2.5&statement_cache_size=0"
                         "&prepared_statement_cache_size=5"), {"x": 1}) == {
        "timeout": 2.5, "statement_cache_size": 0, "x": 1}


@pytest.mark.parametrize(("query", "why"), [
    ("timeout=abc",
     "query parameter timeout='abc' is not a number more than 0 and at most 1000000000"),
    ("timeout=0", "query parameter timeout='0' is not a number more than 0 and at most 1000000000"),
    ("command_timeout=inf", "query parameter command_timeout='inf' is not a number more than 0"),
    ("statement_cache_size=-1",
     "query parameter statement_cache_size='-1' is not an integer, 0 or more, and at most "
     "1000000000"),
    ("timeout=1&timeout=2", "query parameter 'timeout' given more than once"),
])
def test_a_number_parameter_that_is_none_is_refused_as_parsed(query: str, why: str) -> None:
    result = CliRunner().invoke(app, ["migrate", "--db", f"postgresql://u@h/db?{query}"],
                                env={"GANGSCHED_NATS": ""})
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert f"is not a database URL gangsched can use ({why}" in result.output
