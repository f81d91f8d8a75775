"""Database URLs and migration discovery (no database)."""

from __future__ import annotations

import pytest

from services.store import engines, schema


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("sqlite:///x.db", "sqlite+aiosqlite"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite"),
        ("postgresql://u@h/db", "postgresql+asyncpg"),
        ("postgresql+psycopg://u@h/db", "postgresql+asyncpg"),
        ("postgresql://u@[::1]:5432/db", "postgresql+asyncpg"),
    ],
)
def test_urls_get_the_async_driver(given: str, driver: str) -> None:
    assert engines.async_url(given).drivername == driver


def test_other_databases_are_refused() -> None:
    with pytest.raises(ValueError, match="unsupported database 'mysql'"):
        engines.async_url("mysql://u@h/db")


def test_migrations_are_found_outside_the_repository_cwd(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(str(tmp_path))
    assert (schema.migrations_dir() / "env.py").is_file()
    assert schema.head_revision() == "0002"
    assert schema.known_revisions() == {"0001", "0002"}
