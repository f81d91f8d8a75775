"""Differential test: gangsched's filters against the real kube-scheduler.

A seeded cluster of 24 KWOK nodes over 3 zones and 6 racks (labels, taints, cordons, varied
allocatable with GPUs and hugepages) and 500 non-gang pods (requests with init and sidecar
containers, pod-level resources and overhead, nodeSelector, node affinity with Gt/Lt and
matchFields, tolerations, host ports, required and preferred pod affinity and anti-affinity,
topology spread DoNotSchedule and ScheduleAnyway, claims: bound to local PVs with node
affinity, unbound Immediate, WaitForFirstConsumer matching static PVs, missing,
ReadWriteOncePod; inline GCE PD, AWS EBS, iSCSI and RBD disks, some read-only; restart rules
restarting all containers, which only nodes declaring the feature take; pods bound by
nodeName, some then finished) are offered one at a time:
every pod kube-scheduler binds must be feasible for gangsched on that node, and every pod it
finds unschedulable must be rejected by gangsched with the same per-reason node counts.
`GANGSCHED_DIFF_SEED`, `GANGSCHED_DIFF_PODS` and `GANGSCHED_DIFF_NODES` change the seed, the
number of pods and of nodes.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e.differential import runner
from tests.e2e.differential.oracle import with_client

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("GANGSCHED_DIFF_SEED", "20261201"))
PODS = int(os.environ.get("GANGSCHED_DIFF_PODS", "500"))
NODES = int(os.environ.get("GANGSCHED_DIFF_NODES", "24"))
SHOWN_MISMATCHES = 8


@pytest.mark.timeout(600)
def test_gangsched_agrees_with_kube_scheduler_pod_by_pod(scheduler_plane: ControlPlane) -> None:
    report = asyncio.run(with_client(
        scheduler_plane.kubeconfig, lambda client: runner.run(client, SEED, PODS, NODES)))
    print(report.summary())
    print("kube-scheduler reasons seen:", dict(report.kube_reasons))
    listed = "\n".join(m.headline() for m in report.mismatches)
    shown = "\n".join(m.describe() for m in report.mismatches[:SHOWN_MISMATCHES])
    if report.mismatches:
        pytest.fail(f"{len(report.mismatches)} disagreement(s) ({report.summary()}):\n{listed}\n"
                    f"the first {SHOWN_MISMATCHES} in full:\n{shown}", pytrace=False)
    assert report.outcomes["bound"] >= PODS // 5 and report.outcomes["unschedulable"] >= PODS // 8
    assert report.claims_bound >= PODS // 200  # the WaitForFirstConsumer path was taken
    skipped = report.outcomes[runner.NODE_CHANGED] + report.outcomes[runner.STORAGE_CHANGED]
    assert skipped <= PODS // 50
