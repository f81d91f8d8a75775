"""Readiness flags: the process is ready when every service said so."""

from __future__ import annotations

from services.runtime.health import Readiness


def test_readiness_waits_for_every_flag_handed_out() -> None:
    readiness = Readiness()
    planner, binder = readiness.flag("planner"), readiness.flag("binder")
    assert readiness.not_ready() == ["binder", "planner"]
    planner.set()
    binder.set()
    assert readiness.not_ready() == []
    planner.set(False)
    assert readiness.not_ready() == ["planner"]
    assert readiness.flag("planner") is planner


def test_a_process_without_services_is_ready() -> None:
    assert Readiness().not_ready() == []
