"""The bench's CPU timeline (`bench.cluster.cpu_timeline`) and its report table: cores used
per process while pods are created and after, until the last bind."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from bench.cluster import cpu_timeline, report
from tests.unit.test_bench_cpu import HOLDER, LEAST_BURN_S


def test_phases_are_creation_then_the_tail_until_the_last_bind() -> None:
    pods: dict[str, list[float | str | None]] = {
        "a": [10.0, 12.0, "n1"], "b": [11.0, 19.5, "n2"], "c": [15.0, None, None],
        "d": [None, None, None]}
    assert cpu_timeline.phases(pods) == {"creating": (10.0, 15.0),
                                         "after creation": (15.0, 19.5)}


def test_a_run_bound_within_its_creation_has_no_tail_and_an_empty_one_no_phase() -> None:
    assert cpu_timeline.phases({"a": [10.0, 11.0], "b": [12.0, 12.0]}) == {
        "creating": (10.0, 12.0)}
    assert cpu_timeline.phases({"a": [None, None]}) == {}


def test_each_sample_counts_in_the_phase_its_middle_falls_in() -> None:
    timeline = {"interval_s": 0.5, "samples": [
        [10.5, 0.5, {"kube-apiserver": 0.5, "gangsched: binder": 0.1}],
        [11.0, 0.5, {"kube-apiserver": 0.4, "gangsched: binder": 0.2}],
        [11.5, 0.5, {"kube-apiserver": 0.3, "gangsched: binder": 0.4, "kwok": 0.2}],
        [12.0, 0.5, {"kube-apiserver": 0.9}],  # middle 11.75: after the last bind
    ]}
    spans = {"creating": (10.0, 11.0), "after creation": (11.0, 11.6), "none": (20.0, 21.0)}
    assert cpu_timeline.by_phase(timeline, spans) == {
        "creating": {"kube-apiserver": 0.9, "gangsched: binder": 0.3, "all": 1.2,
                     "seconds": 1.0},
        "after creation": {"kube-apiserver": 0.6, "gangsched: binder": 0.8, "kwok": 0.4,
                           "all": 1.8, "seconds": 0.5},
    }


GATED_BURN = ("import sys, time\n"
              "sys.stdin.readline()\n"
              "start = time.process_time()\n"
              "while time.process_time() - start < 0.3: pass\n"
              "print('burnt', flush=True)\n"
              "time.sleep(60)\n")
"""Burns 0.3 s of CPU once a line comes on its stdin, says so, then sleeps: what it burns is
all after the sampler's baseline, however slowly the machine starts it."""


def test_the_sampler_counts_a_trees_cpu_under_its_name_and_splits_the_schedulers() -> None:
    burner = subprocess.Popen(["burner", "-c", GATED_BURN], executable=sys.executable,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    holder = subprocess.Popen(["holder", "-c", HOLDER, GATED_BURN, sys.executable],
                              executable=sys.executable, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)  # its child shares both pipes
    sampler = cpu_timeline.Sampler({"apiserver": burner.pid, "sched": holder.pid},
                                   holder.pid, "sched", interval=0.05)
    try:
        deadline = time.monotonic() + 60
        while not psutil.Process(holder.pid).children():  # in the baseline, with its name
            assert time.monotonic() < deadline, "the holder never started its child"
            time.sleep(0.02)
        sampler.start()
        for process in (burner, holder):
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(b"go\n")
            process.stdin.flush()
            assert process.stdout.readline() == b"burnt\n"
        timeline = sampler.stop()  # its last sample counts the burns' ends
    finally:
        for child in psutil.Process(holder.pid).children():
            child.kill()
        for process in (holder, burner):
            process.kill()
            process.wait()
    samples = timeline["samples"]
    assert timeline["interval_s"] == 0.05 and len(samples) >= 2
    assert all(0.0 < seconds < 5 for _, seconds, _ in samples)
    assert [end for end, _, _ in samples] == sorted(end for end, _, _ in samples)
    total: dict[str, float] = {}
    for _, _, used in samples:
        for name, seconds in used.items():
            total[name] = total.get(name, 0.0) + seconds
    assert LEAST_BURN_S <= total["apiserver"] < 5
    assert LEAST_BURN_S <= total["sched: burner"] < 5
    assert total.get("sched: holder", 0.0) < 0.1  # it only waits
    assert "sched" not in total  # the scheduler's tree is counted only split by process


def test_a_nonpositive_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        cpu_timeline.Sampler({}, None, "x", interval=0)


def test_the_report_table_has_a_column_per_scheduler_and_phase() -> None:
    result = {"schedulers": {
        "trivial": {"cores_by_phase": {"creating": {"kube-apiserver": 1.1, "all": 1.9,
                                                    "seconds": 16.2}}},
        "gangsched": {"cores_by_phase": {
            "creating": {"kube-apiserver": 1.0, "gangsched: binder": 0.2, "all": 2.0,
                         "seconds": 22.9},
            "after creation": {"kube-apiserver": 0.85, "gangsched: binder": 0.28, "all": 1.97,
                               "seconds": 7.0}}},
        "kube-scheduler": {"error": "failed"},
    }}
    assert report.phase_table(result).splitlines() == [
        "| cores used | trivial, creating | gangsched, creating | gangsched, after creation |",
        "|---|---|---|---|",
        "| kube-apiserver | 1.10 | 1.00 | 0.85 |",
        "| gangsched: binder | - | 0.20 | 0.28 |",
        "| all | 1.90 | 2.00 | 1.97 |",
        "| seconds sampled | 16.2 | 22.9 | 7.0 |",
    ]
    assert report.phase_table({"schedulers": {"x": {"outcome": "complete"}}}) == ""


REAPER = ("import subprocess, sys\n"
          "subprocess.run(['child', '-c', sys.argv[1]], executable=sys.argv[2])\n"
          "print('reaped', flush=True)\n"
          "sys.stdin.readline()\n")
"""Runs a child that burns (`GATED_BURN` without its sleep), reaps it, says so, then waits."""
BURN_AND_EXIT = GATED_BURN.replace("time.sleep(60)\n", "")


def test_a_reaped_childs_cpu_is_not_counted_again_under_its_parent() -> None:
    reaper = subprocess.Popen(["reaper", "-c", REAPER, BURN_AND_EXIT, sys.executable],
                              executable=sys.executable, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)  # the child shares both pipes
    sampler = cpu_timeline.Sampler({}, reaper.pid, "sched", interval=0.05)
    try:
        deadline = time.monotonic() + 60
        while not psutil.Process(reaper.pid).children():
            assert time.monotonic() < deadline, "the reaper never started its child"
            time.sleep(0.02)
        time.sleep(0.3)  # the child runs its own program by now: named `child`
        sampler.start()
        assert reaper.stdin is not None and reaper.stdout is not None
        reaper.stdin.write(b"go\n")
        reaper.stdin.flush()
        assert reaper.stdout.readline() == b"burnt\n"
        assert reaper.stdout.readline() == b"reaped\n"
        timeline = sampler.stop()
    finally:
        reaper.kill()
        reaper.wait()
    total: dict[str, float] = {}
    for _, _, used in timeline["samples"]:
        for name, seconds in used.items():
            total[name] = total.get(name, 0.0) + seconds
    assert total.get("sched: child", 0.0) >= 0.2  # most of its burn, sampled while it ran
    assert total.get("sched: reaper", 0.0) < 0.1  # not its child's 0.3 s again
