"""Stop a helper task and wait for it, without swallowing a cancellation of the caller.

Layer: runtime. The usual `task.cancel(); with suppress(CancelledError): await task` also
swallows the CancelledError meant for the *caller* when the caller is cancelled while it
waits: the caller then runs on as if nothing happened (the loop it belongs to did not end
until a supervisor cancelled it a second time). `cancel_and_wait` swallows only the helper's
own cancellation.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait until it has ended; its own CancelledError is swallowed.

    Raises:
        asyncio.CancelledError: the calling task itself was cancelled while it waited (its
            `cancelling()` count grew: a cancellation handled before is not raised again), as
            `asyncio.timeout` and TaskGroup expect.
        Exception: whatever `task` ended with other than its cancellation (as awaiting it).
    """
    current = asyncio.current_task()
    before = current.cancelling() if current is not None else 0
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        if current is not None and current.cancelling() > before:
            raise
