"""Fixtures of the command line tests."""

from __future__ import annotations

import pytest

from tests.unit.audit.recorded import scenario
from tests.unit.audit.recorded_db import write_database


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite database holding the recorded audit scenario's log (`recorded.scenario`)."""
    path = tmp_path_factory.mktemp("recorded") / "log.db"
    write_database(scenario(), path)
    return str(path)
