"""One preemption differential run: build the seeded workload, then offer each preemptor to
gangsched's planner and to kube-scheduler on the same observed cluster, and compare.

The cluster is built as the filter differential builds it (`differential.runner`), then the
fillers: those bound by `spec.nodeName` first, then those left to the default scheduler, each
waited for. Before every offer the pods are Running and the budgets settled
(`oracle.wait_budgets`); the API server admits the pod (a dry-run create resolves its
PriorityClass into `spec.priority` and `spec.preemptionPolicy`); gangsched decides on the
mirrors' objects; kube-scheduler gets the pod; the two are compared (`compare.classify`). Then
the cluster is put back: the preemptor deleted, each victim created again (same manifest, bound
by name to the node it was on, under a new name: `Refills`), so every offer meets the same pods
(their names and start times aside).
An offer during which a node changed what the filters read is not compared, but counted.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from services.contracts.resources import parse_quantity
from services.kube.client import KubeClient
from services.kube.resources import PDBS
from tests.e2e.differential import oracle as base_oracle
from tests.e2e.differential import runner as base_runner
from tests.e2e.differential.families import ClusterPlan
from tests.e2e.differential.generator import NAMESPACES
from tests.e2e.differential.oracle import Mirror
from tests.e2e.differential.preemption import compare, oracle, verdict, workload
from tests.e2e.differential.verdict import Slimmer

Obj = dict[str, Any]


@dataclass
class Disagreement:
    """One offer the two schedulers disagree on (or differ on legitimately), with what it takes
    to reproduce it."""

    seed: int
    pod: Obj
    compared: compare.Compared

    def describe(self) -> str:
        meta, spec = self.pod["metadata"], self.pod["spec"]
        return (f"seed {self.seed}, pod {meta['namespace']}/{meta['name']} "
                f"({spec.get('priorityClassName')}, priority {spec.get('priority')}, "
                f"{spec['containers'][0]['resources']['requests']}): "
                f"{self.compared.describe()}")


@dataclass
class Report:
    """What a run saw: offers, preemptions by side, outcome kinds, disagreements, timings."""

    seed: int
    offered: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    by_class: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(preemptor's PriorityClass, kind) → offers."""
    preemptions: Counter[str] = field(default_factory=Counter)
    """Side (`kube-scheduler`, `gangsched`) → offers it preempted for."""
    refusals: Counter[str] = field(default_factory=Counter)
    """Why offers both refused were refused (`refusal`) → offers."""
    skipped: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)
    examples: dict[str, Disagreement] = field(default_factory=dict)
    """The first offer of each tie or deliberate kind, to show how the two differ."""
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        timing = ", ".join(f"{k} {v:.1f}s" for k, v in self.seconds.items())
        return (f"seed {self.seed}: {self.offered} offered, {self.skipped} skipped; "
                f"preemptions {dict(self.preemptions)}; kinds {dict(self.kinds)}; "
                f"refused: {dict(self.refusals)}; "
                f"{len(self.disagreements)} disagreement(s); {timing}")


NEVER = "preemptionPolicy Never"
TOO_LARGE = "larger than any node"
NO_ROOM = "not enough room even with every lower-priority pod gone"


def refusal(pod: Obj) -> str:
    """Why a pod both schedulers refused is refused, from its spec: it may not preempt, it
    asks for more than a node has, or else too much of every node is taken by pods of its
    priority or above."""
    if pod["spec"].get("preemptionPolicy") == "Never":
        return NEVER
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    if (parse_quantity(requests["cpu"]) * 1000 > workload.NODE_MILLI_CPU
            or parse_quantity(requests["memory"]) > workload.NODE_MEMORY_MI * 2**20):
        return TOO_LARGE
    return NO_ROOM


async def _create_fillers(client: KubeClient, pods: Mirror, work: workload.Workload) -> None:
    for by_scheduler in (False, True):
        for pod in work.fillers:
            if (pod["metadata"]["name"] in work.by_scheduler) != by_scheduler:
                continue
            manifest = copy.deepcopy(pod)
            if by_scheduler:
                del manifest["spec"]["nodeName"]
            await base_oracle.create(client, manifest)
    wanted = {(pod["metadata"]["namespace"], pod["metadata"]["name"], pod["spec"]["nodeName"])
              for pod in work.fillers}
    await pods.wait_for(lambda: wanted <= {(obj["metadata"]["namespace"],
                                            obj["metadata"]["name"], obj["spec"].get("nodeName"))
                                           for obj in pods.objects.values()},
                        f"{len(wanted)} fillers bound")


@dataclass
class Refills:
    """The fillers' manifests by name, and how to create a victim again: from its filler's
    manifest, on the node it was on, under a name no pod had (`<filler>-r<N>`).

    Never under its own name: KWOK deletes a terminating pod by name with no UID precondition
    (so does kube-scheduler a victim), and on a loaded machine such a delete of the old pod can
    arrive after the name is taken again, deleting the new pod unmarked; the oracle would
    count it as a victim deleted without DisruptionTarget."""

    manifests: dict[str, Obj]
    origin: dict[str, str] = field(default_factory=dict)
    """Name of a pod created again → the filler it was made from."""
    made: int = 0

    def again(self, victim: Obj) -> Obj:
        """The manifest that puts `victim` (an API object) back."""
        name = victim["metadata"]["name"]
        filler = self.origin.get(name, name)
        self.made += 1
        manifest = copy.deepcopy(self.manifests[filler])
        manifest["metadata"]["name"] = f"{filler}-r{self.made}"
        manifest["spec"]["nodeName"] = victim["spec"]["nodeName"]
        self.origin[manifest["metadata"]["name"]] = filler
        return manifest


async def _restore(client: KubeClient, pods: Mirror, refills: Refills, pod: Obj,
                   kube: oracle.KubeOutcome) -> None:
    """Delete the preemptor if kube-scheduler bound it; create each victim again on its node
    (`Refills`)."""
    if kube.node is not None:
        await oracle.delete(client, pods, pod)
    for victim in kube.victims:
        await base_oracle.create(client, refills.again(victim))


async def run(client: KubeClient, seed: int, preemptors: int, node_count: int) -> Report:
    """The whole preemption differential run for `seed` (module docstring)."""
    report = Report(seed)
    work = workload.generate(seed, node_count, preemptors)
    refills = Refills({pod["metadata"]["name"]: pod for pod in work.fillers})
    slimmer = Slimmer()
    started = time.monotonic()
    budgets = Mirror(client, PDBS)
    try:
        async with base_oracle.mirrors(client) as mirrors:
            pods = mirrors.pods
            marked = oracle.Marked(pods)
            await base_runner.build_cluster(client, mirrors,
                                            ClusterPlan(work.nodes, NAMESPACES, work.objects))
            await _create_fillers(client, pods, work)
            report.seconds["cluster"] = time.monotonic() - started
            judging = 0.0
            for pod in work.preemptors:
                await oracle.wait_budgets(budgets, pods)
                admitted = await base_oracle.create(client, pod, dry_run=True)
                snapshot = base_runner.observed(mirrors)
                listed = list(budgets.objects.values())
                before = base_runner.node_fingerprint(snapshot.nodes)
                clock = time.monotonic()
                ours = verdict.decide(slimmer, snapshot, listed, admitted)
                judging += time.monotonic() - clock
                kube = await oracle.offer(client, pods, marked, pod)
                await _restore(client, pods, refills, pod, kube)
                if base_runner.node_fingerprint(base_runner.observed(mirrors).nodes) != before:
                    report.skipped += 1
                    continue
                report.offered += 1
                compared = compare.classify(admitted["spec"].get("priority", 0), kube, ours,
                                            snapshot.bound, listed)
                report.kinds[compared.kind] += 1
                if compared.kind == compare.REFUSED:
                    report.refusals[refusal(admitted)] += 1
                report.by_class[pod["spec"].get("priorityClassName", ""), compared.kind] += 1
                for side, outcome in (("kube-scheduler", compared.kube),
                                      ("gangsched", compared.ours)):
                    report.preemptions[side] += outcome == compare.PREEMPTED
                offer = Disagreement(seed, admitted, compared)
                if not compared.agrees:
                    report.disagreements.append(offer)
                elif compared.kind not in compare.AGREE_KINDS:
                    report.examples.setdefault(compared.kind, offer)
            report.seconds["gangsched"] = judging
    finally:
        await budgets.close()
    report.seconds["total"] = time.monotonic() - started
    return report
