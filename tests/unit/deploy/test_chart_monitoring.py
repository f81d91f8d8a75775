"""The Grafana dashboard and the PrometheusRule of the chart query only metrics gangsched
registers (services/runtime/metrics.py, and the leader gauge of services/runtime/election.py),
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

from services.runtime import election, metrics
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
    assert "gangsched_leader" in labels  # registered by importing services.runtime.election
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


def test_dashboard_and_rules_are_off_by_default() -> None:
    kinds = {(obj["kind"], obj["metadata"]["name"]) for obj in chart.render()}
    assert ("ConfigMap", f"{RELEASE}-dashboard") not in kinds
    assert not any(kind == "PrometheusRule" for kind, _ in kinds)


def dashboard(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The Grafana dashboard the rendered chart `objects` ship (its ConfigMap's JSON)."""
    config = chart.find(objects, "ConfigMap", f"{RELEASE}-dashboard")
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    loaded: dict[str, Any] = json.loads(config["data"]["gangsched.json"])
    return loaded


def _panels(node: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel of a dashboard or row, those of collapsed rows too."""
    return [found for panel in node.get("panels", []) for found in [panel, *_panels(panel)]]


_VARIABLE_QUERY = re.compile(r"^\s*(?:label_values\((.+),\s*\w+\s*\)|query_result\((.+)\))\s*$",
                             re.S)
"""The query variable functions of Grafana's Prometheus data source whose argument is PromQL."""


def dashboard_expressions(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression of `board`: each target of each panel, then the PromQL argument
    of each query variable (`label_values(SELECTOR, label)`, `query_result(EXPR)`)."""
    expressions = [target["expr"] for panel in _panels(board)
                   for target in panel.get("targets", []) if "expr" in target]
    for variable in board.get("templating", {}).get("list", []):
        query = variable.get("query")
        text = query.get("query", "") if isinstance(query, dict) else query or ""
        found = _VARIABLE_QUERY.match(text) if variable["type"] == "query" else None
        expressions += [found.group(1) or found.group(2)] if found else []
    return expressions


def test_the_dashboard_reads_only_registered_metrics(monitored: list[dict[str, Any]]) -> None:
    board = dashboard(monitored)
    assert board["uid"] == "gangsched"
    used = set().union(*map(_check_expression, dashboard_expressions(board)))
    assert used >= REQUIRED, REQUIRED - used
    assert all(panel["datasource"]["uid"] == "${datasource}" for panel in board["panels"]
               if panel["type"] != "row")


def test_the_alerts_read_only_registered_metrics(monitored: list[dict[str, Any]]) -> None:
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


def test_without_leader_election_no_leader_alert_is_rendered() -> None:
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


def test_the_rule_check_is_real_it_names_a_broken_expression(
        monitored: list[dict[str, Any]], tmp_path: Path) -> None:
    spec = chart.find(monitored, "PrometheusRule", RELEASE)["spec"]
    spec["groups"][0]["rules"][1]["expr"] = "sum by (consumer) (gangsched_consumer_lag"
    result = check_rules(spec, tmp_path / "rules.yaml")
    assert result.returncode == 1
    assert 'rule 2, "GangschedConsumerLagGrowing": could not parse expression: ' in result.stderr
    assert "parse error: unclosed left parenthesis" in result.stderr, result.stderr


def variable_values(board: dict[str, Any]) -> dict[str, str]:
    """A value for each template variable of `board` that a query can name, of the form Grafana
    substitutes: a multi-value or All selection as the regex `(a|b)`. Raises AssertionError for
    a variable type it knows no value for (teach it one when the dashboard gains such a one)."""
    values = {}
    for variable in board.get("templating", {}).get("list", []):
        kind = variable["type"]
        if kind in ("query", "custom"):
            values[variable["name"]] = ("(gangsched|monitoring)" if variable.get("multi")
                                        or variable.get("includeAll") else "gangsched")
        else:
            assert kind == "datasource", f"no value for the {kind} variable {variable['name']}"
    return values


def check_promql(expressions: list[str], values: dict[str, str],
                 path: Path) -> subprocess.CompletedProcess[str]:
    """promrules -promql on `expressions` (written to `path`), the variables set to `values`."""
    path.write_text(json.dumps(expressions))
    flags = [f"-var={name}={value}" for name, value in sorted(values.items())]
    return subprocess.run([str(promrules()), "-promql", *flags, str(path)],
                          capture_output=True, text=True, timeout=60, check=False)


def test_every_dashboard_expression_passes_prometheus_own_parser(
        monitored: list[dict[str, Any]], tmp_path: Path) -> None:
    board = dashboard(monitored)
    expressions = dashboard_expressions(board)
    assert len(expressions) == 30  # 29 panel targets and the namespace variable's selector
    assert variable_values(board) == {"namespace": "(gangsched|monitoring)"}
    result = check_promql(expressions, variable_values(board), tmp_path / "dashboard.json")
    assert (result.returncode, result.stdout, result.stderr) == (
        0, f"{tmp_path / 'dashboard.json'}: 30 expressions\n", "")


def test_the_promql_check_is_real_it_names_a_broken_dashboard_expression(
        monitored: list[dict[str, Any]], tmp_path: Path) -> None:
    board = dashboard(monitored)
    expressions = dashboard_expressions(board)
    broken = expressions.index('sum(rate(gangsched_rollbacks_total{namespace=~"$namespace"}[5m]))')
    expressions[broken] = 'sum(rate(gangsched_rollbacks_total{namespace=~"$namespace"}))'
    result = check_promql(expressions, variable_values(board), tmp_path / "dashboard.json")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"{tmp_path / 'dashboard.json'}: expression {broken + 1}, "
        '"sum(rate(gangsched_rollbacks_total{namespace=~\\"(gangsched|monitoring)\\"}))": '
        "1:10: parse error: expected type range vector in call to function \"rate\", got "
        "instant vector\n")


@pytest.mark.parametrize(("expression", "error"), [
    ("rate(gangsched_rollbacks_total[$__rate_interval])", None),
    ("rate(gangsched_rollbacks_total[${__range}] offset $__interval)", None),
    ("increase(gangsched_rollbacks_total[[[__range]]] @ ${__to:date:seconds})", None),
    ('topk($top, gangsched_consumer_lag{namespace=~"${namespace:regex}"})', None),
    ('label_replace(gangsched_leader, "to", "$1", "service", "(.*)")', None),  # kept as is
    ("rate(gangsched_rollbacks_total[$__rate_intervals])", "unexpected character in duration"),
    ("topk($bottom, gangsched_consumer_lag)", 'unexpected character: \'$\''),
])
def test_grafana_variables_are_replaced_as_grafana_does_before_parsing(
        tmp_path: Path, expression: str, error: str | None) -> None:
    result = check_promql([expression], {"top": "5", "namespace": "(a|b)"}, tmp_path / "q.json")
    if error is None:
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
    else:
        assert result.returncode == 1 and error in result.stderr, result.stderr


def test_the_chart_readme_is_generated_from_the_values() -> None:
    assert chart_readme.README.read_text() == chart_readme.readme_text(), (
        "deploy/chart/README.md is stale: run `python -m tests.support.chart_readme`")


def test_every_value_has_a_doc_comment() -> None:
    keys, missing = chart_readme.documented_keys(chart_readme.VALUES.read_text())
    assert missing == []
    assert {key.name for key in keys} >= {"settings.logLevel", "nats.networkPolicy.enabled",
                                          "watcher.priorityClassName"}
