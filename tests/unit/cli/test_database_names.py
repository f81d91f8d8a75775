"""How a database is named to a user (`services.cli.databases.shown`): a SQLite file by its
path, any other by its URL without secrets, even one whose port does not parse."""

from __future__ import annotations

from pathlib import Path

from services.cli import databases


def test_a_sqlite_database_is_named_by_its_file(tmp_path: Path) -> None:
    assert databases.shown(f"sqlite+aiosqlite:///{tmp_path}/g.db") == f"{tmp_path}/g.db"


def test_a_url_whose_port_does_not_parse_is_named_without_its_password() -> None:
    # an unescaped '@' in the password: SQLAlchemy reads 'w0rd@h' as the port
    shown = databases.shown("postgresql://u:hunter@Pass:w0rd@h/db")
    assert "hunter" not in shown and "w0rd" not in shown
    assert shown == "postgresql://u@h/db"
