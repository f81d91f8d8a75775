"""The bench report's requests table: the API server's requests per bound pod, a column per
scheduler, rare kinds left out, the kinds the first scheduler sends most first; and its CPU
table: seconds until the run ended by process, the scheduler's own processes after them."""

from __future__ import annotations

from bench.cluster.report import cpu_table, requests_table


def test_requests_per_bound_pod_by_verb_and_resource() -> None:
    result = {"schedulers": {
        "gangsched": {"pods_bound": 100, "api_requests": {
            "POST pods/binding": 100, "GET podgroups": 74, "PATCH nodes": 1}},
        "kube-scheduler": {"pods_bound": 200, "api_requests": {"POST pods/binding": 200}},
        "broken": {"error": "did not start"},
    }}
    assert requests_table(result).splitlines() == [
        "| requests per bound pod | gangsched | kube-scheduler |",
        "|---|---|---|",
        "| POST pods/binding | 1.00 | 1.00 |",
        "| GET podgroups | 0.74 | 0.00 |",
        "| all | 1.75 | 1.00 |",
    ]


def test_the_time_reports_trailed_the_last_bind_is_shown_where_measured() -> None:
    result = {"schedulers": {
        "gangsched": {"pods_bound": 10, "api_requests": {"POST events": 10},
                      "reports_settled_s": 4.25},
        "kube-scheduler": {"pods_bound": 10, "api_requests": {"POST events": 10}},
    }}
    assert requests_table(result).splitlines()[-1] == (
        "| reports settled, s after the last bind | 4.2 | - |")


def test_cpu_until_the_run_ended_by_process_with_the_schedulers_own_processes() -> None:
    result = {"schedulers": {
        "gangsched": {"cpu_seconds_to_end": {"kube-apiserver": 10.0, "gangsched": 4.5},
                      "scheduler_cpu_seconds_by_process": {"to_end": {
                          "binder": 2.0, "planner": 1.0, "nats-server": 0.75}}},
        "kube-scheduler": {"cpu_seconds_to_end": {"kube-apiserver": 11.0,
                                                  "kube-scheduler": 3.25}},
        "older": {"cpu_seconds": {"kube-apiserver": 9.0}},
    }}
    assert cpu_table(result).splitlines() == [
        "| CPU s until the run ended | gangsched | kube-scheduler |",
        "|---|---|---|",
        "| kube-apiserver | 10.00 | 11.00 |",
        "| scheduler | 4.50 | 3.25 |",
        "| gangsched: binder | 2.00 | - |",
        "| gangsched: planner | 1.00 | - |",
        "| gangsched: nats-server | 0.75 | - |",
        "| all | 14.50 | 14.25 |",
    ]


def test_no_cpu_table_for_results_without_the_numbers() -> None:
    assert cpu_table({"schedulers": {"gangsched": {"cpu_seconds": {"gangsched": 1.0}}}}) == ""
