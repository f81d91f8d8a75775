"""Differential test: gangsched's preemption of singletons against kube-scheduler's
DefaultPreemption.

A seeded cluster of KWOK nodes, each filled with lower-priority pods of several PriorityClasses
(bound by `spec.nodeName` or by the default scheduler, some at the preemptors' own priority,
about half under PodDisruptionBudgets that allow 0 to 2 disruptions), then preemptors offered
one at a time: to kube-scheduler on the control plane, and to gangsched's planner on the same
observed objects. Both must agree whether the pod preempts (or fits, or neither), and on the
victims' count, highest priority, PDB violations and single node; victims may differ only by
kube-scheduler's last tie-breaks (`differential.preemption.compare`). Covered on the way:
`preemptionPolicy: Never`, equal priority pods, and pods no eviction makes fit.
`GANGSCHED_PREEMPT_DIFF_SEED`, `GANGSCHED_PREEMPT_DIFF_PODS` and `GANGSCHED_PREEMPT_DIFF_NODES`
change the seed, the number of preemptors and of nodes.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e.differential.oracle import with_client
from tests.e2e.differential.preemption import compare, runner

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("GANGSCHED_PREEMPT_DIFF_SEED", "20261201"))
PODS = int(os.environ.get("GANGSCHED_PREEMPT_DIFF_PODS", "60"))
NODES = int(os.environ.get("GANGSCHED_PREEMPT_DIFF_NODES", "8"))


@pytest.mark.timeout(300)
def test_gangsched_preempts_singletons_as_kube_scheduler_does(
        scheduler_plane: ControlPlane) -> None:
    report = asyncio.run(with_client(
        scheduler_plane.kubeconfig, lambda client: runner.run(client, SEED, PODS, NODES)))
    print(report.summary())
    print("by class:", dict(sorted(report.by_class.items())))
    for example in report.examples.values():
        print("classified, e.g.:", example.describe())
    if report.disagreements:
        listed = "\n".join(d.describe() for d in report.disagreements)
        pytest.fail(f"{len(report.disagreements)} disagreement(s) ({report.summary()}):\n"
                    f"{listed}", pytrace=False)
    assert report.skipped <= PODS // 20
    assert report.preemptions["kube-scheduler"] >= PODS // 5  # the preemption path was taken
    assert report.kinds[compare.PLACED] >= 1  # fits as it is: neither preempts
    for why in (runner.NEVER, runner.TOO_LARGE, runner.NO_ROOM):
        assert report.refusals[why] >= 1, f"no offer refused for: {why}"
