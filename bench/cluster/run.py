"""One measured run: a fresh control plane, one scheduler, one workload, per-pod times.

Layer: bench. Order in a run: testbed up (N KWOK nodes) → scheduler started and ready →
namespace and gang objects created → recorder's watch open → pods created (`concurrency`
POSTs in flight, workload order) → wait until `expected_bound` pods are bound, or no bind for
`stall_seconds` after the last creation, or `time_limit_seconds` → until the scheduler's
reports (events, group status, pod conditions) trailing its binds stop (`_settle`; counted in
its requests and CPU, not in its makespan) → recorder stopped → scheduler and control plane
stopped. The bind ceiling run has no scheduler: pods are created first, then bound by
`binder.bind_all`.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.cluster import analysis, binder, cpu, cpu_timeline, manifests, schedulers
from bench.cluster.api import Api, Endpoint
from bench.cluster.apiserver_profile import ApiserverProfiler
from bench.cluster.recorder import BOUND, Recorder
from bench.cluster.schedulers import Scheduler
from bench.cluster.workload import NODE_MEMORY, NODE_PODS, Workload
from tests.cluster.fixture import ControlPlane

POLL_SECONDS = 0.2
SETTLE_QUIET_SECONDS = 2.0
SETTLE_LIMIT_SECONDS = 10.0
"""Enough for the reports of the last binds; an oversubscribed workload's pods that never fit
are told forever (both schedulers), and that background must not swamp the counts."""
WRITES = frozenset({"POST", "PUT", "PATCH"})
REPORTED = frozenset({"events", "podgroups", "pods/status"})
"""Resources whose writes report on scheduling (events; group status; pod conditions, along
with KWOK's status of the pods bound last) rather than do it; each with its subresources.
Not `REPEATS`: pods that can never fit are told again and again (kube-scheduler's series of
FailedScheduling events too), so those never stop in an oversubscribed workload."""
REPEATS = frozenset({"PATCH events"})


@dataclass(frozen=True)
class Options:
    concurrency: int = 256
    time_limit_seconds: float = 600.0
    stall_seconds: float = 30.0
    ready_timeout_seconds: float = 600.0
    profile: bool = False
    coscheduling_bin: str | None = None
    gangsched_args: tuple[str, ...] = ()
    gangsched_src: str | None = None
    gangsched_sitecustomize: str | None = None
    apiserver_args: tuple[str, ...] = ()
    schedule_timeout_seconds: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def launch_options(self) -> dict[str, Any]:
        return {"coscheduling_bin": self.coscheduling_bin, "gangsched_args": self.gangsched_args,
                "gangsched_src": self.gangsched_src,
                "gangsched_sitecustomize": self.gangsched_sitecustomize,
                "bind_concurrency": self.concurrency}


def control_plane(workload: Workload, cp_dir: Path, scheduler: Scheduler | None,
                  options: Options) -> ControlPlane:
    args = [*schedulers.COMMON_TESTBED_ARGS, *(scheduler.testbed_args if scheduler else ()),
            *(["--apiserver-arg=--profiling=true"] if options.profile else []),
            *(f"--apiserver-arg={arg}" for arg in options.apiserver_args)]
    return ControlPlane(
        nodes=workload.node_count, cpu=f"{workload.node_cpu_milli}m", memory=NODE_MEMORY,
        pods=NODE_PODS, kube_scheduler=bool(scheduler and scheduler.uses_testbed_scheduler),
        no_apf=True, extra_args=args, dir=cp_dir, keep_dir=True,
        ready_timeout=options.ready_timeout_seconds)


def control_plane_dir(work: Path, kind: str, name: str, round_number: int = 1) -> Path:
    """Where the run of scheduler `name` on workload `kind` in round `round_number` (from 1)
    keeps its control plane, logs and records: `<work>/<kind>-<name>`, `-r<round>` appended
    from round 2 on, so that rounds kept with `--keep` do not overwrite each other."""
    return work / (f"{kind}-{name}" if round_number == 1 else f"{kind}-{name}-r{round_number}")


def run_scheduler(scheduler: Scheduler, workload: Workload, work: Path,
                  options: Options, round_number: int = 1) -> dict[str, Any]:
    """Measure `scheduler` on `workload` in round `round_number` (from 1); returns
    `analysis.analyse` plus run facts."""
    cp_dir = control_plane_dir(work, workload.kind, scheduler.name, round_number)
    schedulers.prepare(scheduler, cp_dir)
    with control_plane(workload, cp_dir, scheduler, options) as cp:
        running = scheduler.launch(
            cp, cp_dir, options.launch_options() | {"slots_per_node": workload.slots_per_node})
        try:
            return _measure(cp, scheduler, running, workload, cp_dir, options)
        finally:
            running.stop()


def _measure(cp: ControlPlane, scheduler: Scheduler, running: schedulers.Running,
             workload: Workload, cp_dir: Path, options: Options) -> dict[str, Any]:
    endpoint = Endpoint.from_info(cp.info)
    asyncio.run(_set_up(endpoint, workload, scheduler.group_api, options.concurrency,
                        options.schedule_timeout_seconds))
    gang_index = {gang.name: index for index, gang in enumerate(workload.gangs)}
    recorder = Recorder(endpoint, cp_dir / "records.json",
                        {pod.name: gang_index[pod.gang] for pod in workload.pods if pod.gang})
    recorder.start()
    watched = {**cp.pids, "recorder": recorder.pid}
    own = running.pids[0] if running.pids and not scheduler.uses_testbed_scheduler else None
    if own is not None:
        watched[scheduler.name] = own
    load_before, cpu_before = os.getloadavg(), cpu.snapshot(watched)
    own_before = cpu.parts(own) if own is not None else {}
    creator_before = time.process_time()
    requests_before = asyncio.run(api_requests(endpoint))
    profiler = _py_spy(running.pids[0], cp_dir) if options.profile and running.pids else None
    apiserver_profiler = ApiserverProfiler(endpoint, cp_dir) if options.profile else None
    sampler = cpu_timeline.Sampler(watched, own, scheduler.name)
    sampler.start()
    try:
        if apiserver_profiler is not None:
            apiserver_profiler.start()
        asyncio.run(_create_pods(endpoint, workload, scheduler, options.concurrency))
        outcome = _wait(recorder, workload, options, is_gang=scheduler.is_gang)
        cpu_to_end = cpu.used_since(cpu_before, watched)
        own_to_end = cpu.parts_since(own_before, own) if own is not None else {}
        listed = asyncio.run(_count_bound(endpoint))
        settle_s = asyncio.run(_settle(endpoint))
        scraped = running.scrape()
        requests = _difference(asyncio.run(api_requests(endpoint)), requests_before)
    finally:
        timeline = sampler.stop()  # first: whatever fails below, its thread ends
        if apiserver_profiler is not None:
            apiserver_profiler.request_stop()
        profile = _stop_py_spy(profiler)
        cpu_used = cpu.used_since(cpu_before, watched)
        cpu_used["bench creator"] = round(time.process_time() - creator_before, 2)
        own_used = cpu.parts_since(own_before, own) if own is not None else {}
        records = recorder.stop()
        apiserver_profile = apiserver_profiler.stop() if apiserver_profiler else None
    result = analysis.analyse(workload, records["pods"])
    result |= {"outcome": outcome, "watch_events": records["events"],
               "watch_reopened": records["watch_reopened"], "api_requests": requests,
               "bound_by_list_at_end": listed, "reports_settled_s": settle_s,
               "load_average_before": [round(x, 2) for x in load_before],
               "load_average_after": [round(x, 2) for x in os.getloadavg()],
               "cpu_seconds": cpu_used, "cpu_seconds_to_end": cpu_to_end,
               "scheduler_cpu_seconds_by_process": {"to_settled": own_used,
                                                    "to_end": own_to_end},
               "scheduler_log": str(running.log_path or ""),
               "cpu_timeline": timeline,
               "cores_by_phase": cpu_timeline.by_phase(
                   timeline, cpu_timeline.phases(records["pods"]))}
    result["cpu_ms_per_bound_pod"] = analysis.cpu_per_pod(result)
    if profile is not None:
        result["profile"] = profile
    if apiserver_profile is not None:
        result["apiserver_profile"] = apiserver_profile
    if scraped:
        result["scheduler_metrics"] = scraped
    return result


async def _set_up(endpoint: Endpoint, workload: Workload, group_api: str,
                  concurrency: int, schedule_timeout_seconds: int | None = None) -> None:
    """The namespace (and its default ServiceAccount) and every gang's group object."""
    async with Api(endpoint, pool_size=concurrency) as api:
        await api.post_retrying(*manifests.namespace())
        deadline = time.monotonic() + 60
        path = f"/api/v1/namespaces/{manifests.NAMESPACE}/serviceaccounts/default"
        while True:
            try:
                await api.get(path)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)
        groups = [g for gang in workload.gangs
                  if (g := manifests.pod_group(gang, group_api, schedule_timeout_seconds))
                  is not None]
        await api.post_all(groups, concurrency)


async def _create_pods(endpoint: Endpoint, workload: Workload, scheduler: Scheduler | None,
                       concurrency: int) -> None:
    name, group_api = (scheduler.scheduler_name, scheduler.group_api) if scheduler \
        else ("none", "none")
    async with Api(endpoint, pool_size=concurrency) as api:
        await api.post_all((manifests.pod(p, name, group_api) for p in workload.pods),
                           concurrency)


async def _count_bound(endpoint: Endpoint) -> int:
    """Bound pods by a LIST at the end (a cross-check of the recorder's watch)."""
    async with Api(endpoint, pool_size=1) as api:
        listing = await api.get(f"/api/v1/namespaces/{manifests.NAMESPACE}/pods")
    return sum(1 for item in listing["items"] if item["spec"].get("nodeName"))


async def api_requests(endpoint: Endpoint) -> dict[str, int]:
    """The API server's `apiserver_request_total`, summed by `VERB resource[/subresource]`."""
    async with Api(endpoint, pool_size=1) as api, api.session.get("/metrics") as response:
        text = await response.text()
    return request_totals(text)


async def _settle(endpoint: Endpoint) -> float:
    """Wait until the scheduler's reports (writes of events, group status and pod conditions,
    which may trail
    its binds: kube-scheduler's event broadcaster queues them, gangsched's binder lets binds
    go first) have stopped for `SETTLE_QUIET_SECONDS`, at most `SETTLE_LIMIT_SECONDS`, so the
    requests and CPU counted per bound pod include them. Returns seconds waited in all."""
    start = changed = time.monotonic()
    last = None
    while True:
        reports = report_writes(await api_requests(endpoint))
        now = time.monotonic()
        if reports != last:
            last, changed = reports, now
        elif now - changed >= SETTLE_QUIET_SECONDS:
            return round(now - start, 1)
        if now - start >= SETTLE_LIMIT_SECONDS:
            return round(now - start, 1)
        await asyncio.sleep(POLL_SECONDS)


def report_writes(totals: dict[str, int]) -> dict[str, int]:
    """The entries of `request_totals` that write `REPORTED` resources, but `REPEATS`."""
    chosen = {}
    for key, count in totals.items():
        verb, _, resource = key.partition(" ")
        if key in REPEATS:
            continue
        if verb in WRITES and any(resource == r or resource.startswith(f"{r}/")
                                  for r in REPORTED):
            chosen[key] = count
    return chosen


def request_totals(text: str) -> dict[str, int]:
    """`apiserver_request_total` of a `/metrics` text, summed by `VERB resource[/subresource]`
    (e.g. `PATCH pods/status`)."""
    totals: dict[str, int] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        key = f"{labels.get('verb')} {labels.get('resource')}"
        if labels.get("subresource"):
            key += f"/{labels['subresource']}"
        totals[key] = totals.get(key, 0) + int(float(line.rpartition(" ")[2]))
    return totals


def _difference(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    changed = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    return dict(sorted(changed.items(), key=lambda item: -item[1]))


def nothing_fits(workload: Workload, bound: int, gang_bound: Sequence[int]) -> bool:
    """Whether no unbound pod can still bind: the free slots (capacity less `bound`) are
    fewer than the members any gang still lacks (`gang_bound`: bound pods per gang, in
    `workload.gangs` order) and than one, when a singleton is unbound."""
    free = workload.capacity_pods - bound
    lacking = [gang.size - done for gang, done in zip(workload.gangs, gang_bound, strict=True)
               if done < gang.size]
    in_gangs = sum(gang_bound)
    singletons = len(workload.pods) - sum(gang.size for gang in workload.gangs)
    singletons_unbound = bound - in_gangs < singletons
    return all(need > free for need in lacking) and not (singletons_unbound and free >= 1)


def _wait(recorder: Recorder, workload: Workload, options: Options, *, is_gang: bool) -> str:
    """Until complete, stalled or out of time; returns which. For a gang scheduler
    (`is_gang`), an oversubscribed workload is also complete once every pod exists and no gang
    short of members (nor an unbound singleton) fits the free slots: it can bind nothing more
    (every pod takes one slot and any free slot will do), so waiting out the stall would only
    add idle time. A scheduler without gangs binds single members, so only a full cluster
    completes its run."""
    start = last_change = time.monotonic()
    last_bound = -1
    while True:
        bound, now = recorder.bound, time.monotonic()
        if bound >= workload.expected_bound:
            return "complete"
        if (is_gang and workload.is_oversubscribed and recorder.seen >= len(workload.pods)
                and nothing_fits(workload, bound, recorder.gang_bound())):
            return (f"complete (full: no gang fits the "
                    f"{workload.capacity_pods - bound} free slots)")
        if bound != last_bound or recorder.seen < len(workload.pods):
            last_bound, last_change = bound, now
        if now - last_change > options.stall_seconds:
            return f"stalled ({options.stall_seconds:.0f}s without a bind)"
        if now - start > options.time_limit_seconds:
            return f"time limit ({options.time_limit_seconds:.0f}s)"
        time.sleep(POLL_SECONDS)


def run_ceiling(workload: Workload, work: Path, options: Options) -> dict[str, Any]:
    """The bind ceiling: pods created unscheduled, then bound round-robin, `concurrency` at once.

    Returns binds/s over (first binding POST → last bind seen) and the creation rate alone.
    """
    cp_dir = work / f"{workload.kind}-ceiling"
    with control_plane(workload, cp_dir, None, options) as cp:
        endpoint = Endpoint.from_info(cp.info)
        asyncio.run(_set_up(endpoint, workload, "none", options.concurrency))
        recorder = Recorder(endpoint, cp_dir / "records.json")
        recorder.start()
        try:
            created_s = time.time()
            asyncio.run(_create_pods(endpoint, workload, None, options.concurrency))
            while recorder.seen < len(workload.pods):
                time.sleep(POLL_SECONDS)
            bind_start_s = time.time()
            names = [p.name for p in workload.pods][: workload.capacity_pods]
            asyncio.run(binder.bind_all(endpoint, names, options.concurrency))
            while recorder.bound < len(names):
                time.sleep(POLL_SECONDS)
        finally:
            records = recorder.stop()
    bound_s = sorted(r[BOUND] for r in records["pods"].values() if r[BOUND] is not None)
    bind_s = bound_s[-1] - bind_start_s
    return {"pods": len(names), "bind_concurrency": options.concurrency,
            "bind_s": round(bind_s, 3), "binds_per_s": round(len(names) / bind_s, 1),
            "creation_s": round(bind_start_s - created_s, 3),
            "creations_per_s": round(len(workload.pods) / (bind_start_s - created_s), 1),
            "timeline": analysis.timeline([t - bind_start_s for t in bound_s])}


def _py_spy(pid: int, cp_dir: Path) -> tuple[subprocess.Popen[bytes], Path] | None:
    """Start `py-spy record` (raw collapsed stacks) on `pid` and its children (`gangsched
    run`'s services are child processes); None when py-spy is missing."""
    output = cp_dir / "py-spy.txt"
    try:
        process = subprocess.Popen(
            ["py-spy", "record", "--pid", str(pid), "--rate", "100", "--format", "raw",
             "--output", str(output), "--nonblocking", "--subprocesses", "--gil"],
            stdout=subprocess.DEVNULL, stderr=(cp_dir / "py-spy.log").open("wb"))
    except FileNotFoundError:
        return None
    return process, output


def _stop_py_spy(profiler: tuple[subprocess.Popen[bytes], Path] | None) -> dict[str, Any] | None:
    if profiler is None:
        return None
    process, output = profiler
    process.send_signal(signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return cpu.summarise_profile(output) if output.exists() else {"error": "no py-spy output"}
