"""The after-commit kill switch of the fault tests fires only where it is asked to."""

from __future__ import annotations

import os
import signal

import pytest

from services.planner import faults


@pytest.mark.parametrize(("switch", "namespaces", "kills"), [
    (None, ["ns1"], False),
    ("1", [], False),  # a batch that decided nothing
    ("1", ["other"], True),
    ("ns:ns1", ["other", "other"], False),  # an earlier test's objects
    ("ns:ns1", ["other", "ns1"], True),
    ("0", ["ns1"], False),
])
def test_the_switch_kills_only_after_a_deciding_batch_of_its_namespace(
        monkeypatch: pytest.MonkeyPatch, switch: str | None, namespaces: list[str],
        kills: bool) -> None:
    sent: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append(sig))
    if switch is None:
        monkeypatch.delenv(faults.CRASH_AFTER_COMMIT_ENV, raising=False)
    else:
        monkeypatch.setenv(faults.CRASH_AFTER_COMMIT_ENV, switch)
    faults.crash_after_commit_if_asked(namespaces)
    assert sent == ([signal.SIGKILL] if kills else [])
