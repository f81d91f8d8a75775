"""Fault-injection switches for the kill-and-restart tests. Never set them in production.

Layer: planner shell. `GANGSCHED_TEST_CRASH_AFTER_COMMIT=1` makes the planner SIGKILL itself
right after committing a batch that produced decisions and before publishing them, which is
the window the outbox exists for; `=ns:<namespace>` only after a batch that decided something
about a PodGroup of that namespace (a test on a shared cluster then ignores decisions about an
earlier test's objects). Unset (the default), nothing here has any effect.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Collection

log = logging.getLogger(__name__)

CRASH_AFTER_COMMIT_ENV = "GANGSCHED_TEST_CRASH_AFTER_COMMIT"


def crash_after_commit_if_asked(namespaces: Collection[str]) -> None:
    """SIGKILL this process if the switch is on and the committed batch decided something
    (about a PodGroup of the switch's namespace, if it names one). `namespaces`: those of the
    batch's decisions, one per decision."""
    switch = os.environ.get(CRASH_AFTER_COMMIT_ENV)
    if switch is None or not namespaces:
        return
    if switch == "1" or (switch.startswith("ns:") and switch[3:] in namespaces):
        log.critical("%s=1: killing the planner after commit, before publish",
                     CRASH_AFTER_COMMIT_ENV)
        os.kill(os.getpid(), signal.SIGKILL)
