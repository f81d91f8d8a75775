"""The live check of a Preemption's victim: each skip rule, in order, and what passes."""

from __future__ import annotations

from typing import Any

import pytest

from services.binder.eviction import Skip, pod_priority, skip_reason
from services.contracts.decisions import Victim
from tests.unit.binder.fakes import make_pod

VICTIM = Victim(uid="uid-low", namespace="default", name="low", node="n1", group="default/v",
                priority=10)
PREEMPTOR_PRIORITY = 100


def live(**changes: Any) -> dict[str, Any]:
    """The victim's pod as the API server has it: bound to n1, Running, priority 10."""
    pod = make_pod("low", uid="uid-low", node="n1")
    pod["spec"]["priority"] = 10
    pod["status"]["phase"] = "Running"
    for path, value in changes.items():
        section, key = path.split("__")
        pod[section][key] = value
    return pod


def test_the_bound_lower_priority_pod_named_is_evicted() -> None:
    assert skip_reason(VICTIM, live(), PREEMPTOR_PRIORITY) is None


@pytest.mark.parametrize(("pod", "expected"), [
    (None, Skip.GONE),
    (live(metadata__uid="uid-recreated"), Skip.REPLACED),
    (live(spec__nodeName="n2"), Skip.MOVED),
    (live(spec__nodeName=None), Skip.MOVED),
    (live(status__phase="Succeeded"), Skip.FINISHED),
    (live(status__phase="Failed"), Skip.FINISHED),
    (live(metadata__deletionTimestamp="2026-12-01T15:00:00Z"), Skip.TERMINATING),
    (live(spec__priority=PREEMPTOR_PRIORITY), Skip.PRIORITY),
    (live(spec__priority=PREEMPTOR_PRIORITY + 1), Skip.PRIORITY),
], ids=["gone", "replaced", "other-node", "unbound", "succeeded", "failed", "terminating",
        "equal-priority", "higher-priority"])
def test_a_victim_that_is_no_longer_the_pod_named_is_skipped(
        pod: dict[str, Any] | None, expected: Skip) -> None:
    assert skip_reason(VICTIM, pod, PREEMPTOR_PRIORITY) is expected


def test_priority_is_read_live_not_from_the_decision() -> None:
    # the decision says 10, the pod now says 100: a stale decision evicts nothing
    raised = live(spec__priority=100)
    assert skip_reason(VICTIM, raised, 100) is Skip.PRIORITY
    assert skip_reason(VICTIM, raised, 101) is None


def test_a_pod_without_a_priority_has_priority_zero() -> None:
    pod = live()
    del pod["spec"]["priority"]
    assert pod_priority(pod) == 0
    assert skip_reason(VICTIM, pod, 1) is None
    assert skip_reason(VICTIM, pod, 0) is Skip.PRIORITY


def test_the_first_failing_rule_is_named() -> None:
    # replaced and terminating and higher priority: the uid is checked first
    pod = live(metadata__uid="other", metadata__deletionTimestamp="t", spec__priority=999)
    assert skip_reason(VICTIM, pod, PREEMPTOR_PRIORITY) is Skip.REPLACED
    pod = live(metadata__deletionTimestamp="t", spec__priority=999)
    assert skip_reason(VICTIM, pod, PREEMPTOR_PRIORITY) is Skip.TERMINATING
