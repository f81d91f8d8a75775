"""Two installations serving one scheduler name: one binds, the other stands by (the Lease
named after the scheduler name, `services/kube/leases.py`) and takes over once the first
stops, binding then what the first left, with no pod bound twice, deleted or over a node's
room."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube
from tests.support.gangsched_process import GangschedRun, serving
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e


def _lease(control_plane: ControlPlane) -> dict[str, Any]:
    return kube.get_json(control_plane, "lease", "-n", "kube-system", "gangsched")


def _log(run: GangschedRun) -> str:
    """All the run logged so far (DEBUG: a tail would lose a line logged seconds ago)."""
    return run.log_path.read_text(errors="replace")


def _binds(run: GangschedRun) -> float:
    """Bindings the run's binder made (POST pods/binding answered 201)."""
    return sum(value for (name, labels), value in run.metric_samples().items()
               if name == "gangsched_bind_duration_seconds_count")


def test_a_second_installation_of_one_scheduler_name_stands_by_then_takes_over(
        control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    second = GangschedRun(control_plane.kubeconfig, tmp_path / "second")
    try:
        with serving(control_plane.kubeconfig, tmp_path / "first") as first:
            holder = _lease(control_plane)["spec"]["holderIdentity"]
            installation = holder.split("/")[0]
            assert installation.startswith("gangsched@"), holder
            second.start()
            eventually(lambda: "is served by another gangsched installation (Lease "
                       f"kube-system/gangsched held by {installation})" in _log(second),
                       timeout=10, what="the second installation standing by")
            control_plane.kubectl("apply", "-f", "-",
                                  input=kube.example_documents("nginx-gang.yaml", namespace))

            def three_bound() -> list[dict[str, Any]]:
                pods = kube.pods(control_plane, namespace)
                assert len(pods) == 6 and len(kube.running(pods)) == 3, kube.bound(pods)
                return kube.bound(pods)

            bound = eventually(three_bound, timeout=30, what="3 of 6 Running")
            assert _binds(first) >= 1 and _binds(second) == 0
            assert _lease(control_plane)["spec"]["holderIdentity"].split("/")[0] == installation
        eventually(lambda: _lease(control_plane)["spec"]["holderIdentity"].split("/")[0]
                   not in ("", installation),
                   timeout=10, what="the second installation taking the released Lease")
        kept = {pod["metadata"]["uid"] for pod in bound}
        consistently(lambda: {pod["metadata"]["uid"]
                              for pod in kube.bound(kube.pods(control_plane, namespace))} == kept,
                     duration=8, what="the first's 3 pods bound, none other, none deleted")
        for pod in bound:
            control_plane.kubectl("delete", "pod", "-n", namespace, pod["metadata"]["name"],
                                  "--grace-period=0", "--force")

        def three_others_bound() -> bool:
            now = kube.bound(kube.pods(control_plane, namespace))
            assert len(now) == 3 and not kept & {pod["metadata"]["uid"] for pod in now}, now
            return True

        eventually(three_others_bound, timeout=30, what="the second binding 3 others")
        assert _binds(second) >= 1
    finally:
        code = second.stop()
        print(second.log_tail(200))
    assert code == 0
