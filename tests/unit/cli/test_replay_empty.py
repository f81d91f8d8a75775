"""`gangsched replay` of a log with no events says so instead of printing nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def gangsched(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli.main", *argv],
                          capture_output=True, text=True, timeout=120, check=False)


def test_replaying_an_empty_database_says_the_log_is_empty(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    assert gangsched("migrate", "--data-dir", data).returncode == 0
    result = gangsched("replay", "--data-dir", data)
    assert result.returncode == 0
    assert "the log is empty: no event recorded in the database" in result.stderr


def test_verifying_an_empty_log_fails_as_nothing_was_verified(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    assert gangsched("migrate", "--data-dir", data).returncode == 0
    result = gangsched("replay", "--verify", "--data-dir", data)
    assert result.returncode == 1
    assert "nothing was verified" in result.stderr
