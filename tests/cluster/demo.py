"""`make demo`: the seed gang example on a local control plane, scheduled by gangsched.

Starts the local control plane with one KWOK node, tests/cluster/demo-node.yaml (room for three
3-CPU pods; the example a user applies holds no Node), runs `gangsched run` against it, applies
examples/nginx-gang.yaml (the seed example, unchanged),
waits until three pods run, prints `kubectl get pods,pg` and the scheduler's events, and stops
the cluster and gangsched. gangsched's data directory is kept in `.gangsched-demo/` (emptied at
the start of each demo) so the log can be audited afterwards (`replay`, `explain`). One demo
runs at a time in a checkout (a second one, which would empty the first's log under it, says
so and exits 1); Ctrl-C stops it with one line, after stopping what it started.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from services.cli import data_dir_lock
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube
from tests.support.gangsched_process import GangschedRun
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "nginx-gang.yaml"
NODE = Path(__file__).resolve().parent / "demo-node.yaml"
DATA = ROOT / ".gangsched-demo"
LOCK = ROOT / ".gangsched-demo-lock"
"""Held (`data_dir_lock`) while a demo runs: not in DATA, whose own lock `gangsched run` takes."""
INTERRUPTED = 130
"""The exit code of a demo stopped by Ctrl-C (128 + SIGINT, as a shell reports it)."""


def node_allocatable() -> dict[str, Any]:
    """The demo node's allocatable (cpu, memory, pods), as tests/cluster/demo-node.yaml gives
    it; the testbed names its first node `kwok-node-0`, as that file does."""
    node = yaml.safe_load(NODE.read_text())
    allocatable: dict[str, Any] = node["status"]["allocatable"]
    return allocatable


def main() -> int:
    """Run the demo unless another runs in this checkout; returns the process exit code: 0
    when 3 Running / 3 Pending was seen, 1 when another demo runs, `INTERRUPTED` on Ctrl-C."""
    try:
        with data_dir_lock.hold(LOCK):
            return _demo()
    except data_dir_lock.DataDirUnusable as error:
        holder = data_dir_lock.holder(LOCK)
        print(f"make demo: another demo runs in this checkout (pid {holder}); wait for it to "
              "end" if holder else f"make demo: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("make demo: interrupted; gangsched and the control plane are stopped",
              file=sys.stderr)
        return INTERRUPTED


def _demo() -> int:
    """The demo itself (`main`)."""
    print("starting the local control plane (built into ~/.cache/gangsched the first time) ...",
          flush=True)
    shutil.rmtree(DATA, ignore_errors=True)
    room = node_allocatable()
    with ControlPlane(nodes=1, cpu=room["cpu"], memory=room["memory"],
                      pods=int(room["pods"])) as cp:
        run = GangschedRun(cp.kubeconfig, DATA)
        print("starting gangsched run (embedded NATS + SQLite) ...", flush=True)
        try:
            run.start()  # inside: interrupted while it starts, it is stopped all the same
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
