"""The Grafana dashboard and the PrometheusRule of the chart query only metrics gangsched
registers (services/runtime/metrics.py, and the leader gauge of services/planner/election.py),
with the labels they carry; the rules pass Prometheus's own rule-file check (promrules, built
from the Prometheus module: the parsing and validation `promtool check rules` does); and the
chart README is generated from values.yaml."""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from services.planner import election
from services.runtime import metrics
from tests.cluster import fixture
from tests.support import chart_readme
from tests.unit.deploy import chart

RELEASE = chart.RELEASE
_IDENTIFIER = re.compile(r"\b(gangsched_[a-z_]+|process_[a-z_]+)\b")
_GROUPING = re.compile(r"\bby \(([^)]*)\)")
REQUIRED = {"gangsched_podgroups", "gangsched_kube_requests_total",
            "gangsched_task_restarts_total", "gangsched_build_info",
            "gangsched_preemptions_total", "gangsched_preemption_victims_total"}
"""Metrics the dashboard must show (docs/deploy.md, "Monitoring")."""


def _registry() -> dict[str, set[str]]:
    """Every sample name /metrics can serve → the labels of its samples."""
    labels = {wrapper._name: set(wrapper._labelnames)  # prometheus_client keeps them here
              for module in (metrics, election) for wrapper in vars(module).values()
              if isinstance(wrapper, MetricWrapperBase)}
    assert "gangsched_leader" in labels  # registered by importing services.planner.election
    names: dict[str, set[str]] = {}
    for family in metrics.REGISTRY.collect():  # families of labelled metrics without samples too
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
                    "info": ("_info",)}.get(family.type, ("",))
        own = labels.get(family.name, set()) | labels.get(family.name + "_total", set())
        own |= {label for sample in family.samples for label in sample.labels} - {"le"}
        for suffix in suffixes:
            names[family.name + suffix] = own | ({"le"} if suffix == "_bucket" else set())
    return names


REGISTERED = _registry()
SCRAPE_LABELS = {"namespace", "pod", "job", "instance", "service", "container", "endpoint"}
"""Labels a Prometheus scrape adds (besides the metrics' own)."""


def _check_expression(expression: str) -> set[str]:
    """The metric names `expression` reads; each must be registered, and each label it groups
    by must be one of theirs (or a scrape's)."""
    used = set(_IDENTIFIER.findall(expression))
    unknown = used - set(REGISTERED)
    assert not unknown, f"{expression}: {sorted(unknown)} not in the registry"
    labels = set().union(*(REGISTERED[name] for name in used)) | SCRAPE_LABELS
    for group in _GROUPING.findall(expression):
        grouped = {label.strip() for label in group.split(",") if label.strip()}
        assert grouped <= labels, f"{expression}: no label {sorted(grouped - labels)}"
    return used


@pytest.fixture(scope="module")
def monitored() -> list[dict[str, Any]]:
    return chart.render("metrics.dashboard.enabled=true", "metrics.prometheusRule.enabled=true",
                        "metrics.prometheusRule.alertLabels.team=scheduling")


def test_dashboard_and_rules_are_off_by_default():
    kinds = {(obj["kind"], obj["metadata"]["name"]) for obj in chart.render()}
    assert ("ConfigMap", f"{RELEASE}-dashboard") not in kinds
    assert not any(kind == "PrometheusRule" for kind, _ in kinds)


def test_the_dashboard_reads_only_registered_metrics(monitored):
    config = chart.find(monitored, "ConfigMap", f"{RELEASE}-dashboard")
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(config["data"]["gangsched.json"])
    assert dashboard["uid"] == "gangsched"
    expressions = [target["expr"] for panel in dashboard["panels"]
                   for target in panel.get("targets", [])]
    used = set().union(*map(_check_expression, expressions))
    assert used >= REQUIRED, REQUIRED - used
    assert all(panel["datasource"]["uid"] == "${datasource}" for panel in dashboard["panels"]
               if panel["type"] != "row")


def test_the_alerts_read_only_registered_metrics(monitored):
    rule = chart.find(monitored, "PrometheusRule", RELEASE)
    alerts = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    assert set(alerts) == {"GangschedNoLeaderPlanner", "GangschedConsumerLagGrowing",
                           "GangschedDeadLetters", "GangschedRollbacks", "GangschedTaskRestarts",
                           "GangschedPendingPodsNotDraining"}
    for alert in alerts.values():
        _check_expression(alert["expr"])
        assert f'namespace="{chart.NAMESPACE}"' in alert["expr"], alert["alert"]
        assert alert["labels"]["team"] == "scheduling"
    assert alerts["GangschedNoLeaderPlanner"]["labels"]["severity"] == "critical"
    assert "gangsched_leader{" in alerts["GangschedNoLeaderPlanner"]["expr"]


def test_without_leader_election_no_leader_alert_is_rendered():
    rule = chart.find(chart.render("metrics.prometheusRule.enabled=true",
                                   "planner.leaderElection.enabled=false",
                                   "metrics.selector=job=~\"gangsched-.*\""),
                      "PrometheusRule", RELEASE)
    alerts = {r["alert"]: r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]}
    assert "GangschedNoLeaderPlanner" not in alerts
    assert 'gangsched_rollbacks_total{job=~"gangsched-.*"}' in alerts["GangschedRollbacks"]


@functools.cache
def promrules() -> Path:
    """Prometheus's rule-file check (tests/cluster/promrules), from the testbed's tool cache."""
    return fixture.tool("promrules")


def check_rules(spec: dict[str, Any], path: Path) -> subprocess.CompletedProcess[str]:
    """promrules on a PrometheusRule's `spec` (a Prometheus rule file) written to `path`."""
    path.write_text(yaml.safe_dump(spec))
    return subprocess.run([str(promrules()), str(path)], capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.mark.parametrize(("values", "rules"), [
    (("metrics.prometheusRule.alertLabels.team=scheduling",), 6),
    (("planner.leaderElection.enabled=false", 'metrics.selector=job=~"gangsched-.*"'), 5),
    (('metrics.selector=namespace="a"\\, "service.name"!=\'x\'\\,',
      "metrics.prometheusRule.consumerLagThreshold=100000000",
      "metrics.prometheusRule.rollbacksPerHour=0.5",
      "metrics.prometheusRule.pendingMinutes=1"), 6),
])
def test_the_alert_rules_pass_prometheus_own_rule_check(tmp_path: Path, values: tuple[str, ...],
                                                        rules: int) -> None:
    rule = chart.find(chart.render("metrics.prometheusRule.enabled=true", *values),
                      "PrometheusRule", RELEASE)
    result = check_rules(rule["spec"], tmp_path / "rules.yaml")
    assert (result.returncode, result.stdout, result.stderr) == (
        0, f"{tmp_path / 'rules.yaml'}: {rules} rules\n", "")


def test_the_rule_check_is_real_it_names_a_broken_expression(monitored, tmp_path: Path):
    spec = chart.find(monitored, "PrometheusRule", RELEASE)["spec"]
    spec["groups"][0]["rules"][1]["expr"] = "sum by (consumer) (gangsched_consumer_lag"
    result = check_rules(spec, tmp_path / "rules.yaml")
    assert result.returncode == 1
    assert 'rule 2, "GangschedConsumerLagGrowing": could not parse expression: ' in result.stderr
    assert "parse error: unclosed left parenthesis" in result.stderr, result.stderr


def test_the_chart_readme_is_generated_from_the_values():
    assert chart_readme.README.read_text() == chart_readme.readme_text(), (
        "deploy/chart/README.md is stale: run `python -m tests.support.chart_readme`")


def test_every_value_has_a_doc_comment():
    keys, missing = chart_readme.documented_keys(chart_readme.VALUES.read_text())
    assert missing == []
    assert {key.name for key in keys} >= {"settings.logLevel", "nats.networkPolicy.enabled",
                                          "watcher.priorityClassName"}
