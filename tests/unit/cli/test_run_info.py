"""run.json and the embedded NATS's credentials file: 0600, no secret in run.json, and the
credentials only for the server run.json names."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from services.cli import run_info


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_run_json_is_private_and_keeps_no_password_of_any_url(tmp_path: Path) -> None:
    run_info.write(tmp_path, {
        "services": ["planner"], "nats": "nats://planner:natspw@nats:4222,nats://tok@n2:4222",
        "prefix": "p", "db": "postgresql+asyncpg://gangsched:dbpw@db:5432/gangsched",
        "http": None})
    path = tmp_path / "run.json"
    assert mode(path) == 0o600
    text = path.read_text()
    assert "natspw" not in text and "dbpw" not in text and "tok" not in text
    info = json.loads(text)
    assert info["nats"] == "nats://nats:4222,nats://n2:4222"
    assert info["db"] == "postgresql+asyncpg://gangsched@db:5432/gangsched"


def test_run_json_keeps_no_password_given_as_a_query_parameter(tmp_path: Path) -> None:
    run_info.write(tmp_path, {
        "nats": None, "db": "postgresql+asyncpg://gangsched@db/gangsched?password=dbpw&ssl=require"})
    text = (tmp_path / "run.json").read_text()
    assert "dbpw" not in text
    assert json.loads(text)["db"] == "postgresql+asyncpg://gangsched@db/gangsched?ssl=require"


def test_run_json_replaces_a_world_readable_one(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "run.json").chmod(0o644)
    run_info.write(tmp_path, {"nats": None, "db": None})
    assert mode(tmp_path / "run.json") == 0o600


def test_the_credentials_file_is_private_and_read_back_for_run_jsons_server(tmp_path: Path):
    run_info.write_credentials(tmp_path, "gangsched", "pw")
    assert mode(tmp_path / run_info.CREDENTIALS_FILE) == 0o600
    assert run_info.nats_credentials(None, tmp_path) == ("gangsched", "pw")


def test_the_embedded_credentials_are_never_sent_to_a_server_given_on_the_command_line(
        tmp_path: Path) -> None:
    run_info.write_credentials(tmp_path, "gangsched", "pw")
    assert run_info.nats_credentials("nats://elsewhere:4222", tmp_path) is None


def test_no_or_a_damaged_credentials_file_gives_no_credentials(tmp_path: Path) -> None:
    assert run_info.nats_credentials(None, tmp_path) is None
    (tmp_path / run_info.CREDENTIALS_FILE).write_text('{"user": "u"}')
    assert run_info.nats_credentials(None, tmp_path) is None


def test_remove_takes_away_run_json_and_the_credentials(tmp_path: Path) -> None:
    run_info.write(tmp_path, {"nats": None, "db": None})
    run_info.write_credentials(tmp_path, "gangsched", "pw")
    run_info.remove(tmp_path)
    assert list(tmp_path.iterdir()) == []
