"""A supervised child's side of its pipes to the parent (`services.runtime.process_supervision`).

Layer: runtime. The protocol, all on the child's standard streams:

- stdin: the payload, once, as an 8-byte big-endian length then that many bytes; then nothing.
  The parent keeps its end open while it lives, so end of file on stdin means the parent is
  gone: the child then SIGTERMs itself (a clean shutdown), a watchdog that works on any POSIX
  system, beside Linux's parent-death signal (`services.runtime.parent_death`).
- stdout: messages to the parent, one JSON object a line. The child's file descriptor 1 is
  moved aside at `connect` and replaced by its stderr, so a stray `print` cannot corrupt them.
- stderr: the parent's own (one log for all processes).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from typing import Any

from services.runtime import parent_death

log = logging.getLogger(__name__)

LENGTH_BYTES = 8
MAX_PAYLOAD_BYTES = 64 * 1024 * 1024


def frame(payload: bytes) -> bytes:
    """`payload` as the parent writes it on the child's stdin (length first)."""
    return len(payload).to_bytes(LENGTH_BYTES, "big") + payload


class ParentGone(Exception):
    """Stdin ended before the whole payload arrived: no parent, or not a supervised start."""


class ParentChannel:
    """The child's pipes to its parent, once `connect`ed."""

    def __init__(self, messages_fd: int) -> None:
        self._messages_fd = messages_fd
        self._watching: asyncio.AbstractEventLoop | None = None

    @classmethod
    def connect(cls) -> tuple[ParentChannel, bytes]:
        """Ask to die with the parent, read the payload from stdin, and take stdout over for
        messages. Returns the channel and the payload.

        Raises:
            ParentGone: stdin ended early (or announced an absurd length).
        """
        parent_death.die_with_parent(os.getppid())
        length = int.from_bytes(_read_exactly(0, LENGTH_BYTES), "big")
        if length > MAX_PAYLOAD_BYTES:
            raise ParentGone(f"payload of {length} bytes announced; not a supervised start")
        payload = _read_exactly(0, length)
        messages_fd = os.dup(1)
        os.dup2(2, 1)
        return cls(messages_fd), payload

    def send(self, message: dict[str, Any]) -> None:
        """Write one message (a JSON object) to the parent; nothing when it is gone (the
        watchdog then stops this process)."""
        line = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        try:
            os.write(self._messages_fd, line)
        except OSError as error:
            log.debug("parent unreachable: %s", error)

    def watch_parent(self) -> None:
        """From now on, SIGTERM this process when stdin ends (the parent is gone). Call in the
        running event loop; its SIGTERM handler does the shutdown."""
        loop = asyncio.get_running_loop()
        self._watching = loop
        loop.add_reader(0, self._on_stdin)

    def _on_stdin(self) -> None:
        try:
            data = os.read(0, 4096)
        except OSError:
            data = b""
        if data:
            return  # the parent sends nothing after the payload; ignore it if it does
        assert self._watching is not None
        self._watching.remove_reader(0)
        log.warning("the parent process is gone; shutting down")
        os.kill(os.getpid(), signal.SIGTERM)


def _read_exactly(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise ParentGone("stdin ended before the payload; not a supervised start")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
