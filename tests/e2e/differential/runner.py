"""One differential run: build the generated cluster, then offer each pod to both schedulers.

For each pod: the API server admits it (a dry-run create: defaults, RuntimeClass overhead,
merged label keys); gangsched judges it on the nodes and bound pods as they are now; then
kube-scheduler gets it and its outcome is compared (`compare`). Pods bound by `spec.nodeName`
are created first, before any pod is offered (no scheduler judges them, and kube-scheduler
learns of them through its informer, asynchronously: created between two offers, one could
be missing from its cache when it schedules the next pod). The run starts once the PV
controller has settled the volumes and claims (`storage`); after kube-scheduler binds a pod with
claims, the run waits until the mirrors show them bound, so the next verdict sees them. A pod
during which a node changed what the filters read (a controller tainting a node it found not
Ready), or a claim or volume other than its own did, is not compared, but counted. Nothing
sleeps: every wait is on the watch.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from services.config.settings import KubeSettings
from services.kube.client import MERGE_PATCH, KubeClient, connect
from services.kube.resources import pod_path
from tests.e2e.differential import compare, generator, messages, oracle, storage, verdict
from tests.e2e.differential.families import FINISHED_LABEL, PREBOUND_LABEL, ClusterPlan
from tests.e2e.differential.oracle import Mirror, Mirrors

NODE_SETTLE_SECONDS = 90.0
NODE_CHANGED = "skipped: a node changed meanwhile"
STORAGE_CHANGED = "skipped: a volume or claim changed meanwhile"


@dataclass
class Report:
    """What a run saw: outcome counts, reasons kube-scheduler gave, disagreements, timings."""

    seed: int
    outcomes: Counter[str] = field(default_factory=Counter)
    kube_reasons: Counter[str] = field(default_factory=Counter)
    claims_bound: int = 0
    """Claims kube-scheduler bound (WaitForFirstConsumer) for the pods it bound."""
    mismatches: list[compare.Mismatch] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        timing = ", ".join(f"{k} {v:.1f}s" for k, v in self.seconds.items())
        return (f"seed {self.seed}: {dict(self.outcomes)}; {self.claims_bound} claim(s) bound "
                f"by kube-scheduler; {len(self.mismatches)} mismatch(es); {timing}")


async def build_cluster(client: KubeClient, mirrors: Mirrors, plan: ClusterPlan) -> None:
    """Create the namespaces, the families' objects and the nodes; wait until every node is
    Ready and free of the controllers' start-up taints, and the volumes and claims settled."""
    nodes = mirrors.nodes
    for namespace in plan.namespaces:
        await oracle.create(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": namespace, "labels": plan.namespace_labels.get(namespace, {})}})
    for obj in plan.objects:
        await oracle.create(client, obj)
    for node in plan.nodes:
        await oracle.create(client, node)
    names = set(plan.names())
    await nodes.wait_for(
        lambda: {n["metadata"]["name"] for n in nodes.objects.values()
                 if oracle.is_settled(n)} >= names,
        f"{len(names)} settled nodes", timeout=NODE_SETTLE_SECONDS)
    await storage.wait_settled(mirrors, plan, NODE_SETTLE_SECONDS)


def _bound(pods: Mirror) -> list[dict[str, Any]]:
    """Every pod bound to a node, finished ones included (gangsched must not count those)."""
    return [pod for pod in pods.objects.values() if pod["spec"].get("nodeName")
            and not pod["metadata"].get("deletionTimestamp")]


async def run(client: KubeClient, seed: int, count: int, node_count: int = 24) -> Report:
    """The whole differential run for `seed` (module docstring)."""
    report = Report(seed)
    plan = generator.plan_cluster(seed, node_count)
    workload = list(generator.generate_pods(seed, plan, count))
    slimmer = verdict.Slimmer()
    started = time.monotonic()
    async with oracle.mirrors(client) as mirrors:
        pods = mirrors.pods
        await build_cluster(client, mirrors, plan)
        for pod in workload:
            if pod["metadata"]["labels"].get(PREBOUND_LABEL):
                await prebind(client, pods, pod)
                report.outcomes["prebound"] += 1
        report.seconds["cluster"] = time.monotonic() - started
        judging = 0.0
        for pod in workload:
            if pod["metadata"]["labels"].get(PREBOUND_LABEL):
                continue
            admitted = await oracle.create(client, pod, dry_run=True)
            snapshot = observed(mirrors)
            before = node_fingerprint(snapshot.nodes)
            stored = storage.fingerprint(slimmer, snapshot.storage)
            clock = time.monotonic()
            ours = verdict.judge(slimmer, snapshot, admitted)
            judging += time.monotonic() - clock
            kube = await oracle.offer(client, pods, pod)
            if kube.node is not None:
                report.claims_bound += len(storage.unbound(snapshot.storage, pod))
                await storage.wait_bound(mirrors, pod)
            after = observed(mirrors)
            if node_fingerprint(after.nodes) != before:
                report.outcomes[NODE_CHANGED] += 1
                continue
            if storage.changed(stored, storage.fingerprint(slimmer, after.storage), pod,
                               after.storage):
                report.outcomes[STORAGE_CHANGED] += 1
                continue
            clock = time.monotonic()
            mismatch = _compare(slimmer, seed, snapshot, admitted, kube, ours)
            judging += time.monotonic() - clock
            report.outcomes["bound" if kube.node else "unschedulable"] += 1
            if kube.message:
                for reason in sorted(messages.parse(kube.message).counts):
                    report.kube_reasons[reason] += 1
            if mismatch is not None:
                report.mismatches.append(mismatch)
        report.seconds["gangsched"] = judging
    report.seconds["total"] = time.monotonic() - started
    return report


def observed(mirrors: Mirrors) -> verdict.Snapshot:
    """The mirrors' objects now, as gangsched judges a pod on them."""
    return verdict.Snapshot(
        nodes=list(mirrors.nodes.objects.values()), bound=_bound(mirrors.pods),
        storage={kind: list(mirror.objects.values()) for kind, mirror in mirrors.storage.items()},
        namespaces=list(mirrors.namespaces.objects.values()))


def node_fingerprint(nodes: list[dict[str, Any]]) -> list[tuple[object, ...]]:
    """What the filters read of the nodes (not their heartbeats), sorted by name."""
    return sorted((node["metadata"]["name"], sorted(node["metadata"].get("labels", {}).items()),
                   repr(node["spec"]), oracle.is_settled(node),
                   sorted(node["status"].get("allocatable", {}).items()),
                   node["status"].get("declaredFeatures")) for node in nodes)


async def prebind(client: KubeClient, pods: Mirror, pod: dict[str, Any]) -> None:
    """Create a pod bound by name; one labelled finished is then marked Succeeded (once KWOK
    has it Running, so KWOK does not set it back: a terminal phase is final)."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    await oracle.create(client, pod)
    if not pod["metadata"]["labels"].get(FINISHED_LABEL):
        await pods.wait_for(lambda: pods.by_name(namespace, name), f"pod {namespace}/{name}")
        return
    await pods.wait_for(lambda: _phase(pods, namespace, name) == "Running",
                        f"pod {namespace}/{name} Running")
    await client.request("PATCH", pod_path(namespace, name, "status"),
                         body={"status": {"phase": "Succeeded"}}, content_type=MERGE_PATCH)
    await pods.wait_for(lambda: _phase(pods, namespace, name) == "Succeeded",
                        f"pod {namespace}/{name} Succeeded")


def _phase(pods: Mirror, namespace: str, name: str) -> str | None:
    pod = pods.by_name(namespace, name)
    return None if pod is None else pod.get("status", {}).get("phase")


def _compare(slimmer: verdict.Slimmer, seed: int, snapshot: verdict.Snapshot,
             pod: dict[str, Any], kube: oracle.Outcome,
             ours: verdict.Verdict) -> compare.Mismatch | None:
    if kube.node is not None:
        if ours.node == kube.node:
            return None
        alone = verdict.feasible_on(slimmer, snapshot, pod, kube.node)
        if alone.node == kube.node:
            return None
        return compare.Mismatch(seed, pod, kube, ours, alone,
                                f"kube-scheduler bound it to {kube.node}, where gangsched "
                                "finds it infeasible")
    assert kube.message is not None
    why = compare.unschedulable_difference(kube.message, ours.reason if ours.node is None
                                           else None)
    if ours.node is not None:
        why = f"kube-scheduler found it unschedulable, gangsched places it on {ours.node}"
    if why is None:
        return None
    return compare.Mismatch(seed, pod, kube, ours, None, why)


NodeChoices = tuple[str | None, str | None, str | None]
"""kube-scheduler's node for a pod, gangsched's, and gangsched's for it without its affinity
(None: not placed)."""


async def node_choices(client: KubeClient, mirrors: Mirrors, slimmer: verdict.Slimmer,
                       offered: dict[str, Any]) -> NodeChoices:
    """Where kube-scheduler binds `offered` (created for real), where gangsched would place it
    on the same cluster, and where without `spec.affinity` (so a test sees that the preference,
    not resources alone, chose the node)."""
    admitted = await oracle.create(client, offered, dry_run=True)
    snapshot = observed(mirrors)
    ours = verdict.judge(slimmer, snapshot, admitted)
    plain = copy.deepcopy(admitted)
    plain["spec"].pop("affinity", None)
    plain["metadata"]["uid"] = f"plain-{admitted['metadata'].get('uid', '')}"
    plain_ours = verdict.judge(slimmer, snapshot, plain)
    kube = await oracle.offer(client, mirrors.pods, offered)
    return kube.node, ours.node, plain_ours.node


T = TypeVar("T")


async def with_client(kubeconfig: Path, work: Callable[[KubeClient], Awaitable[T]]) -> T:
    """`work` with a client of the API server `kubeconfig` names, closed after."""
    client = await connect(KubeSettings(kubeconfig=kubeconfig))
    try:
        return await work(client)
    finally:
        await client.close()
