"""The bench's CPU accounting by process (`bench.cluster.cpu`): what each process of a
scheduler's tree is called, and the CPU a live child used counted under its name."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

from bench.cluster import cpu

BURN_THEN_SLEEP = ("import time\n"
                   "start = time.process_time()\n"
                   "while time.process_time() - start < 0.3: pass\n"
                   "print('burnt', flush=True)\n"
                   "time.sleep(60)\n")
HOLDER = ("import subprocess, sys, time\n"
          "subprocess.Popen(['burner', '-c', sys.argv[1]], executable=sys.argv[2])\n"
          "time.sleep(60)\n")
"""A process (`holder`) whose child (`burner`) burns 0.3 s of CPU, says so, then sleeps
(argv: the burner's code, the Python executable: one started as `holder` does not know its
own)."""

TICK_S = 1 / os.sysconf("SC_CLK_TCK")
"""The kernel's CPU-time granularity. /proc/<pid>/stat gives user and system time each cut
down to a tick on its own, so one reading may be nearly two ticks under the process's precise
runtime while the baseline before it was nearly exact: a 0.3 s burn may read up to two ticks
short (seen in CI: 0.28 s), and summing readings in floating point can land a hair below
that."""
LEAST_BURN_S = 0.3 - 2 * TICK_S - 1e-9


def test_each_gangsched_run_child_is_named_by_its_service() -> None:
    assert cpu.process_label(["/venv/bin/python", "-m", "services.cli.child", "binder"]) == "binder"
    assert cpu.process_label(["/venv/bin/python", "-m", "services.cli.child"]) == (
        "services.cli.child")
    assert cpu.process_label(["/venv/bin/python", "-m", "services.cli.main", "run"]) == (
        "services.cli.main")
    assert cpu.process_label(["/venv/bin/nats-server", "--config", "x.conf"]) == "nats-server"
    assert cpu.process_label([]) == "?"


def test_a_live_childs_cpu_is_counted_under_its_name_apart_from_its_parent() -> None:
    holder = subprocess.Popen(["holder", "-c", HOLDER, BURN_THEN_SLEEP, sys.executable],
                              executable=sys.executable, stdout=subprocess.PIPE)
    try:
        before = {"holder": 0.0, "burner": 0.0}
        assert holder.stdout is not None and holder.stdout.readline() == b"burnt\n"
        used = cpu.parts_since(before, holder.pid)
    finally:
        for process in psutil.Process(holder.pid).children():
            process.kill()
        holder.kill()
        holder.wait()
    assert set(used) == {"holder", "burner"}
    assert LEAST_BURN_S <= used["burner"] < 5
    assert used["holder"] < used["burner"]
    assert next(iter(used)) == "burner"  # largest first
