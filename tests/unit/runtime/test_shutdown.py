"""Graceful shutdown on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from services.runtime.shutdown import run_until_signalled


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_shutdown_signal_cancels_the_main_coroutine(sig: signal.Signals) -> None:
    running = asyncio.Event()
    cleaned_up = asyncio.Event()

    async def main() -> None:
        running.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned_up.set()

    async def send_signal() -> None:
        await running.wait()
        os.kill(os.getpid(), sig)

    sender = asyncio.create_task(send_signal())
    await run_until_signalled(main())
    await sender
    assert cleaned_up.is_set()


async def test_main_returning_ends_the_run_and_its_error_propagates() -> None:
    async def fails() -> None:
        raise RuntimeError("main failed")

    with pytest.raises(RuntimeError, match="main failed"):
        await run_until_signalled(fails())
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
