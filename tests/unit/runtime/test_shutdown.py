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


def test_an_error_nobody_awaits_at_shutdown_is_one_warning_line(
        caplog: pytest.LogCaptureFixture) -> None:
    import logging

    async def orphan() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            raise ConnectionError("nats: connection closed")  # raised while being cancelled

    async def main() -> None:
        asyncio.get_running_loop().create_task(orphan())
        await asyncio.sleep(0)

    with caplog.at_level(logging.WARNING, logger="services.runtime.shutdown"):
        asyncio.run(run_until_signalled(main()))
    lines = [record for record in caplog.records if record.name == "services.runtime.shutdown"]
    assert [record.getMessage() for record in lines] == [
        "unhandled exception during asyncio.run() shutdown: "
        "ConnectionError('nats: connection closed')"]
    assert all(record.exc_info is None for record in lines)
