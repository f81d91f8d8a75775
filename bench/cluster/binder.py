"""The trivial binder: no filtering, no scoring; pod i goes to node i mod N (round robin).

Layer: bench. Two uses:
- `bind_all` (the bind ceiling): pods created beforehand, then every pods/binding POSTed with
  `concurrency` requests in flight — the API server's bind rate, the physical limit here;
- `python -m bench.cluster.binder` (the `trivial` scheduler): watches pods with its
  schedulerName and binds each one the moment it is seen, so a run with it measures the fastest
  creation-to-bind pipeline this control plane, creator and watch allow.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from bench.cluster import manifests
from bench.cluster.api import Api, Endpoint


async def node_names(api: Api) -> list[str]:
    """KWOK node names, sorted (the round-robin order)."""
    listing = await api.get("/api/v1/nodes", labelSelector="type=kwok")
    return sorted(item["metadata"]["name"] for item in listing["items"])


async def bind_all(endpoint: Endpoint, pod_names: Sequence[str], concurrency: int) -> None:
    """Bind `pod_names[i]` to node `i mod N`, `concurrency` POSTs in flight."""
    async with Api(endpoint, pool_size=concurrency) as api:
        nodes = await node_names(api)
        await api.post_all((manifests.binding(name, nodes[i % len(nodes)])
                            for i, name in enumerate(pod_names)), concurrency)


async def serve(endpoint: Endpoint, scheduler_name: str, concurrency: int,
                slots_per_node: int) -> None:
    """Bind pending pods of `scheduler_name` in the bench namespace, forever, until every node
    holds `slots_per_node` of them (then the rest stay pending: it never over-commits)."""
    async with Api(endpoint, pool_size=concurrency + 2) as api:
        nodes = await node_names(api)
        queue: asyncio.Queue[str] = asyncio.Queue()
        positions = iter(range(len(nodes) * slots_per_node))
        workers = [asyncio.create_task(_bind_from(api, queue, nodes, positions))
                   for _ in range(concurrency)]
        try:
            await _feed(api, scheduler_name, queue)
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)


async def _feed(api: Api, scheduler_name: str, queue: asyncio.Queue[str]) -> None:
    """Queue every pending pod: a LIST, then a watch, re-opened from the last resourceVersion
    whenever the API server ends it (it closes the watches of slow readers)."""
    path = f"/api/v1/namespaces/{manifests.NAMESPACE}/pods"
    selector = f"spec.schedulerName={scheduler_name},spec.nodeName="
    listing = await api.get(path, fieldSelector=selector)
    for item in listing["items"]:
        queue.put_nowait(item["metadata"]["name"])
    rv = listing["metadata"]["resourceVersion"]
    while True:
        async for event in api.watch(path, rv, fieldSelector=selector):
            rv = event["object"]["metadata"].get("resourceVersion", rv)
            if event.get("type") == "ADDED":
                queue.put_nowait(event["object"]["metadata"]["name"])
        print(f"watch ended at resourceVersion {rv}; re-opening", file=sys.stderr, flush=True)


async def _bind_from(api: Api, queue: asyncio.Queue[str], nodes: list[str],
                     positions: Iterator[int]) -> None:
    """Take pod names and bind each to the next node in round-robin order (shared position)."""
    for position in positions:
        name = await queue.get()
        path, body = manifests.binding(name, nodes[position % len(nodes)])
        try:
            await api.post_retrying(path, body)
        except Exception as error:  # one failed bind must not stop the worker
            print(f"bind {name} failed: {error!r}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--testbed-json", type=Path, required=True)
    parser.add_argument("--scheduler-name", default="trivial")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--slots-per-node", type=int, required=True)
    args = parser.parse_args()
    endpoint = Endpoint.from_info(json.loads(args.testbed_json.read_text()))

    async def until_signalled() -> None:
        task = asyncio.create_task(serve(endpoint, args.scheduler_name, args.concurrency,
                                         args.slots_per_node))
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(until_signalled())


if __name__ == "__main__":
    main()
