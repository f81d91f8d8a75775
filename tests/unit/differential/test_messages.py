"""Parsing FailedScheduling messages into reason → node count maps (the differential test's
comparison), on messages as kube-scheduler v1.36 and gangsched write them."""

from __future__ import annotations

import pytest

from tests.e2e.differential import compare, messages

KUBE = ("0/24 nodes are available: 1 Insufficient cpu, 20 node(s) had untolerated taint(s), "
        "3 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to deallocate, "
        "preemption: 0/24 nodes are available: 24 Preemption is not helpful for scheduling.")


def test_a_kube_scheduler_message_stops_before_its_post_filter_part() -> None:
    parsed = messages.parse(KUBE)
    assert parsed == messages.NodeReasons(24, {
        "Insufficient cpu": 1, "node(s) had untolerated taint(s)": 20,
        "node(s) didn't satisfy plugin(s) [NodeAffinity]": 3})
    assert messages.filter_part(KUBE) == (
        "0/24 nodes are available: 1 Insufficient cpu, 20 node(s) had untolerated taint(s), "
        "3 node(s) didn't satisfy plugin(s) [NodeAffinity].")


def test_gangsched_notes_after_the_reasons_are_not_reasons() -> None:
    text = ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.; it would not fit even on "
            "nodes emptied of gangsched's pods, so it reserves no capacity")
    assert messages.parse(text) == messages.NodeReasons(3, {"Insufficient nvidia.com/gpu": 3})


def test_a_prefilter_message_has_no_counts() -> None:
    text = "0/24 nodes are available: pod affinity terms conflict. preemption: not helpful."
    assert messages.parse(text) == messages.NodeReasons(
        24, {"pod affinity terms conflict": messages.PREFILTER})


def test_other_text_is_no_fit_message() -> None:
    assert not messages.is_fit_message("unsupported constraint: spec.resourceClaims")
    with pytest.raises(messages.NotAFitMessage):
        messages.parse("pod is scheduling-gated (spec.schedulingGates)")


def test_same_counts_in_another_order_or_wording_differ_only_in_text() -> None:
    ours = ("0/24 nodes are available: 20 node(s) had untolerated taint(s), 1 Insufficient cpu, "
            "3 node(s) didn't satisfy plugin(s) [NodeAffinity].")
    assert compare.unschedulable_difference(KUBE, ours) == (
        "same reason counts, worded or ordered differently")
    assert compare.unschedulable_difference(KUBE, messages.filter_part(KUBE)) is None


def test_different_counts_name_what_differs() -> None:
    ours = ("0/24 nodes are available: 1 Insufficient cpu, 23 node(s) didn't match Pod's node "
            "affinity/selector.")
    assert compare.unschedulable_difference(KUBE, ours) == (
        "reason counts differ: kube-scheduler {'node(s) had untolerated taint(s)': 20, "
        "\"node(s) didn't satisfy plugin(s) [NodeAffinity]\": 3}, gangsched "
        "{\"node(s) didn't match Pod's node affinity/selector\": 23}")
    assert compare.unschedulable_difference(KUBE, "0/23 nodes are available: 1 Too many pods.") \
        == "node totals differ: kube-scheduler 24, gangsched 23"
