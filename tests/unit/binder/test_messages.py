"""User-facing texts of binds and rollbacks."""

from __future__ import annotations

from services.binder import messages
from services.contracts.decisions import Assignment


def test_scheduled_reads_like_kube_scheduler() -> None:
    member = Assignment("u", "ml", "w-0", "node-a")
    assert messages.scheduled(member) == "Successfully assigned ml/w-0 to node-a"


def test_groups_are_named_gang_or_pod() -> None:
    assert messages.group_label("ml/train") == "gang ml/train"
    assert messages.group_label("ml/pod:solo") == "pod ml/solo"


def test_a_rollback_names_the_gang_the_attempt_the_reason_and_what_was_undone() -> None:
    text = messages.rolled_back("ml/train", 2, "pod ml/w-3 was deleted", deleted=2, kept=1)
    assert text == (
        "gang ml/train: placement attempt 2 rolled back: pod ml/w-3 was deleted; "
        "2 bound members deleted for their controllers to recreate; "
        "1 bound member without a controller kept"
    )


def test_a_deadline_reason_says_how_far_binding_got() -> None:
    assert messages.deadline_passed(1, 3) == "deadline passed with 1 of 3 members bound"
    assert messages.deadline_passed(1, 3, "HTTP 503") == (
        "deadline passed with 1 of 3 members bound (last error: HTTP 503)"
    )


def test_the_preemption_texts_are_kube_schedulers_for_a_pod_or_a_podgroup() -> None:
    assert messages.preempting("gangsched", "ml/train") == (
        "gangsched: preempting to accommodate a higher priority podgroup")
    assert messages.preempting("gangsched", "ml/pod:solo") == (
        "gangsched: preempting to accommodate a higher priority pod")
    assert messages.preempted("ml/train", "pg-uid", "n1") == (
        "Preempted by podgroup pg-uid on node n1 (gangsched gang ml/train)")
    assert messages.preempted("ml/pod:solo", "pod-uid", "n2", "needs 4 CPU") == (
        "Preempted by pod pod-uid on node n2 (gangsched pod ml/solo): needs 4 CPU")
