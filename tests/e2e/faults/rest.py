"""What every fault test checks once the fault has passed, and the partial-window watch.

At rest (`settled`): no partly bound gang, no over-committed node, the Placement queue drained
(`test_faults.assert_at_rest`); the planner's committed projection equals `kubectl get`
(`test_watcher_recovery.converged`); and `gangsched replay --verify` re-derives every decision
from the planner's database. While a fault runs (`PartialWatch`), the longest time any gang of
the namespace spent partly bound (0 < bound < minMember) is measured from a pod watch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from services.planner.core.config import PlannerConfig
from services.watcher import slim
from tests.cluster.fixture import ControlPlane, KubectlError
from tests.e2e import kube, manifests, split
from tests.e2e.test_faults import assert_at_rest
from tests.e2e.test_watcher_recovery import converged
from tests.support.waiting import eventually

PLANNER_FLAGS = ("--backoff-initial-seconds", "1", "--backoff-max-seconds", "2")
"""Planner options of the suite (a rolled-back or unschedulable gang is retried within 2 s);
replay must be given the same ones to re-derive the same decisions."""
PLANNER_CONFIG = PlannerConfig(backoff_initial_seconds=1, backoff_max_seconds=2)
"""`PLANNER_FLAGS` as the planner's config (to restore its projection as it would)."""
POLL_SECONDS = 0.25

WINDOWS: dict[str, float] = {}
"""The longest partial window of each test (seconds), printed by the suite's last test."""


def settled(cp: ControlPlane, namespace: str, services: split.Services,
            planner: split.ServiceProcess) -> None:
    """The whole at-rest check (module docstring); the planner must be running."""
    assert_at_rest(cp, namespace, services)
    converged(cp, planner, PLANNER_CONFIG)
    verify_replay(planner)


def verify_replay(planner: split.ServiceProcess) -> None:
    """`gangsched replay --verify` on the planner's database (read-only, while it runs)."""
    replay = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "replay", "--verify",
         "--data-dir", str(planner.data_dir), *PLANNER_FLAGS],
        capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0, replay.stdout[-4000:] + replay.stderr[-4000:]
    assert replay.stdout.startswith("verified "), replay.stdout[-2000:]


def gangs_bound(cp: ControlPlane, namespace: str, sizes: dict[str, int],
                timeout: float = 45) -> list[dict[str, Any]]:
    """Wait until each group of `sizes` has exactly that many members bound; the pods."""
    def check() -> list[dict[str, Any]]:
        pods = kube.pods(cp, namespace)
        counts = bound_by_group(pods)
        assert {group: counts.get(group, 0) for group in sizes} == sizes, counts
        return pods

    result: list[dict[str, Any]] = eventually(check, timeout=timeout, interval=0.3,
                                              what=f"gangs {sizes} bound")
    return result


def bound_by_group(pods: list[dict[str, Any]]) -> dict[str, int]:
    """How many pods of each pod-group label are bound."""
    counts: dict[str, int] = {}
    for pod in kube.bound(pods):
        group = (pod["metadata"].get("labels") or {}).get(manifests.GROUP_LABEL)
        if group:
            counts[group] = counts.get(group, 0) + 1
    return counts


def placements(services: split.Services, namespace: str) -> list[dict[str, Any]]:
    """Every Placement of `namespace` on DECISIONS, in order."""
    every_group = split.decision_subject("Placement", namespace, "x")[:-1] + "*"
    return split.messages(services.nats.url, "DECISIONS", every_group)


class PartialWatch:
    """Watches the namespace's pods; `longest` is the longest partial window seen (seconds).

    A group is partly bound while 0 < bound members < its minMember (absent or 0: 1; a group
    without a PodGroup is never partial). Pods are followed with `kubectl get --watch`, so each
    bind and delete is seen as the API server announces it; a pod being deleted no longer
    counts (as `kube.pods`). PodGroups' minMember is read every `POLL_SECONDS`.
    """

    def __init__(self, cp: ControlPlane, namespace: str) -> None:
        self.cp, self.namespace = cp, namespace
        self.longest = 0.0
        self.worst = ""
        self._pods: dict[str, tuple[str, bool]] = {}
        self._min_members: dict[str, int] = {}
        self._since: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watch = subprocess.Popen(
            cp.kubectl_command("get", "pods", "-n", namespace, "--watch",
                               "--output-watch-events", "-o", "json"),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._threads = [threading.Thread(target=self._follow, daemon=True),
                         threading.Thread(target=self._poll_podgroups, daemon=True)]

    def start(self) -> PartialWatch:
        for thread in self._threads:
            thread.start()
        return self

    def _follow(self) -> None:
        assert self._watch.stdout is not None
        for line in self._watch.stdout:  # one watch event per line
            if line.strip():
                event = json.loads(line)
                self._pod_changed(event["type"], event["object"], time.monotonic())

    def _pod_changed(self, kind: str, pod: dict[str, Any], now: float) -> None:
        metadata = pod["metadata"]
        group = (metadata.get("labels") or {}).get(manifests.GROUP_LABEL, "")
        with self._lock:
            if kind == "DELETED" or metadata.get("deletionTimestamp"):
                self._pods.pop(metadata["uid"], None)
            else:
                self._pods[metadata["uid"]] = (group, bool(pod["spec"].get("nodeName")))
            self._measure(group, now)

    def _poll_podgroups(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                items = kube.get_json(self.cp, "podgroups", "-n", self.namespace)["items"]
            except (KubectlError, ValueError):
                continue
            with self._lock:
                self._min_members = {item["metadata"]["name"]: max(
                    slim.podgroup_event(item, 0).min_member, 1) for item in items}
                for group in self._min_members:
                    self._measure(group, time.monotonic())

    def _measure(self, group: str, now: float) -> None:
        bound = sum(1 for name, is_bound in self._pods.values() if name == group and is_bound)
        if group and 0 < bound < self._min_members.get(group, 1):
            since = self._since.setdefault(group, now)
            if now - since > self.longest:
                self.longest, self.worst = now - since, group
        else:
            self._since.pop(group, None)

    def stop(self) -> float:
        """Stop watching; the longest window, counting one still open."""
        self._stop.set()
        self._watch.terminate()
        self._watch.wait(10)
        for thread in self._threads:
            thread.join(10)
        with self._lock:
            for group in list(self._since):
                self._measure(group, time.monotonic())
        return self.longest


@contextmanager
def partial_watch(cp: ControlPlane, namespace: str, test: str) -> Iterator[PartialWatch]:
    """A running `PartialWatch`; its longest window is recorded under `test` and printed."""
    watch = PartialWatch(cp, namespace).start()
    try:
        yield watch
    finally:
        WINDOWS[test] = watch.stop()
        print(f"longest partial window of {test}: {watch.longest:.3f}s ({watch.worst or '-'})")
