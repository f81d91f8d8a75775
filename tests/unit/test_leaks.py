"""The leak check's views (`tests.support.leaks`), on real processes and loops."""

from __future__ import annotations

import asyncio
import signal
import subprocess

from tests.support import leaks
from tests.support.waiting import eventually


def _new(before: set[leaks.Process], count: int) -> set[leaks.Process]:
    """Wait until exactly `count` descendants exist that are not in `before`; return them."""

    def new() -> set[leaks.Process]:
        found = leaks.descendants() - before
        assert len(found) == count, found
        return found

    return eventually(new, timeout=10, interval=0.05, what=f"{count} new descendants")


def test_a_child_and_its_child_are_descendants_and_an_orphan_is_still_alive() -> None:
    before = leaks.descendants()
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
    try:
        both = _new(before, 2)
        (parent,) = [process for process in both if process[0] == shell.pid]
        (sleeper,) = both - {parent}
        assert leaks.descendants(skip={parent}) == before
        shell.send_signal(signal.SIGKILL)
        shell.wait()
        # its child is re-parented: no longer a descendant, still running until killed
        assert leaks.descendants() == before
        assert leaks.alive(sleeper)
        reused = (sleeper[0], sleeper[1] + 1)  # the same pid, started at another time
        assert not leaks.alive(reused)
        leaks.kill(reused)
        assert leaks.alive(sleeper)
        leaks.kill(sleeper)
        eventually(lambda: not leaks.alive(sleeper), timeout=10, interval=0.05,
                   what="the orphan killed")
    finally:
        shell.kill()
        shell.wait()


def test_a_zombie_is_neither_a_descendant_nor_alive() -> None:
    before = leaks.descendants()
    child = subprocess.Popen(["sleep", "60"])
    (process,) = _new(before, 1)
    child.kill()
    eventually(lambda: leaks.descendants() == before, timeout=10, interval=0.05,
               what="the killed child a zombie")
    assert not leaks.alive(process)
    child.wait()


def test_loops_created_while_recording_are_kept_until_closed() -> None:
    recorder = leaks.LoopRecorder()
    recorder.install()
    try:
        loop = asyncio.new_event_loop()
        asyncio.run(asyncio.sleep(0))
    finally:
        recorder.uninstall()
    try:
        assert len(recorder.created) == 2 and recorder.created[0] is loop
        assert recorder.open_loops() == [loop]
    finally:
        loop.close()
    assert recorder.open_loops() == []
    untracked = asyncio.new_event_loop()
    untracked.close()
    assert len(recorder.created) == 2
    recorder.forget()
    assert recorder.created == []
