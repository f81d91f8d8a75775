"""The bench report's requests table: the API server's requests per bound pod, a column per
scheduler, rare kinds left out, the kinds the first scheduler sends most first; and its CPU
table: seconds until the run ended by process, the scheduler's own processes after them; and
with more than one round, pods/s by round and the median same-round ratio; and pods/s counting
only pods of gangs bound whole."""

from __future__ import annotations

from typing import Any

from bench.cluster.report import cpu_table, requests_table, rounds_table, whole_gangs_line


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


def _rounds_result(rates: dict[str, list[Any]]) -> dict[str, Any]:
    """A result of len(rates[...]) rounds with these pods/s (an exception: a failed run)."""
    count = len(next(iter(rates.values())))
    rounds = [{"schedulers": {
        name: {"error": "did not start"} if isinstance(values[n], Exception)
        else {"pods_per_s": values[n]} for name, values in rates.items()}, "ratios": {}}
        for n in range(count)]
    return {"schedulers": rounds[0]["schedulers"], "rounds": rounds, "ratio_summary": {
        "kube-scheduler": {"pods_per_s": [3.0, 2.5, 1.5], "median": 2.5, "min": 1.5, "max": 3.0},
        "trivial": {"pods_per_s": [None, None, None], "median": None, "min": None, "max": None},
        "coscheduling": {"pods_per_s": [1.0, 1.2, 1.1], "median": 1.1, "min": 1.0, "max": 1.2}}}


def test_pods_per_s_by_round_with_the_median_and_the_median_ratio() -> None:
    result = _rounds_result({"trivial": [100.0, RuntimeError(), 90.0],
                             "gangsched": [150.0, 100.0, 90.0],
                             "kube-scheduler": [50.0, 40.0, 60.0],
                             "coscheduling": [None, None, None]})
    assert rounds_table(result).splitlines() == [
        "| pods/s by round | round 1 | round 2 | round 3 | median |",
        "|---|---|---|---|---|",
        "| trivial | 100.0 | - | 90.0 | 95.0 |",
        "| gangsched | 150.0 | 100.0 | 90.0 | 100.0 |",
        "| kube-scheduler | 50.0 | 40.0 | 60.0 | 50.0 |",
        "| coscheduling | - | - | - | - |",
        "",
        "gangsched / other, pods/s, median of same-round ratios over 3 rounds (min-max): "
        "kube-scheduler 2.5 (1.5-3.0), coscheduling 1.1 (1.0-1.2).",
    ]


def test_no_rounds_table_for_one_round() -> None:
    one = {"schedulers": {"gangsched": {"pods_per_s": 1.0}}}
    assert rounds_table(one) == ""
    assert rounds_table(one | {"rounds": [one | {"ratios": {}}]}) == ""


def test_pods_of_gangs_left_partial_are_not_counted_in_whole_gang_pods_per_s() -> None:
    result = {"schedulers": {
        "gangsched": {"pods_bound": 500, "pods_in_partial_gangs_at_end": 0, "makespan_s": 4.0},
        "kube-scheduler": {"pods_bound": 500, "pods_in_partial_gangs_at_end": 490,
                           "makespan_s": 2.0},
        "broken": {"error": "did not start"},
        "older": {"pods_bound": 10, "makespan_s": 1.0},
    }}
    assert whole_gangs_line(result) == (
        "Pods/s of gangs bound whole (and singletons): gangsched 125.0, kube-scheduler 5.0. "
        "gangsched / other: kube-scheduler 25.000.")
    assert whole_gangs_line({"schedulers": {"older": {"pods_bound": 1, "makespan_s": 1.0}}}) == ""

    none_whole = {"schedulers": {
        "gangsched": {"pods_bound": 30, "pods_in_partial_gangs_at_end": 0, "makespan_s": 3.0},
        "kube-scheduler": {"pods_bound": 40, "pods_in_partial_gangs_at_end": 40,
                           "makespan_s": 2.0}}}
    assert whole_gangs_line(none_whole) == (
        "Pods/s of gangs bound whole (and singletons): gangsched 10.0, kube-scheduler 0.0. "
        "gangsched / other: kube-scheduler (no whole gang).")
