"""`gangsched run` as processes (to use every core): watcher, planner and binder each in a child of
the `run` process, which SIGTERM stops with all of them (exit 0), which restarts a child that
dies, and whose death, even by SIGKILL, leaves no process behind.

The API server of the kubeconfig is unreachable (the services wait for it), so run.json is
never written; the parent's HTTP address is the one its log names (the children's endpoints,
which only the parent reads, are logged at DEBUG).
"""

from __future__ import annotations

import re
import signal
import urllib.request
from pathlib import Path

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.test_run_locked_down import KUBECONFIG, stop
from tests.support.gangsched_process import GangschedRun
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

SERVICES = ("watcher", "planner", "binder")


def launched(tmp_path: Path, *extra: str) -> GangschedRun:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    run = GangschedRun(kubeconfig, tmp_path / "data", *extra)
    run.launch()
    return run


def started(run: GangschedRun) -> dict[str, int]:
    """The pid of each service's process, from the log, once all three started."""
    def pids() -> dict[str, int] | None:
        assert run.process is not None and run.process.poll() is None, run.log_tail()
        found = dict(re.findall(r"(\w+) process (\d+) started", run.log_tail(400)))
        return {name: int(found[name]) for name in SERVICES} if set(SERVICES) <= set(found) \
            else None

    found = eventually(pids, timeout=90, interval=0.2, what="three service processes")
    assert found is not None  # `eventually` returns only a truthy value
    return found


def descendants(run: GangschedRun) -> list[psutil.Process]:
    assert run.process is not None
    return psutil.Process(run.process.pid).children(recursive=True)


def gone(processes: list[psutil.Process]) -> bool:
    return all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in processes)


def http_address(run: GangschedRun) -> str:
    match = eventually(lambda: re.search(r"health endpoints on (http://\S+)", run.log_tail(400)),
                       timeout=60, interval=0.2, what="the parent's health endpoints")
    assert match is not None  # `eventually` returns only a truthy value
    return match.group(1)


def samples(address: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_each_service_runs_in_its_own_process_and_sigterm_stops_them_all(tmp_path: Path) -> None:
    run = launched(tmp_path)
    try:
        pids = started(run)
        processes = descendants(run)
        assert {p.pid for p in processes} >= set(pids.values())
        assert sum("nats-server" in " ".join(p.cmdline()) for p in processes) == 1
        assert {name: psutil.Process(pid).cmdline()[1:] for name, pid in pids.items()} == {
            name: ["-m", "services.cli.child", name] for name in ("watcher", "planner", "binder")}
    finally:
        code = stop(run)
    assert code == 0, run.log_tail()
    assert gone(processes)
    assert not (run.data_dir / "run.json").exists()
    assert not (run.data_dir / "nats-credentials.json").exists()


def test_a_service_process_that_dies_is_restarted_and_counted(tmp_path: Path) -> None:
    run = launched(tmp_path)
    try:
        address = http_address(run)
        planner = started(run)["planner"]
        psutil.Process(planner).send_signal(signal.SIGKILL)
        again = eventually(
            lambda: [int(p) for p in re.findall(r"planner process (\d+) started",
                                               run.log_tail(400)) if int(p) != planner],
            timeout=60, interval=0.2, what="a new planner process")
        assert psutil.Process(again[0]).is_running()
        assert "planner process exited on SIGKILL; restarting it in 0.5s" in run.log_tail(400)
        metrics = eventually(lambda: _with_every_service(samples(address)), timeout=60,
                             interval=0.5, what="the new planner's metrics merged")
        assert metrics is not None  # `eventually` returns only a truthy value
        assert metrics[("gangsched_task_restarts_total", (("task", "planner"),))] == 1.0
        # every child serves its own endpoints (merged above), yet the log names one address
        assert re.findall(r"health endpoints on (http://\S+)", run.log_tail(400)) == [address]
        assert metrics[("gangsched_build_info", (("python", _python()),
                                                 ("version", _version())))] == 1.0
    finally:
        code = stop(run)
    assert code == 0, run.log_tail()


def test_a_killed_run_leaves_no_process_behind(tmp_path: Path) -> None:
    run = launched(tmp_path)
    started(run)
    processes = descendants(run)
    assert len(processes) == 4  # nats-server, watcher, planner, binder
    assert run.process is not None
    run.process.kill()
    run.process.wait()
    eventually(lambda: gone(processes), timeout=30, interval=0.2,
               what="every child of the killed run ended")


def test_single_process_runs_the_services_in_the_run_process(tmp_path: Path) -> None:
    run = launched(tmp_path, "--single-process")
    try:
        http_address(run)
        eventually(lambda: "services.watcher" in run.log_tail(400), timeout=60, interval=0.2,
                   what="the watcher running")
        names = [" ".join(p.cmdline()) for p in descendants(run)]
        assert len(names) == 1 and "nats-server" in names[0], names
    finally:
        code = stop(run)
    assert code == 0, run.log_tail()


def _with_every_service(metrics: dict[tuple[str, tuple[tuple[str, str], ...]], float]
                        ) -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
    """`metrics` once every service's process metrics are merged in (the new planner's, and
    any child whose first scrape did not answer within the scrape timeout on a busy
    machine: a child contributes nothing until it has answered once)."""
    wanted = {("process_cpu_seconds_total", (("service", name),)) for name in SERVICES}
    return metrics if wanted <= set(metrics) else None


def _python() -> str:
    import platform

    return platform.python_version()


def _version() -> str:
    from services import __version__

    return __version__
