"""`gangsched run` whose API server cannot be reached says in /readyz why its watcher is not
ready, as it says why its binder is not: the watcher child holds its readiness with the reason
from the start, and the parent shows it."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.integration.test_run_locked_down import stop
from tests.integration.test_run_processes import http_address, launched, started
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

REFUSED = "cannot reach the API server at https://127.0.0.1:1: connection refused"


def readyz(address: str) -> tuple[int, str]:
    """Status and body of the parent's /readyz."""
    try:
        with urllib.request.urlopen(f"{address}/readyz", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_readyz_names_why_the_watcher_never_got_ready(tmp_path: Path) -> None:
    run = launched(tmp_path, "--http-port", "0")
    try:
        started(run)
        address = http_address(run)
        expected = (503, f"not ready: binder ({REFUSED}), watcher ({REFUSED})\n")

        def naming() -> bool:
            answer = readyz(address)
            assert answer == expected, answer
            return True

        eventually(naming, timeout=30, interval=0.2, what="/readyz naming both reasons")
    finally:
        code = stop(run)
    assert code == 0, run.log_tail()
