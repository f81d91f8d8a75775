"""The bench report's requests table: the API server's requests per bound pod, a column per
scheduler, rare kinds left out, the kinds the first scheduler sends most first."""

from __future__ import annotations

from bench.cluster.report import requests_table


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
