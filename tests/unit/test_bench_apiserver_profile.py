"""The bench's kube-apiserver profile summary: each sampled stack counted once, under the first
handler kind it shows; profiles that cannot be taken or read said so, never raised; and the
report's table of shares per scheduler."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import certifi
import pytest

from bench.cluster.api import Endpoint
from bench.cluster.apiserver_profile import ApiserverProfiler, classify, summarise
from bench.cluster.report import apiserver_table

SEPARATOR = "-----------+-------------------------------------------------------"

TRACES = "\n".join([
    "File: kube-apiserver",
    "Type: cpu",
    "Duration: 30s, Total samples = 26.89s (89.63%)",
    SEPARATOR,
    "      20ms   sigs.k8s.io/structured-merge-diff/v6/merge.(*Updater).Update",
    "             k8s.io/kubernetes/pkg/registry/core/pod/storage.(*StatusREST).Update",
    "             k8s.io/apiserver/pkg/endpoints/handlers.PatchResource.func1",
    SEPARATOR,
    "      1.5s   k8s.io/kubernetes/pkg/registry/core/pod/storage.(*BindingREST).Create",
    "             k8s.io/apiserver/pkg/endpoints/handlers.CreateNamedResource.createHandler.func1",
    SEPARATOR,
    "      10ms   k8s.io/apiserver/pkg/endpoints/handlers.CreateResource.createHandler.func1.2",
    SEPARATOR,
    "      30ms   runtime.scanObject",
    "             runtime.gcBgMarkWorker",
    SEPARATOR,
    "      40ms   net/textproto.readMIMEHeader",
    "             net/http.readRequest",
    SEPARATOR,
    "      10ms   k8s.io/apiserver/pkg/endpoints/handlers.PatchResource.func1",
    SEPARATOR,  # cut off at 64 frames before its handler: known by the storage it ends in
    "      50ms   k8s.io/apiextensions-apiserver/pkg/registry/customresource.(*StatusREST).Update",
    "             k8s.io/apiserver/pkg/registry/generic/registry.(*Store).Update",
    SEPARATOR,
    "      60ms   k8s.io/apiserver/pkg/registry/generic/registry.(*Store).Update",
    "",
])


def test_each_stack_counts_under_the_first_kind_it_shows() -> None:
    spent = classify(TRACES)
    assert {kind: round(seconds, 3) for kind, seconds in spent.items()} == {
        "pods/status update": 0.02, "pods/binding": 1.5, "create": 0.01,
        "garbage collection": 0.03, "other": 0.04, "patch": 0.01,
        "custom resource status update": 0.05, "update (PUT)": 0.06}


def test_text_without_stacks_counts_nothing() -> None:
    assert classify("File: kube-apiserver\nType: cpu\n") == {}


def test_the_report_shows_each_kinds_share_per_profiled_scheduler() -> None:
    result = {"schedulers": {
        "gangsched": {"apiserver_profile": {"cpu_seconds": 40.0, "by_kind": {
            "create": 0.5, "pods/status update": 0.3, "other": 0.2}}},
        "kube-scheduler": {"apiserver_profile": {"cpu_seconds": 20.0, "by_kind": {
            "create": 0.7, "other": 0.3}}},
        "trivial": {"apiserver_profile": {"error": "no kube-apiserver profile taken"}},
    }}
    assert apiserver_table(result).splitlines() == [
        "| kube-apiserver CPU by handler | gangsched | kube-scheduler |",
        "|---|---|---|",
        "| create | 50.0% | 70.0% |",
        "| pods/status update | 30.0% | 0.0% |",
        "| other | 20.0% | 30.0% |",
        "| CPU s profiled | 40.0 | 20.0 |",
        "",
        "kube-apiserver not profiled: trivial: no kube-apiserver profile taken",
    ]
    assert apiserver_table({"schedulers": {"trivial": {}}}) == ""


def test_profiles_that_cannot_be_read_are_said_so(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    profile = tmp_path / "kube-apiserver-000.pprof"
    profile.write_bytes(b"not a profile")
    assert summarise([]) == {"error": "no kube-apiserver profile taken"}
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert summarise([profile]) == {
        "error": "`go` not found: cannot read the kube-apiserver profiles"}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    go = bin_dir / "go"  # a `go` whose pprof refuses the file, as the real one does garbage
    go.write_text("#!/bin/sh\necho 'parsing profile: unrecognized profile format' >&2\nexit 1\n")
    go.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert summarise([profile]) == {
        "error": "no kube-apiserver profile could be read",
        "unread": ["kube-apiserver-000.pprof: go tool pprof exited 1: parsing profile: "
                   "unrecognized profile format"]}


def test_a_profiler_whose_fetch_fails_stops_at_once_and_says_why(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    profiler = ApiserverProfiler(
        Endpoint(server=f"https://127.0.0.1:{port}", ca_file=certifi.where(), token="t"),
        tmp_path)
    profiler.start()
    started = time.monotonic()
    while not profiler.errors and time.monotonic() - started < 30:
        time.sleep(0.01)
    summary = profiler.stop()  # the thread has ended: stop does not wait a window
    assert time.monotonic() - started < 30
    assert summary["error"] == "no kube-apiserver profile taken"
    assert len(summary["fetch_errors"]) == 1 and "URLError" in summary["fetch_errors"][0]
    assert os.listdir(tmp_path) == []
