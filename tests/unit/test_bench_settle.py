"""What the benchmark waits for after the last bind: the scheduler's trailing reports."""

from __future__ import annotations

from bench.cluster.run import report_writes


def test_only_first_writes_of_events_group_and_pod_status_are_reports() -> None:
    totals = {"POST events": 10, "PATCH events": 2, "PATCH podgroups/status": 3,
              "GET podgroups": 7, "POST pods/binding": 50, "PUT leases": 9,
              "PATCH pods/status": 40, "LIST events": 1, "POST podgroupsx": 1,
              "PATCH pods": 5}
    assert report_writes(totals) == {"POST events": 10, "PATCH podgroups/status": 3,
                                     "PATCH pods/status": 40}
