"""A real child for the process supervision tests: `python -m tests.support.supervised_child`.

Its payload names what it does: `serve` reports ready (with its pid) and runs until SIGTERM or
its parent's end, then exits 0; `fail` exits 3 before it is ready; `stubborn` reports ready and
ignores SIGTERM (only SIGKILL ends it); `fatal` reports ready, then sends a fatal line (what
`services.cli.child` sends for an error no restart mends) and exits 1.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from services.runtime.child_channel import ParentChannel
from services.runtime.shutdown import run_until_signalled

FAIL_CODE = 3
FATAL_LINE = ("NATS: stream GANGSCHED_EVENTS is gone, but the planner database has applied up "
              "to seq 6")


async def _serve(channel: ParentChannel) -> None:
    channel.watch_parent()
    channel.send({"ready": True, "pid": os.getpid()})
    await asyncio.Event().wait()


def main() -> None:
    channel, payload = ParentChannel.connect()
    mode = payload.decode()
    if mode == "fail":
        sys.exit(FAIL_CODE)
    if mode == "fatal":
        channel.send({"ready": True, "pid": os.getpid()})
        channel.send({"fatal": FATAL_LINE})
        sys.exit(1)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        channel.send({"ready": True, "pid": os.getpid()})
        signal.pause()
    asyncio.run(run_until_signalled(_serve(channel)))


if __name__ == "__main__":
    main()
