"""Records, per pod, when the API server's watch first showed it and first showed it bound.

Layer: bench. Runs in its own process (so the pod creator's event loop cannot delay receipt
times) with one clock for every timestamp: `time.time()` at the moment a watch line is decoded,
the same system clock the main process uses. Also keeps the API server's own times (second
resolution): `metadata.creationTimestamp` and the PodScheduled condition's lastTransitionTime.

Output (`path`, JSON): `{"clock": "time.time", "events": n, "watch_reopened": n, "pods": {name:
[seen_s, bound_s, node, creationTimestamp, scheduledTransitionTime]}}` (null if never). The API
server ends the watch of a reader that falls behind; the recorder re-opens it from the last
resourceVersion at once (`watch_reopened` counts that), so no event is lost, only delayed.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import multiprocessing.synchronize
import sys
import time
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized, SynchronizedArray
from pathlib import Path
from typing import Any

from bench.cluster.api import Api, ApiError, Endpoint
from bench.cluster.manifests import NAMESPACE

POLL_SECONDS = 0.05
SEEN, BOUND, NODE, CREATED, SCHEDULED = range(5)


@dataclass
class Shared:
    """Counters and flags shared with the main process: `gang_bound[i]` counts the bound pods
    of the gang whose index `gang_of` gives (a pod named in it)."""

    seen: Synchronized[int]
    bound: Synchronized[int]
    ready: multiprocessing.synchronize.Event
    stop: multiprocessing.synchronize.Event
    gang_bound: SynchronizedArray[int]
    gang_of: dict[str, int]


class Recorder:
    """The recording process: `start()` (returns once the watch is open), `stop()` → records."""

    def __init__(self, endpoint: Endpoint, path: Path,
                 gang_of: dict[str, int] | None = None) -> None:
        """`gang_of`: the gang index of each pod of a gang, by pod name (`gang_bound`)."""
        context = multiprocessing.get_context("spawn")
        gang_of = gang_of or {}
        self.shared = Shared(context.Value("i", 0), context.Value("i", 0), context.Event(),
                             context.Event(),
                             context.Array("i", max(gang_of.values(), default=-1) + 1),
                             gang_of)
        self.path = path
        self._process = context.Process(target=_main, args=(endpoint, path, self.shared),
                                        name="bench-recorder", daemon=True)

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def seen(self) -> int:
        return int(self.shared.seen.value)

    @property
    def bound(self) -> int:
        return int(self.shared.bound.value)

    def gang_bound(self) -> list[int]:
        """Bound pods per gang index (see `__init__`), as the watch has shown them so far."""
        array = self.shared.gang_bound
        with array.get_lock():  # one lock for the copy, not one per gang
            return [int(count) for count in array.get_obj()]

    def start(self, timeout_seconds: float = 30.0) -> None:
        self._process.start()
        if not self.shared.ready.wait(timeout_seconds):
            self._process.kill()
            raise RuntimeError("recorder: watch not open in time")

    def stop(self, timeout_seconds: float = 60.0) -> dict[str, Any]:
        self.shared.stop.set()
        self._process.join(timeout_seconds)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
            raise RuntimeError("recorder did not stop")
        if self._process.exitcode != 0:
            raise RuntimeError(f"recorder exited {self._process.exitcode}")
        data: dict[str, Any] = json.loads(self.path.read_text())
        return data


def _main(endpoint: Endpoint, path: Path, shared: Shared) -> None:
    asyncio.run(_record(endpoint, path, shared))


async def _record(endpoint: Endpoint, path: Path, shared: Shared) -> None:
    pods: dict[str, list[Any]] = {}
    events = [0, 0]  # watch events, watch re-opens
    async with Api(endpoint, pool_size=2) as api:
        collection = f"/api/v1/namespaces/{NAMESPACE}/pods"
        listing = await api.get(collection)
        for item in listing.get("items", []):
            _observe(pods, item, time.time(), shared)
        task = asyncio.create_task(_watch(api, collection, listing["metadata"]["resourceVersion"],
                                          pods, events, shared))
        try:
            while not shared.stop.is_set():
                if task.done():
                    task.result()  # a failed watch fails the recorder (and so the run)
                await asyncio.sleep(POLL_SECONDS)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    path.write_text(json.dumps({"clock": "time.time", "events": events[0],
                                "watch_reopened": events[1], "pods": pods}))


async def _watch(api: Api, collection: str, resource_version: str, pods: dict[str, list[Any]],
                 events: list[int], shared: Shared) -> None:
    """Watch forever, reconnecting from the last resourceVersion when the stream ends."""
    while True:
        async for event in api.watch(collection, resource_version, shared.ready.set):
            kind, obj = event.get("type"), event.get("object", {})
            if kind == "ERROR":
                raise ApiError(int(obj.get("code", 0)), "watch", json.dumps(obj).encode())
            resource_version = obj.get("metadata", {}).get("resourceVersion", resource_version)
            if kind in ("ADDED", "MODIFIED"):
                events[0] += 1
                _observe(pods, obj, time.time(), shared)
        events[1] += 1
        print(f"recorder: watch ended at {resource_version}; re-opening", file=sys.stderr,
              flush=True)


def _observe(pods: dict[str, list[Any]], obj: dict[str, Any], now_s: float,
             shared: Shared) -> None:
    meta, spec = obj.get("metadata", {}), obj.get("spec", {})
    record = pods.get(meta.get("name", ""))
    if record is None:
        record = pods[meta["name"]] = [now_s, None, None, meta.get("creationTimestamp"), None]
        shared.seen.value += 1
    if record[BOUND] is None and spec.get("nodeName"):
        record[BOUND], record[NODE] = now_s, spec["nodeName"]
        gang = shared.gang_of.get(meta["name"])
        if gang is not None:  # before the total: a read between the two sees room, not none
            shared.gang_bound[gang] += 1
        shared.bound.value += 1
    if record[SCHEDULED] is None:
        for condition in obj.get("status", {}).get("conditions", []) or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "True":
                record[SCHEDULED] = condition.get("lastTransitionTime")
