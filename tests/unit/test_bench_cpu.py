"""The bench's CPU accounting by process (`bench.cluster.cpu`): what each process of a
scheduler's tree is called, and the CPU a live child used counted under its name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.cluster import cpu

BURN_THEN_SLEEP = ("import time\n"
                   "start = time.process_time()\n"
                   "while time.process_time() - start < 0.3: pass\n"
                   "print('burnt', flush=True)\n"
                   "time.sleep(60)\n")


def test_each_gangsched_run_child_is_named_by_its_service() -> None:
    assert cpu.process_label(["/venv/bin/python", "-m", "services.cli.child", "binder"]) == "binder"
    assert cpu.process_label(["/venv/bin/python", "-m", "services.cli.child"]) == (
        "services.cli.child")
    assert cpu.process_label(["/venv/bin/python", "-m", "services.cli.main", "run"]) == (
        "services.cli.main")
    assert cpu.process_label(["/venv/bin/nats-server", "--config", "x.conf"]) == "nats-server"
    assert cpu.process_label([]) == "?"


def test_a_live_childs_cpu_is_counted_under_its_name_apart_from_its_parent() -> None:
    before = cpu.parts(os.getpid())
    child = subprocess.Popen(["burner", "-c", BURN_THEN_SLEEP], executable=sys.executable,
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"burnt\n"
        used = cpu.parts_since(before, os.getpid())
    finally:
        child.kill()
        child.wait()
    assert 0.29 <= used["burner"] < 5
    assert next(iter(used)) == "burner"  # largest first
    assert set(used) == {"burner", cpu.process_label(_own_argv())}


def _own_argv() -> list[str]:
    raw = Path(f"/proc/{os.getpid()}/cmdline").read_bytes()
    return [part.decode() for part in raw.split(b"\0") if part]
