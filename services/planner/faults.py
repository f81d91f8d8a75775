"""Fault-injection switches for the kill-and-restart tests. Never set them in production.

Layer: planner shell. `GANGSCHED_TEST_CRASH_AFTER_COMMIT=1` makes the planner SIGKILL itself
right after committing a batch that produced decisions and before publishing them, which is
the window the outbox exists for. Unset (the default), nothing here has any effect.
"""

from __future__ import annotations

import logging
import os
import signal

log = logging.getLogger(__name__)

CRASH_AFTER_COMMIT_ENV = "GANGSCHED_TEST_CRASH_AFTER_COMMIT"


def crash_after_commit_if_asked(decision_count: int) -> None:
    """SIGKILL this process if the switch is on and the committed batch decided something."""
    if decision_count and os.environ.get(CRASH_AFTER_COMMIT_ENV) == "1":
        log.critical("%s=1: killing the planner after commit, before publish",
                     CRASH_AFTER_COMMIT_ENV)
        os.kill(os.getpid(), signal.SIGKILL)
