"""A service given a SQLite --db that was never migrated (no file yet, or an empty one) refuses
in one line naming `gangsched migrate`, and leaves nothing behind: the file used to be opened
first, which made it a 4096-byte SQLite database that the schema check then refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import exit_codes, serve
from services.cli.main import app
from services.config.settings import Settings, StoreSettings
from services.store import schema
from services.store.errors import SchemaMismatch


def planner(tmp_path: Path, database: Path) -> tuple[int, str]:
    key = tmp_path / "key"
    key.write_text("0123456789abcdef" * 4 + "\n")
    key.chmod(0o600)
    result = CliRunner().invoke(app, [
        "planner", "--nats", "nats://127.0.0.1:1", "--db", str(database),
        "--decision-key-file", str(key), "--http-port", "-1", "--log-level", "CRITICAL",
        "--data-dir", str(tmp_path / "data")], env={"GANGSCHED_NATS": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize(("content", "state"), [(None, "does not exist"),
                                                (b"", "is an empty file")])
def test_a_database_never_migrated_is_refused_and_nothing_is_made(
        tmp_path: Path, content: bytes | None, state: str) -> None:
    database = tmp_path / "fresh.db"
    if content is not None:
        database.write_bytes(content)
    url = f"sqlite+aiosqlite:///{database}"
    assert planner(tmp_path, database) == (
        exit_codes.FAILED,
        f"Error: database {url} {state} (schema revision none, behind this gangsched's "
        f"{schema.head_revision()}): run `gangsched migrate --db {url}` first\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == (
        ["key"] if content is None else ["fresh.db", "key"])
    if content is not None:
        assert database.read_bytes() == content


async def test_the_migrate_it_names_makes_a_database_the_check_then_opens(
        tmp_path: Path) -> None:
    database = tmp_path / "fresh.db"
    settings = Settings(store=StoreSettings(url=f"sqlite+aiosqlite:///{database}"))
    with pytest.raises(SchemaMismatch, match="does not exist"):
        async with serve.checked_store(settings):
            pass
    assert not database.exists()
    await schema.migrate(settings.store_url())
    async with serve.checked_store(settings):
        pass


@pytest.mark.parametrize(("target", "state"), [(None, "does not exist"),
                                               (b"", "is an empty file")])
def test_a_link_to_a_database_never_migrated_is_refused_and_its_target_left_alone(
        tmp_path: Path, target: bytes | None, state: str) -> None:
    linked = tmp_path / "target.db"
    if target is not None:
        linked.write_bytes(target)
    database = tmp_path / "link.db"
    database.symlink_to(linked)
    code, output = planner(tmp_path, database)
    assert code == exit_codes.FAILED and f"{state} (schema revision none" in output
    assert linked.exists() is (target is not None)
    if target is not None:
        assert linked.read_bytes() == target
