"""`make demo`: the seed gang example on a local control plane, scheduled by gangsched.

Starts the local control plane (one KWOK node with room for three 3-CPU pods), runs
`gangsched run` against it, applies examples/nginx-gang.yaml (the seed example, unchanged),
waits until three pods run, prints `kubectl get pods,pg` and the scheduler's events, and stops
the cluster and gangsched. gangsched's data directory is kept in `.gangsched-demo/` (emptied at
the start of each demo) so the log can be audited afterwards (`replay`, `explain`).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube
from tests.support.gangsched_process import GangschedRun
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "nginx-gang.yaml"
DATA = ROOT / ".gangsched-demo"


def main() -> int:
    """Run the demo; returns the process exit code (0 when 3 Running / 3 Pending was seen)."""
    print("starting the local control plane (built into ~/.cache/gangsched the first time) ...",
          flush=True)
    shutil.rmtree(DATA, ignore_errors=True)
    with ControlPlane(nodes=1, cpu="10", memory="8Gi", pods=110) as cp:
        run = GangschedRun(cp.kubeconfig, DATA)
        print("starting gangsched run (embedded NATS + SQLite) ...", flush=True)
        run.start()
        try:
            print(f"applying {EXAMPLE.name}: PodGroup nginx (minMember 3), ReplicaSet of 6\n")
            cp.kubectl("apply", "-f", str(EXAMPLE))
            eventually(lambda: len(kube.running(kube.pods(cp, "default"))) == 3
                       and len(kube.pods(cp, "default")) == 6,
                       timeout=60, what="3 Running of 6")
            eventually(lambda: kube.events(cp, "default", "FailedScheduling"), timeout=15,
                       what="FailedScheduling events")
            eventually(lambda: (kube.get_json(cp, "pg", "nginx", "-n", "default")
                                .get("status") or {}).get("running") == 3, timeout=30,
                       what="PodGroup nginx status Running 3")
            print(cp.kubectl("get", "pods,pg", "-n", "default", "-o", "wide"))
            print(cp.kubectl("get", "events", "-n", "default", "--field-selector",
                             "reportingComponent=gangsched", "-o",
                             "custom-columns=REASON:.reason,OBJECT:.involvedObject.name,"
                             "MESSAGE:.message"))
        finally:
            run.stop()
    print("stopped gangsched and the control plane. Its log is kept in .gangsched-demo; audit it:\n"
          "  .venv/bin/gangsched replay --verify --data-dir .gangsched-demo\n"
          "  .venv/bin/gangsched explain podgroup default/nginx --data-dir .gangsched-demo")
    return 0


if __name__ == "__main__":
    sys.exit(main())
