"""`--nats-creds` reaches nats-py's JWT + NKey support (its `nkeys` extra is installed): a
credentials file is handed to a real nats-server connection instead of failing on a missing
module with a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.bus.embedded import EmbeddedNats
from services.cli.main import app

pytestmark = pytest.mark.integration

CREDS = """-----BEGIN NATS USER JWT-----
eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln
------END NATS USER JWT------

-----BEGIN USER NKEY SEED-----
SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY
------END USER NKEY SEED------
"""


def test_a_credentials_file_is_used_for_the_connection_not_a_traceback(
        nats_server: EmbeddedNats, tmp_path: Path) -> None:
    creds = tmp_path / "user.creds"
    creds.write_text(CREDS)
    result = CliRunner().invoke(app, ["decisions", "--nats", nats_server.url,
                                      "--nats-creds", str(creds)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    # connected (a server without auth asks for no signature): what is missing is the stream
    assert result.exit_code == 1
    assert "stream not found" in result.output
