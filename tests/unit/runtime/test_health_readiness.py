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


def test_a_hold_keeps_a_set_flag_not_ready_until_released_and_names_its_reason() -> None:
    readiness = Readiness()
    planner = readiness.flag("planner")
    planner.set()
    planner.hold("NATS disconnected")
    planner.hold("NATS disconnected")  # idempotent
    assert readiness.described() == ["planner (NATS disconnected)"]
    planner.set()  # the service saying it is ready does not undo the hold
    assert not planner.is_ready
    planner.release("NATS disconnected")
    assert planner.is_ready and readiness.not_ready() == []


def test_a_release_does_not_make_an_unset_flag_ready() -> None:
    flag = Readiness().flag("binder")
    flag.hold("stream gone")
    flag.release("stream gone")
    flag.release("never held")
    assert not flag.is_ready


def test_a_flag_held_only_for_given_reasons_drops_the_others() -> None:
    readiness = Readiness()
    planner, binder = readiness.flag("planner"), readiness.flag("binder")
    planner.set()
    binder.set()
    planner.hold("NATS disconnected")
    binder.hold("consumer binder: stream GANGSCHED_DECISIONS gone")
    assert readiness.holds() == ["NATS disconnected",
                                 "consumer binder: stream GANGSCHED_DECISIONS gone"]
    planner.hold_only(["cannot reach the database x", "NATS disconnected"])
    assert planner.holds == ["NATS disconnected", "cannot reach the database x"]
    planner.hold_only([])
    binder.hold_only(())
    assert readiness.holds() == [] and readiness.not_ready() == []
