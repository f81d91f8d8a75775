"""The SQLite database holds the whole event log and every decision: gangsched creates it
(and its -wal and -shm files) 0600, and the data directory 0700 when it makes it, whatever the
umask would give (0644, 0755)."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from services.cli import data_dir_lock
from services.cli.main import app
from services.store import engines


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def migrate(*argv: str) -> None:
    result = CliRunner().invoke(app, ["migrate", "--log-level", "WARNING", *argv])
    assert result.exit_code == 0, result.output


def test_the_default_database_and_the_data_directory_made_for_it_are_private(
        tmp_path: Path) -> None:
    (tmp_path / "existing").mkdir(mode=0o755)
    data_dir = tmp_path / "existing" / "data"
    migrate("--data-dir", str(data_dir))
    assert (mode(data_dir), mode(data_dir / "gangsched.db")) == (0o700, 0o600)
    assert mode(tmp_path / "existing") == 0o755  # what existed is left as it was


def test_a_new_database_given_as_db_is_private_an_existing_one_keeps_its_mode(
        tmp_path: Path) -> None:
    migrate("--db", str(tmp_path / "new.db"))
    assert mode(tmp_path / "new.db") == 0o600
    (tmp_path / "shared.db").touch(mode=0o640)
    migrate("--db", str(tmp_path / "shared.db"))
    assert mode(tmp_path / "shared.db") == 0o640


def test_the_wal_and_shm_files_of_an_open_database_are_private(tmp_path: Path) -> None:
    async def modes_while_open() -> dict[str, int]:
        engine = engines.create_engine(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
        try:
            async with engine.begin() as connection:
                await connection.execute(text("CREATE TABLE t (x INTEGER)"))
                await connection.execute(text("INSERT INTO t VALUES (1)"))
            async with engine.connect() as connection:  # open: -wal and -shm are there
                await connection.execute(text("SELECT x FROM t"))
                return {path.name: mode(path) for path in tmp_path.iterdir()}
        finally:
            await engine.dispose()

    assert asyncio.run(modes_while_open()) == {
        "state.db": 0o600, "state.db-wal": 0o600, "state.db-shm": 0o600}


def test_the_data_directory_a_run_makes_is_private(tmp_path: Path) -> None:
    with data_dir_lock.hold(tmp_path / "run"):
        assert mode(tmp_path / "run") == 0o700
