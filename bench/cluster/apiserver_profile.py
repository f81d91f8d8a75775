"""kube-apiserver CPU profiles taken during a run, summarised by the handler that spent the CPU.

Layer: bench. With `--profile` the API server runs with `--profiling=true` and, from the first
pod created until the run ends, a thread fetches back-to-back `WINDOW_SECONDS` CPU profiles
from `/debug/pprof/profile` into the control-plane directory. `summarise` reads them with
`go tool pprof -traces` and sorts each sampled stack into one `KINDS` entry, the first whose
Go function it contains: a handler (pods/status updates, bindings, creates, PUTs, PATCHes,
LIST, WATCH, GET, DELETE) or a cost beside them (garbage collection, TLS, HTTP/2). The API
server's stacks name the handler, not the resource, so creates of pods and of events share one
kind; `api_requests` in the result counts each resource apart.
"""

from __future__ import annotations

import re
import shutil
import ssl
import subprocess
import threading
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.cluster.api import Endpoint

WINDOW_SECONDS = 10
"""Length of one profile; the last one still runs this long after the run ends."""

KINDS: tuple[tuple[str, str], ...] = (
    ("pods/status update", "pod/storage.(*StatusREST).Update"),
    ("custom resource status update", "customresource.(*StatusREST).Update"),
    ("pods/binding", "pod/storage.(*BindingREST).Create"),
    ("create", "handlers.CreateResource"),
    ("create", "handlers.CreateNamedResource"),
    ("update (PUT)", "handlers.UpdateResource"),
    ("patch", "handlers.PatchResource"),
    ("watch", "handlers.handleWatch"),
    ("list", "handlers.ListResource"),
    ("get", "handlers.GetResource"),
    ("delete", "handlers.DeleteResource"),
    ("update (PUT)", "registry.(*Store).Update"),
    ("authentication", "apiserver/pkg/authentication/"),
    ("garbage collection", "runtime.gcBgMarkWorker"),
    ("TLS", "crypto/tls."),
    ("HTTP/2", "golang.org/x/net/http2."),
)
"""(kind, a Go function name part that marks it), tried in order; a stack matching none is
"other" (request filters, watch cache, etcd client, scheduling). A profile keeps at most the
64 innermost frames of a stack, and the API server's handler chain is deeper than that, so
marks near the leaf (the storage a write ends in) come before the handlers' own; an update
whose stack lost its handler still counts as one (`registry.(*Store).Update`, which a PATCH
of another kind also ends in: "update (PUT)" may hold such PATCHes)."""

_SAMPLE = re.compile(r"^\s*([\d.]+)(ms|s)\s")


def classify(traces: str) -> dict[str, float]:
    """CPU seconds by `KINDS` kind in `go tool pprof -traces` output (its stacks are separated
    by lines of dashes; each starts with the stack's CPU time, e.g. `10ms` or `1.2s`)."""
    spent: defaultdict[str, float] = defaultdict(float)
    for block in re.split(r"^-+\+-+$", traces, flags=re.MULTILINE):
        lines = [line for line in block.splitlines() if line.strip()]
        sample = _SAMPLE.match(lines[0]) if lines else None
        if sample is None:
            continue
        seconds = float(sample.group(1)) / (1000 if sample.group(2) == "ms" else 1)
        stack = "\n".join(lines)
        kind = next((name for name, mark in KINDS if mark in stack), "other")
        spent[kind] += seconds
    return dict(spent)


def summarise(paths: list[Path]) -> dict[str, Any]:
    """The API server's profiled CPU seconds and each kind's share of them, over `paths`.

    Shapes: `{"cpu_seconds": float, "by_kind": {kind: share}, "profiles": [path, ...]}`, plus
    `"unread": [why, ...]` for profiles `go tool pprof` could not read; `{"error": why}` when
    there is no profile, no `go` to read one, or none could be read.
    """
    if not paths:
        return {"error": "no kube-apiserver profile taken"}
    go = shutil.which("go")
    if go is None:
        return {"error": "`go` not found: cannot read the kube-apiserver profiles"}
    spent: defaultdict[str, float] = defaultdict(float)
    unread: list[str] = []
    for path in paths:
        try:
            done = subprocess.run([go, "tool", "pprof", "-traces", str(path)],
                                  capture_output=True, text=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            unread.append(f"{path.name}: {error}")
            continue
        if done.returncode != 0:
            why = " ".join(done.stderr.split())[:200]
            unread.append(f"{path.name}: go tool pprof exited {done.returncode}: {why}")
            continue
        for kind, seconds in classify(done.stdout).items():
            spent[kind] += seconds
    total = sum(spent.values())
    if not total:
        return {"error": "no kube-apiserver profile could be read", "unread": unread[:3]}
    ranked = sorted(spent.items(), key=lambda item: -item[1])
    summary: dict[str, Any] = {
        "cpu_seconds": round(total, 2),
        "by_kind": {kind: round(seconds / total, 4) for kind, seconds in ranked},
        "profiles": [str(path) for path in paths]}
    if unread:
        summary["unread"] = unread[:3]
    return summary


class ApiserverProfiler:
    """Back-to-back CPU profiles of the API server at `endpoint` into `out_dir`, from `start`
    until `stop` (which waits for the profile then running, at most WINDOW_SECONDS)."""

    def __init__(self, endpoint: Endpoint, out_dir: Path) -> None:
        self._endpoint = endpoint
        self._out_dir = out_dir
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="apiserver profiler",
                                        daemon=True)
        self.paths: list[Path] = []
        self.errors: list[str] = []

    def start(self) -> None:
        """Start taking profiles."""
        self._thread.start()

    def request_stop(self) -> None:
        """Take no profile after the one being taken (call at the end of the run, before
        counting CPU: `stop` may then wait up to WINDOW_SECONDS for that one)."""
        self._stopping.set()

    def stop(self) -> dict[str, Any]:
        """Stop after the profile being taken, and summarise them all (`summarise`); never
        raises: a failure is the summary's `error` (with `fetch_errors` when a profile could
        not be fetched: profiling stopped there, so the profiles cover the run up to it)."""
        self.request_stop()
        self._thread.join(WINDOW_SECONDS + 60)
        try:
            summary = summarise(self.paths)
        except Exception as error:  # the run's own results must survive its profile
            summary = {"error": f"summarising the kube-apiserver profiles: {error!r}"}
        if self.errors:
            summary["fetch_errors"] = self.errors[:3]
        return summary

    def _run(self) -> None:
        try:
            context = ssl.create_default_context(cafile=self._endpoint.ca_file)
        except (OSError, ssl.SSLError) as error:
            self.errors.append(f"{type(error).__name__}: {error}")
            return
        request = urllib.request.Request(
            f"{self._endpoint.server}/debug/pprof/profile?seconds={WINDOW_SECONDS}",
            headers={"Authorization": f"Bearer {self._endpoint.token}"})
        while not self._stopping.is_set():
            path = self._out_dir / f"kube-apiserver-{len(self.paths):03d}.pprof"
            try:
                with urllib.request.urlopen(request, context=context,
                                            timeout=WINDOW_SECONDS + 30) as response:
                    path.write_bytes(response.read())
            except OSError as error:  # URLError, HTTPError, timeouts: note it and stop
                self.errors.append(f"{type(error).__name__}: {error}")
                return
            self.paths.append(path)
