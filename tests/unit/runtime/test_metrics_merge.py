"""One /metrics for `gangsched run`'s processes (`services.runtime.metrics_merge`)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from services.runtime.metrics_merge import merge

PARENT = """\
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1.5
# HELP gangsched_build_info This gangsched's version.
# TYPE gangsched_build_info gauge
gangsched_build_info{python="3.11.7",version="0.1.0"} 1.0
# HELP gangsched_task_restarts_total Supervised tasks restarted.
# TYPE gangsched_task_restarts_total counter
gangsched_task_restarts_total{task="planner"} 1.0
# HELP gangsched_preemptions_total Preemption decisions carried out.
# TYPE gangsched_preemptions_total counter
gangsched_preemptions_total 0.0
# HELP gangsched_preemptions_created Preemption decisions carried out.
# TYPE gangsched_preemptions_created gauge
gangsched_preemptions_created 300.0
# HELP gangsched_pending_pods Pods waiting.
# TYPE gangsched_pending_pods gauge
gangsched_pending_pods 0.0
"""

BINDER = """\
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 7.25
# HELP python_info Python platform information
# TYPE python_info gauge
python_info{implementation="CPython"} 1.0
# HELP gangsched_build_info This gangsched's version.
# TYPE gangsched_build_info gauge
gangsched_build_info{python="3.11.7",version="0.1.0"} 1.0
# HELP gangsched_task_restarts_total Supervised tasks restarted.
# TYPE gangsched_task_restarts_total counter
gangsched_task_restarts_total{task="binder"} 2.0
# HELP gangsched_preemptions_total Preemption decisions carried out.
# TYPE gangsched_preemptions_total counter
gangsched_preemptions_total 3.0
# HELP gangsched_preemptions_created Preemption decisions carried out.
# TYPE gangsched_preemptions_created gauge
gangsched_preemptions_created 200.0
# HELP gangsched_bind_duration_seconds Wall time to bind.
# TYPE gangsched_bind_duration_seconds histogram
gangsched_bind_duration_seconds_bucket{le="0.5"} 2.0
gangsched_bind_duration_seconds_bucket{le="+Inf"} 3.0
gangsched_bind_duration_seconds_count 3.0
gangsched_bind_duration_seconds_sum 1.25
# HELP gangsched_pending_pods Pods waiting.
# TYPE gangsched_pending_pods gauge
gangsched_pending_pods 0.0
"""

PLANNER = """\
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 20.0
# HELP gangsched_preemptions_total Preemption decisions carried out.
# TYPE gangsched_preemptions_total counter
gangsched_preemptions_total 0.0
# HELP gangsched_pending_pods Pods waiting.
# TYPE gangsched_pending_pods gauge
gangsched_pending_pods 42.0
# HELP gangsched_bind_duration_seconds Wall time to bind.
# TYPE gangsched_bind_duration_seconds histogram
gangsched_bind_duration_seconds_bucket{le="0.5"} 1.0
gangsched_bind_duration_seconds_bucket{le="+Inf"} 1.0
gangsched_bind_duration_seconds_count 1.0
gangsched_bind_duration_seconds_sum 0.25
"""


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text.decode())
            for s in family.samples}


def test_gangsched_samples_are_summed_over_the_processes_by_name_and_labels() -> None:
    merged = samples(merge(PARENT, {"binder": BINDER, "planner": PLANNER}))
    assert merged[("gangsched_preemptions_total", ())] == 3.0
    assert merged[("gangsched_pending_pods", ())] == 42.0
    assert merged[("gangsched_task_restarts_total", (("task", "planner"),))] == 1.0
    assert merged[("gangsched_task_restarts_total", (("task", "binder"),))] == 2.0
    assert merged[("gangsched_bind_duration_seconds_bucket", (("le", "0.5"),))] == 3.0
    assert merged[("gangsched_bind_duration_seconds_bucket", (("le", "+Inf"),))] == 4.0
    assert merged[("gangsched_bind_duration_seconds_count", ())] == 4.0
    assert merged[("gangsched_bind_duration_seconds_sum", ())] == 1.5


def test_created_times_take_the_earliest_and_build_info_is_the_parents_alone() -> None:
    merged = samples(merge(PARENT, {"binder": BINDER, "planner": PLANNER}))
    assert merged[("gangsched_preemptions_created", ())] == 200.0
    assert merged[("gangsched_build_info", (("python", "3.11.7"), ("version", "0.1.0")))] == 1.0
    assert not any(name == "python_info" for name, _ in merged)


def test_each_processs_own_metrics_keep_their_value_the_childrens_labelled_by_service() -> None:
    merged = samples(merge(PARENT, {"binder": BINDER, "planner": PLANNER}))
    cpu = {labels: value for (name, labels), value in merged.items()
           if name == "process_cpu_seconds_total"}
    assert cpu == {(): 1.5, (("service", "binder"),): 7.25, (("service", "planner"),): 20.0}


def test_with_no_children_the_parents_exposition_is_unchanged_in_value() -> None:
    assert samples(merge(PARENT, {})) == samples(PARENT.encode())
