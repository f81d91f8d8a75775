"""A stream's backup and restore through NATS's own JetStream API (`$JS.API.STREAM.SNAPSHOT`
and `$JS.API.STREAM.RESTORE`, what `nats stream backup` and `nats stream restore` use): the
stream restored holds the same messages at the same sequences, under a new creation time."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from nats.aio.client import Client
from nats.aio.msg import Msg

SNAPSHOT_CHUNK_BYTES = 65536
RESTORE_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Backup:
    """A stream's snapshot: its configuration and state as the server described them (JSON
    objects) and the snapshot's bytes, in chunks."""

    config: dict[str, object]
    state: dict[str, object]
    chunks: list[bytes]


async def backup(nc: Client, stream: str, *, consumers: bool = True) -> Backup:
    """`nats stream backup`: the snapshot of `stream`, with its consumers unless told not to.

    Raises:
        AssertionError: the server refused the snapshot. TimeoutError: it did not end in 10 s.
    """
    inbox = nc.new_inbox()
    chunks: list[bytes] = []
    done = asyncio.Event()

    async def on_chunk(msg: Msg) -> None:
        if not msg.data:
            done.set()
            return
        chunks.append(msg.data)
        if msg.reply:
            await nc.publish(msg.reply, b"")

    sub = await nc.subscribe(inbox, cb=on_chunk)
    answer = await nc.request(
        f"$JS.API.STREAM.SNAPSHOT.{stream}",
        json.dumps({"deliver_subject": inbox, "chunk_size": SNAPSHOT_CHUNK_BYTES,
                    "no_consumers": not consumers}).encode(), timeout=5)
    meta = json.loads(answer.data)
    assert "error" not in meta, meta
    await asyncio.wait_for(done.wait(), 10)
    await sub.unsubscribe()
    return Backup(meta["config"], meta["state"], chunks)


async def restore(nc: Client, stream: str, saved: Backup) -> None:
    """`nats stream restore`: `stream` made again from `saved` (it must not exist).

    Raises:
        AssertionError: the server refused the restore.
    """
    answer = json.loads((await nc.request(
        f"$JS.API.STREAM.RESTORE.{stream}",
        json.dumps({"config": saved.config, "state": saved.state}).encode(), timeout=5)).data)
    assert "error" not in answer, answer
    for chunk in saved.chunks:
        await nc.request(answer["deliver_subject"], chunk, timeout=5)
    done = json.loads((await nc.request(answer["deliver_subject"], b"",
                                        timeout=RESTORE_TIMEOUT_SECONDS)).data)
    assert "error" not in done, done
