"""Database URLs (shown without their secrets) and migration discovery (no database server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.store import engines, schema, urls
from services.store.errors import SchemaMismatch


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


@pytest.mark.parametrize(("query", "why"), [
    ("host=a..b", "'a..b' is not a host name or IP address"),
    (f"host={'a' * 64}.com", f"'{'a' * 64}.com' is not a host name or IP address"),
    ("host=h1:5432&host=a..b:5433", "'a..b' is not a host name or IP address"),
    ("host=h1,a..b&port=5432,5433", "'a..b' is not a host name or IP address"),
    ("host=[::1:5432", "malformed host '[::1:5432'"),
])
def test_a_query_host_that_cannot_be_a_host_is_refused_as_the_netloc_one(
        query: str, why: str) -> None:
    """Such a host used to reach the resolver, whose UnicodeError was a traceback."""
    with pytest.raises(ValueError) as raised:
        engines.async_url(f"postgresql+asyncpg://u:pw@/db?{query}")
    assert str(raised.value) == why


@pytest.mark.parametrize("query", [
    "host=h", "host=h:5432", "host=db.example.com.", "host=/run/postgresql",
    "host=/tmp/a..b", "host=[::1]:5432", "host=[::1]", "host=::1", "host=10.0.0.1:5432",
    "host=h1:5432&host=h2:5433", "host=h1,h2&port=5432,5433", "host=/run/pg,h2",
])
def test_a_query_host_that_can_be_one_is_taken(query: str) -> None:
    assert engines.async_url(f"postgresql://u@/db?{query}").drivername == "postgresql+asyncpg"


def test_migrations_are_found_outside_the_repository_cwd(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(str(tmp_path))
    assert (schema.migrations_dir() / "env.py").is_file()
    assert schema.head_revision() == "0004"
    assert schema.known_revisions() == {"0001", "0002", "0003", "0004"}


@pytest.mark.parametrize(("given", "shown"), [
    ("postgresql+asyncpg://u:pw@h:5432/db", "postgresql+asyncpg://u@h:5432/db"),
    ("postgresql://u@h/db?password=pw&ssl=require", "postgresql://u@h/db?ssl=require"),
    ("postgresql://u:pw@h/db?sslpassword=pw&Api-Key=pw&authToken=pw&client_secret=pw&pass=pw"
     "&passfile=/home/u/.pgpass&ssl=require",
     "postgresql://u@h/db?passfile=%2Fhome%2Fu%2F.pgpass&ssl=require"),
    ("postgres://u:p@pw@h/db?password=pw", "postgres://u@h/db"),  # `@` in the password
    ("postgresql://u:pw@h:abc/db?password=pw&ssl=require",  # a port that does not parse
     "postgresql://u@h:abc/db?ssl=require"),
    ("postgresql://u:p/w:w@[h/db?x=1&PASSWORD=pw", "postgresql://u@[h/db?x=1"),
    ("sqlite+aiosqlite:////var/lib/gangsched/state.db",
     "sqlite+aiosqlite:////var/lib/gangsched/state.db"),
    ("/var/lib/gangsched/state.db", "/var/lib/gangsched/state.db"),
])
def test_a_database_url_is_shown_without_any_secret(given: str, shown: str) -> None:
    assert urls.shown(given) == shown
    assert "pw" not in shown
    assert urls.hides_secrets(given) == (given != shown)


async def test_a_schema_mismatch_names_a_url_without_its_secrets_and_asks_for_it(
        tmp_path: Path) -> None:
    engine = engines.create_engine(f"sqlite+aiosqlite:///{tmp_path}/empty.db")
    try:
        with pytest.raises(SchemaMismatch) as raised:
            await schema.check_schema(engine, "postgresql+asyncpg://u:pw@h/db?password=pw")
    finally:
        await engine.dispose()
    assert str(raised.value) == (
        "database postgresql+asyncpg://u@h/db is at schema revision none, behind this "
        "gangsched's 0004: run `gangsched migrate --db <url>` first")


def test_a_query_parameter_asyncpg_does_not_take_is_refused_by_name_only() -> None:
    with pytest.raises(ValueError, match=r"^query parameter 'sslmode' is not one asyncpg takes "
                                         r"\(asyncpg's is ssl, e.g. ssl=require\)$"):
        engines.async_url("postgresql://u@h/db?sslmode=require")
    assert engines.async_url("postgresql://u@h/db?ssl=require&password=pw").query == {
        "ssl": "require", "password": "pw"}
    with pytest.raises(ValueError, match=r"^malformed host '\[h'$"):  # not the password's end
        engines.async_url("postgresql://u:p@w@[h/db")
