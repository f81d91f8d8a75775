"""Where the cores went while a run went on: CPU per process, sampled every half second.

Layer: bench. `Sampler` reads /proc in a thread of the bench's own process (`cpu.processes`,
one scan of every process per sample, about 5 ms of CPU: 1% of a core at the default
interval) and keeps, per interval, the CPU seconds each named process tree used: the control
plane's processes and the recorder under their names, the scheduler's own tree split by process
as in `cpu.parts` (`gangsched: binder`), and the bench's own process (`bench creator`: the pods'
creator, with this sampler's thread in it). `by_phase` turns the samples into cores used (CPU
seconds per second of wall clock) while the pods were being created and after the last one was,
until the last bind: the tail a gang scheduler has and a pod-by-pod one does not
(bench/README.md, "Metrics").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bench.cluster import cpu

INTERVAL_SECONDS = 0.5
CREATOR = "bench creator"
CREATING = "creating"
AFTER_CREATION = "after creation"


class Sampler:
    """Samples the CPU of `roots` (name → root pid; each counted with its descendants) and,
    split by process, of `own` (the scheduler's root pid, named `own_name`; None for a
    scheduler run by the control plane), every `interval` seconds until `stop`.

    Units: wall-clock times are `time.time()` seconds (the recorder's clock), CPU in seconds.
    A scheduler process that exits between two samples loses what it used since the previous
    one (a root's tree keeps it, through its parent's reaped children's time). `stop` takes a
    last sample, so the samples cover everything up to it.
    """

    def __init__(self, roots: Mapping[str, int], own: int | None, own_name: str,
                 interval: float = INTERVAL_SECONDS) -> None:
        if interval <= 0:
            raise ValueError(f"the sampling interval must be positive, not {interval}")
        self._roots = {name: pid for name, pid in roots.items() if pid != own}
        self._own, self._own_name, self._interval = own, own_name, interval
        self._labels: dict[tuple[int, int], str] = {}
        self._samples: list[tuple[float, float, dict[str, float]]] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-timeline", daemon=True)
        self._baseline: tuple[dict[str, float], float] = ({}, 0.0)

    def start(self) -> None:
        """Take the baseline, then start sampling: CPU used once this returns is counted (the
        baseline is read here, not in the thread, so work started right after `start` cannot
        slip in before it while the thread scans /proc)."""
        self._baseline = (self._read(), time.time())
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        """Stop and return the timeline: `{"interval_s", "samples"}`, each sample
        `[end, seconds, {process: CPU seconds used in those seconds}]` (end: `time.time()`)."""
        self._stopping.set()
        self._thread.join()
        return {"interval_s": self._interval,
                "samples": [[round(end, 3), round(seconds, 3), used]
                            for end, seconds, used in self._samples]}

    def _run(self) -> None:
        previous, at = self._baseline
        while True:
            stopping = self._stopping.wait(self._interval)
            now, current = time.time(), self._read()
            used = {name: round(seconds - previous.get(name, 0.0), 3)
                    for name, seconds in current.items()
                    if seconds - previous.get(name, 0.0) > 0}
            self._samples.append((now, now - at, used))
            previous, at = current, now
            if stopping:  # that was the last sample: what was used up to `stop`
                return

    def _read(self) -> dict[str, float]:
        """CPU seconds used so far, by name: each root's tree with its reaped children (so a
        member that exited still counts), the scheduler's processes each on its own
        (`cpu.Scan.own_seconds`: a reaped child is not counted again under its parent)."""
        now = cpu.scan()
        found: dict[str, float] = {CREATOR: time.process_time()}  # not its reaped children
        for name, root in self._roots.items():
            found[name] = sum(now.seconds.get(pid, 0.0) for pid in cpu.tree(root, now.parents))
        if self._own is not None:
            for pid in cpu.tree(self._own, now.parents):
                label = f"{self._own_name}: {self._label(pid, now)}"
                found[label] = found.get(label, 0.0) + now.own_seconds.get(pid, 0.0)
        return found

    def _label(self, pid: int, now: cpu.Scan) -> str:
        """The process's label (`cpu.process_label`), kept per process (pid and start time, so
        a reused pid is looked at again). Not kept while it says nothing yet: `?` (gone, or a
        zombie), or its parent's own label (forked, not yet running its program)."""
        key = (pid, now.started.get(pid, -1))
        if key in self._labels:
            return self._labels[key]
        label = cpu.process_label(cpu.argv(pid))
        parent = next((p for p, children in now.parents.items() if pid in children), None)
        if label != "?" and (parent is None or label != cpu.process_label(cpu.argv(parent))):
            self._labels[key] = label
        return label


def phases(pods: Mapping[str, Sequence[Any]]) -> dict[str, tuple[float, float]]:
    """The phases of a run from the recorder's per-pod records (`[created, bound, ...]`,
    `time.time()` seconds, None when not seen): `creating` from the first pod created to the
    last, `after creation` from then to the last bind when that came later. Empty when no
    pod was seen created."""
    created = [record[0] for record in pods.values() if record and record[0] is not None]
    bound = [record[1] for record in pods.values() if len(record) > 1 and record[1] is not None]
    if not created:
        return {}
    found = {CREATING: (min(created), max(created))}
    if bound and max(bound) > max(created):
        found[AFTER_CREATION] = (max(created), max(bound))
    return found


def by_phase(timeline: Mapping[str, Any],
             spans: Mapping[str, tuple[float, float]]) -> dict[str, dict[str, float]]:
    """Cores each process used in each phase: the CPU seconds of the samples whose interval's
    middle falls within the phase, over those samples' seconds. Shapes: phase → process →
    cores (CPU seconds per wall-clock second), plus `all` (their sum) and `seconds` (the wall
    clock the samples counted in it cover: whole samples, so a phase shorter than one sample
    counts one or none). A phase no sample falls in is left out."""
    found: dict[str, dict[str, float]] = {}
    for phase, (start, end) in spans.items():
        used: dict[str, float] = {}
        covered = 0.0
        for sample_end, seconds, sample in timeline.get("samples", []):
            if not start <= sample_end - seconds / 2 < end:
                continue
            covered += seconds
            for name, cpu_seconds in sample.items():
                used[name] = used.get(name, 0.0) + cpu_seconds
        if covered <= 0:
            continue
        cores = {name: round(total / covered, 2)
                 for name, total in sorted(used.items(), key=lambda item: -item[1])}
        cores["all"] = round(sum(used.values()) / covered, 2)
        cores["seconds"] = round(covered, 1)
        found[phase] = cores
    return found
