"""The health server on a real loopback port: /healthz, /readyz, /metrics."""

from __future__ import annotations

import aiohttp
import pytest

from services.runtime import metrics
from services.runtime.health import HealthServer, Readiness

pytestmark = pytest.mark.integration


async def test_health_endpoints_report_alive_ready_and_metrics() -> None:
    readiness = Readiness()
    flag = readiness.flag("planner")
    server = HealthServer(readiness, port=0)
    port = await server.start()
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/healthz") as response:
                assert response.status == 200
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 503
                assert "planner" in await response.text()
            flag.set()
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 200
            metrics.dead_letters.labels("planner").inc()
            async with session.get(f"{base}/metrics") as response:
                text = await response.text()
                assert response.headers["Content-Type"].startswith("text/plain")
    finally:
        await server.stop()
    for name in (
        "gangsched_scheduling_attempt_duration_seconds_bucket",
        "gangsched_schedule_attempts_total",
        "gangsched_pending_pods",
        "gangsched_dead_letters_total{consumer=\"planner\"}",
        "gangsched_bind_duration_seconds_bucket",
        "gangsched_podgroup_scheduling_duration_seconds_bucket",
        "gangsched_rollbacks_total",
        "gangsched_preemptions_total",
        "gangsched_preemption_victims_total",
        "gangsched_build_info{",
        "gangsched_task_restarts_total",
        "gangsched_kube_requests_total",
        "gangsched_podgroups",
        "process_cpu_seconds_total",
    ):
        assert name in text


async def test_a_port_in_use_is_one_clear_error_naming_it() -> None:
    import socket

    from services.runtime.health import PortUnavailable

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        with pytest.raises(PortUnavailable) as raised:
            await HealthServer(Readiness(), host="127.0.0.1", port=port).start()
    finally:
        taken.close()
    assert str(raised.value).startswith(
        f"cannot serve /healthz, /readyz and /metrics on 127.0.0.1:{port}: ")
    assert str(raised.value).endswith("; give another --http-port (-1: none)")
