"""The bench's kube-apiserver profile summary: each sampled stack counted once, under the first
handler kind it shows, and the report's table of shares per scheduler."""

from __future__ import annotations

from bench.cluster.apiserver_profile import classify
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
    ]
    assert apiserver_table({"schedulers": {"trivial": {}}}) == ""
