"""The trivial binders: no filtering, no scoring; the i-th slot taken is on node i mod N.

Layer: bench. Three uses:
- `bind_all` (the bind ceiling): pods created beforehand, then every pods/binding POSTed with
  `concurrency` requests in flight — the API server's bind rate, the physical limit here;
- `python -m bench.cluster.binder` (the `trivial` scheduler): watches pods with its
  schedulerName and binds each one the moment it is seen, so a run with it measures the fastest
  creation-to-bind pipeline this control plane, creator and watch allow;
- `python -m bench.cluster.binder --gangs` (the `trivial-gang` scheduler): the same, all or
  nothing per gang (`GangGate`): a gang's members are bound the moment its last one is seen,
  if the free slots hold them all, and never otherwise. It knows each gang's size from its
  PodGroup (`minMember`, watched like the pods) and nothing else: no events, no status, no
  re-check. It is the fastest an all-or-nothing scheduler can go with this creator, so in a
  workload where gangs complete late (c: every pod shuffled) it is the bound gangsched's pods/s
  is measured against, where `trivial` (binding members of gangs that will never be whole) is
  not one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.cluster import manifests
from bench.cluster.api import Api, Endpoint

Take = list[tuple[str, int]]
"""Pods to bind now, each with the slot it takes (0-based; slot i is on node i mod N)."""


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


class GangGate:
    """Which seen pods to bind, and in which slot: every pod at once (`gangs` False), or all
    or nothing per gang.

    Shapes: `slots` the cluster's pod slots (nodes x slots per node); pods arrive by name with
    their gang (the PodGroup label's value, None for a singleton); gangs' sizes arrive by
    name (`minMember`). A gang is decided once, when both its size and that many members are
    known: bound whole if the free slots hold them, else never (slots are never freed here:
    the benchmark deletes nothing). A member seen after its gang was bound, and a singleton,
    takes a slot alone if one is free. Slots are taken in order, so slot i is on node
    i mod N and no node holds more than its share.
    """

    def __init__(self, slots: int, gangs: bool) -> None:
        self.slots, self.gangs, self.used = slots, gangs, 0
        self.sizes: dict[str, int] = {}
        self.waiting: dict[str, list[str]] = {}
        self.decided: set[str] = set()
        self.seen: set[str] = set()

    def pod(self, name: str, gang: str | None) -> Take:
        """A pod seen: what to bind now (nothing for one seen before: a LIST again)."""
        if name in self.seen:
            return []
        self.seen.add(name)
        if not self.gangs or gang is None or gang in self.decided:
            return self._take([name])
        self.waiting.setdefault(gang, []).append(name)
        return self._decide(gang)

    def gang(self, name: str, size: int) -> Take:
        """A gang's size seen: what to bind now."""
        self.sizes[name] = size
        return self._decide(name)

    def _decide(self, gang: str) -> Take:
        size, members = self.sizes.get(gang), self.waiting.get(gang, [])
        if gang in self.decided or size is None or len(members) < size:
            return []
        self.decided.add(gang)
        del self.waiting[gang]
        return self._take(members)

    def _take(self, names: list[str]) -> Take:
        if self.used + len(names) > self.slots:
            return []
        first, self.used = self.used, self.used + len(names)
        return [(name, first + i) for i, name in enumerate(names)]


async def serve(endpoint: Endpoint, scheduler_name: str, concurrency: int,
                slots_per_node: int, gangs: bool = False) -> None:
    """Bind pending pods of `scheduler_name` in the bench namespace, forever, as `GangGate`
    says (never more than `slots_per_node` of them on a node: it never over-commits)."""
    async with Api(endpoint, pool_size=concurrency + 3) as api:
        nodes = await node_names(api)
        gate = GangGate(len(nodes) * slots_per_node, gangs)
        queue: asyncio.Queue[tuple[str, int]] = asyncio.Queue()

        def enqueue(take: Take) -> None:
            for item in take:
                queue.put_nowait(item)

        def on_pod(pod: dict[str, Any]) -> None:
            meta = pod["metadata"]
            enqueue(gate.pod(meta["name"], meta.get("labels", {}).get(manifests.GROUP_LABEL)))

        def on_group(group: dict[str, Any]) -> None:
            enqueue(gate.gang(group["metadata"]["name"], group["spec"]["minMember"]))

        feeds = [_feed(api, f"/api/v1/namespaces/{manifests.NAMESPACE}/pods", on_pod,
                       fieldSelector=f"spec.schedulerName={scheduler_name},spec.nodeName=")]
        if gangs:
            feeds.append(_feed(api, f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/"
                                    f"{manifests.NAMESPACE}/podgroups", on_group))
        workers = [asyncio.create_task(_bind_from(api, queue, nodes))
                   for _ in range(concurrency)]
        try:
            await asyncio.gather(*feeds)
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)


async def _feed(api: Api, path: str, on_added: Callable[[dict[str, Any]], None],
                **selectors: str) -> None:
    """`_follow` the collection `path`, from a new LIST whenever it fails (an API server not
    serving the PodGroup CRD yet in the first second, a watch refused): `on_added` may see an
    object again (`GangGate.pod` ignores it)."""
    while True:
        try:
            await _follow(api, path, on_added, **selectors)
        except Exception as error:  # the benchmark's binder must not stop on one failure
            print(f"{path}: {error!r}; listing again", file=sys.stderr, flush=True)
            await asyncio.sleep(0.2)


async def _follow(api: Api, path: str, on_added: Callable[[dict[str, Any]], None],
                  **selectors: str) -> None:
    """Call `on_added` with every object of the collection `path`: a LIST, then a watch,
    re-opened from the last resourceVersion whenever the API server ends it (it closes the
    watches of slow readers)."""
    listing = await api.get(path, **selectors)
    for item in listing["items"]:
        on_added(item)
    rv = listing["metadata"]["resourceVersion"]
    while True:
        async for event in api.watch(path, rv, lambda: None, **selectors):
            rv = event["object"]["metadata"].get("resourceVersion", rv)
            if event.get("type") == "ADDED":
                on_added(event["object"])
        print(f"watch of {path} ended at resourceVersion {rv}; re-opening", file=sys.stderr,
              flush=True)


async def _bind_from(api: Api, queue: asyncio.Queue[tuple[str, int]], nodes: list[str]) -> None:
    """Take (pod name, slot) pairs and bind each pod to its slot's node."""
    while True:
        name, slot = await queue.get()
        path, body = manifests.binding(name, nodes[slot % len(nodes)])
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
    parser.add_argument("--gangs", action="store_true",
                        help="all or nothing per gang (PodGroup minMember)")
    args = parser.parse_args()
    endpoint = Endpoint.from_info(json.loads(args.testbed_json.read_text()))

    async def until_signalled() -> None:
        task = asyncio.create_task(serve(endpoint, args.scheduler_name, args.concurrency,
                                         args.slots_per_node, args.gangs))
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(until_signalled())


if __name__ == "__main__":
    main()
