"""The chart's hardening objects: PodDisruptionBudgets, priority classes, the topology spread of
replicas, the NATS NetworkPolicy, the PodGroup roles aggregated into view/edit/admin, and the
admission policy warning about constraints gangsched refuses (from the watcher's code).
tests/e2e/test_deploy_hardening.py has the API server accept them and the policy warn.
"""

from __future__ import annotations

import ast
import fnmatch
import inspect
from typing import Any

import pytest
import yaml

from services.watcher import slim
from tests.unit.deploy import chart, unsupported

RELEASE = chart.RELEASE
Objects = list[dict[str, Any]]
HA = ("nats.replicas=3", "planner.replicas=2", "binder.replicas=2",
      "database.type=postgresql", "database.postgresql.url=postgresql+asyncpg://u:p@db/g")
"""The HA values (tests/e2e/test_deploy.py applies the same)."""
COMPONENTS = {"watcher": "Deployment", "planner": "Deployment", "binder": "Deployment",
              "nats": "StatefulSet"}


@pytest.fixture(scope="module")
def rendered() -> Objects:
    return chart.render()


@pytest.fixture(scope="module")
def ha() -> Objects:
    return chart.render(*HA, "watcher.priorityClassName=gangsched-critical",
                        "nats.networkPolicy.subscriberNamespaces[0]=ml",
                        'nats.networkPolicy.monitorFrom[0].namespaceSelector.matchLabels.'
                        'kubernetes\\.io/metadata\\.name=monitoring')


def _pod(objects: Objects, component: str) -> dict[str, Any]:
    template: dict[str, Any] = chart.find(objects, COMPONENTS[component],
                                          f"{RELEASE}-{component}")["spec"]["template"]
    return template


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a label selector (matchLabels, matchExpressions In/NotIn/Exists) picks `labels`."""
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        value, operator = labels.get(expression["key"]), expression["operator"]
        if operator == "In" and value not in expression["values"]:
            return False
        if operator == "NotIn" and value in expression["values"]:
            return False
        if operator == "Exists" and value is None:
            return False
    return True


# --- PodDisruptionBudgets ---------------------------------------------------------------------


def test_single_replicas_get_no_disruption_budget(rendered: Objects) -> None:
    assert [obj for obj in rendered if obj["kind"] == "PodDisruptionBudget"] == []


def test_nats_quorum_and_the_standby_planner_survive_a_drain(ha: Objects) -> None:
    budgets = {obj["metadata"]["name"]: obj["spec"] for obj in ha
               if obj["kind"] == "PodDisruptionBudget"}
    assert set(budgets) == {f"{RELEASE}-nats", f"{RELEASE}-planner", f"{RELEASE}-binder"}
    for component in ("nats", "planner", "binder"):
        spec = budgets[f"{RELEASE}-{component}"]
        assert spec["maxUnavailable"] == 1
        labels = _pod(ha, component)["metadata"]["labels"]
        assert _selects(spec["selector"], labels)
        others = [c for c in COMPONENTS if c != component]
        assert not any(_selects(spec["selector"], _pod(ha, c)["metadata"]["labels"])
                       for c in others)


# --- priority and spread ----------------------------------------------------------------------


def test_no_priority_class_by_default_and_each_component_its_own(
        rendered: Objects, ha: Objects) -> None:
    assert all("priorityClassName" not in _pod(rendered, c)["spec"] for c in COMPONENTS)
    assert _pod(ha, "watcher")["spec"]["priorityClassName"] == "gangsched-critical"
    assert all("priorityClassName" not in _pod(ha, c)["spec"]
               for c in ("planner", "binder", "nats"))


def test_replicas_are_spread_softly_across_nodes_by_default(rendered: Objects) -> None:
    for component in COMPONENTS:
        pod = _pod(rendered, component)
        [constraint] = pod["spec"]["topologySpreadConstraints"]
        assert constraint["topologyKey"] == "kubernetes.io/hostname"
        assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"
        assert constraint["maxSkew"] == 1
        assert _selects(constraint["labelSelector"], pod["metadata"]["labels"])
        assert constraint.get("matchLabelKeys") == (
            None if component == "nats" else ["pod-template-hash"])


def test_a_components_own_spread_replaces_the_default() -> None:
    own = {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
           "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"a": "b"}}}
    objects = chart.render(f"binder.topologySpreadConstraints[0].maxSkew={own['maxSkew']}",
                           f"binder.topologySpreadConstraints[0].topologyKey={own['topologyKey']}",
                           "binder.topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
                           "binder.topologySpreadConstraints[0].labelSelector.matchLabels.a=b",
                           "topologySpread.enabled=false")
    assert _pod(objects, "binder")["spec"]["topologySpreadConstraints"] == [own]
    assert "topologySpreadConstraints" not in _pod(objects, "planner")["spec"]


# --- NetworkPolicy ----------------------------------------------------------------------------


def _ingress(objects: Objects) -> dict[str, list[dict[str, Any]]]:
    """NATS port name → the peers allowed to it."""
    policy = chart.find(objects, "NetworkPolicy", f"{RELEASE}-nats")
    assert _selects(policy["spec"]["podSelector"], _pod(objects, "nats")["metadata"]["labels"])
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    peers: dict[str, list[dict[str, Any]]] = {}
    for rule in policy["spec"]["ingress"]:
        for port in rule["ports"]:
            peers.setdefault(port["port"], []).extend(rule["from"])
    return peers


def test_nats_clients_are_only_the_gangsched_pods_and_routes_only_nats(rendered: Objects) -> None:
    peers = _ingress(rendered)
    assert set(peers) == {"client", "cluster"}  # no monitorFrom: the monitor port is closed
    [clients] = peers["client"]
    assert set(clients) == {"podSelector"}  # this namespace only
    for component in COMPONENTS:
        labels = _pod(rendered, component)["metadata"]["labels"]
        assert _selects(clients["podSelector"], labels) is (component != "nats")
    assert not _selects(clients["podSelector"], {**_pod(rendered, "binder")["metadata"]["labels"],
                                                 "app.kubernetes.io/instance": "other"})
    [routes] = peers["cluster"]
    assert set(routes) == {"podSelector"}
    for component in COMPONENTS:
        labels = _pod(rendered, component)["metadata"]["labels"]
        assert _selects(routes["podSelector"], labels) is (component == "nats")


def test_subscriber_namespaces_and_the_monitoring_selector_are_the_operators(ha: Objects) -> None:
    peers = _ingress(ha)
    subscribers = [peer for peer in peers["client"] if "namespaceSelector" in peer]
    assert subscribers == [{"namespaceSelector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml"]}]}}]
    assert peers["monitor"] == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}]


# --- aggregated roles -------------------------------------------------------------------------

AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


def _verbs(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_users_of_view_read_podgroups_and_of_edit_and_admin_manage_them(rendered: Objects) -> None:
    view = chart.find(rendered, "ClusterRole", f"{RELEASE}-podgroups-view")
    edit = chart.find(rendered, "ClusterRole", f"{RELEASE}-podgroups-edit")
    assert {k for k, v in view["metadata"]["labels"].items() if k.startswith(AGGREGATE)
            and v == "true"} == {AGGREGATE + role for role in ("view", "edit", "admin")}
    assert {k for k, v in edit["metadata"]["labels"].items() if k.startswith(AGGREGATE)
            and v == "true"} == {AGGREGATE + role for role in ("edit", "admin")}
    group = "scheduling.x-k8s.io"
    assert _verbs(view) == {(group, resource, verb) for resource in ("podgroups",
                                                                     "podgroups/status")
                            for verb in ("get", "list", "watch")}
    assert _verbs(edit) == {(group, "podgroups", verb) for verb in
                            ("create", "update", "patch", "delete", "deletecollection")}
    off = chart.render("rbac.aggregateToDefaultRoles=false")
    assert not any("podgroups-" in obj["metadata"]["name"] for obj in off
                   if obj["kind"] == "ClusterRole")


# --- admission policy -------------------------------------------------------------------------


def test_the_constraints_file_is_current() -> None:
    assert unsupported.FILE.read_text() == unsupported.file_text(), (
        "deploy/chart/files/unsupported-constraints.yaml is stale: run "
        "`python -m tests.unit.deploy.unsupported`")


def test_each_constraint_is_refused_by_the_watcher_for_its_own_field_only() -> None:
    listed = yaml.safe_load(unsupported.FILE.read_text())
    assert listed, "the watcher refuses nothing: drop the policy"
    for candidate in unsupported.CANDIDATES:
        fields = slim.pod_event(unsupported.example_pod(candidate), at_ms=0).unsupported
        assert set(fields) <= {candidate.field}, (candidate.field, fields)
    plain = {**unsupported.example_pod(unsupported.CANDIDATES[0]),
             "spec": {"containers": [{"name": "main", "image": "fake"}]}}
    assert slim.pod_event(plain, at_ms=0).unsupported == ()


def _spelled(expression: ast.expr, loops: dict[str, tuple[str, ...]]) -> list[str]:
    """The field paths a string expression of slim.py spells: a constant is itself; in an
    f-string, a name bound by an enclosing comprehension over a tuple of slim's takes each of
    its values, a string constant of slim's (`_REQUIRED`) is
    itself, and anything else (a parameter such as `field`) is `*`. Anything but a string
    expression fails the test: `found` may then hold fields the scan cannot see."""
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return [expression.value]
    assert isinstance(expression, ast.JoinedStr), (
        f"slim.py line {expression.lineno}: a field that is not a string literal: "
        f"teach _spelled to read {ast.unparse(expression)!r}")
    spelled = [""]
    for part in expression.values:
        if isinstance(part, ast.Constant):
            choices: tuple[str, ...] = (str(part.value),)
        else:
            assert isinstance(part, ast.FormattedValue)
            name = part.value.id if isinstance(part.value, ast.Name) else ""
            constant = getattr(slim, name, None) if name else None
            choices = (loops[name] if name in loops
                       else (constant,) if isinstance(constant, str) else ("*",))
        spelled = [prefix + choice for prefix in spelled for choice in choices]
    return spelled


def _loop_values(comprehension: ast.GeneratorExp | ast.ListComp) -> dict[str, tuple[str, ...]]:
    """The names a comprehension binds to the strings of a module-level tuple of slim's."""
    loops = {}
    for generator in comprehension.generators:
        values = getattr(slim, generator.iter.id, None) if isinstance(
            generator.iter, ast.Name) else None
        if (isinstance(generator.target, ast.Name) and isinstance(values, tuple)
                and all(isinstance(value, str) for value in values)):
            loops[generator.target.id] = values
    return loops


def _field_patterns() -> list[str]:
    """The field paths slim.py adds to its `found` lists of unsupported parts
    (`found.append(...)`, `found.extend(...)`, `found += ...`), expanded as `_spelled` does
    (e.g. `spec.resourceClaims`, `*.namespaceSelector`). `found` lists of objects
    (host ports, claims: a call appended) are skipped; a way of adding fields the scan does not
    know fails the test rather than hiding them."""
    tree = ast.parse(inspect.getsource(slim))
    patterns = []
    for node in ast.walk(tree):
        added: list[ast.expr] = []
        is_append = False
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "found"):
            assert node.func.attr in ("append", "extend"), (
                f"slim.py line {node.lineno}: found.{node.func.attr}: teach _field_patterns")
            added, is_append = node.args, node.func.attr == "append"
        elif (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)
                and node.target.id == "found"):
            added = [node.value]
        for expression in added:
            if is_append:
                if not isinstance(expression, ast.Call):  # an object: host port, claim
                    patterns += _spelled(expression, {})
            elif isinstance(expression, (ast.GeneratorExp, ast.ListComp)):
                patterns += _spelled(expression.elt, _loop_values(expression))
            else:
                assert isinstance(expression, (ast.List, ast.Tuple)), (
                    f"slim.py line {expression.lineno}: fields added as "
                    f"{ast.unparse(expression)!r}: teach _field_patterns to read them")
                for element in expression.elts:
                    patterns += _spelled(element, {})
    return patterns


def test_the_scan_sees_each_way_slim_adds_a_field() -> None:
    patterns = _field_patterns()
    assert sorted(set(patterns)) == [
        "*.labelSelector", "*.namespaceSelector", "spec.resourceClaims"]


def test_every_field_the_watcher_refuses_has_a_policy_warning() -> None:
    patterns = _field_patterns()
    assert patterns, "slim.py no longer adds to `found`: update _field_patterns"
    warned = [entry["field"] for entry in unsupported.constraints()]
    for pattern in patterns:
        covered = (pattern in warned if "*" not in pattern else
                   any(fnmatch.fnmatchcase(field, pattern.replace("[]", "[[]]"))
                       for field in warned))
        assert covered or pattern in unsupported.REFUSED_BY_THE_API_SERVER, (
            f"slim.py refuses {pattern!r} but the admission policy does not warn about it: "
            f"add it to tests/unit/deploy/unsupported.CANDIDATES and run "
            f"`python -m tests.unit.deploy.unsupported`")


def test_every_policy_warning_is_a_field_the_watcher_refuses() -> None:
    patterns = [pattern.replace("[]", "[[]]") for pattern in _field_patterns()]
    for entry in yaml.safe_load(unsupported.FILE.read_text()):
        assert any(fnmatch.fnmatchcase(entry["field"], pattern) for pattern in patterns), (
            entry["field"])


def test_the_policy_warns_and_audits_pods_of_gangsched_with_each_constraint(
        rendered: Objects) -> None:
    policy = chart.find(rendered, "ValidatingAdmissionPolicy",
                        f"{RELEASE}-unsupported-constraints")["spec"]
    assert policy["matchConstraints"]["resourceRules"] == [{
        "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
        "resources": ["pods"]}]
    assert policy["matchConditions"] == [{
        "name": "scheduled-by-gangsched",
        "expression": 'has(object.spec.schedulerName) && object.spec.schedulerName == '
                      '"gangsched"'}]
    listed = unsupported.constraints()
    assert [v["expression"] for v in policy["validations"]] == [
        f"!({c['uses']})" for c in listed]
    assert [v["message"] for v in policy["validations"]] == [
        f"schedulerName gangsched: gangsched will keep this pod Pending ({c['reason']})"
        for c in listed]
    binding = chart.find(rendered, "ValidatingAdmissionPolicyBinding",
                         f"{RELEASE}-unsupported-constraints")["spec"]
    assert binding == {"policyName": f"{RELEASE}-unsupported-constraints",
                       "validationActions": ["Warn", "Audit"]}


def test_the_policy_follows_the_scheduler_name_and_can_be_turned_off() -> None:
    renamed = chart.render("settings.schedulerName=gang-2")
    policy = chart.find(renamed, "ValidatingAdmissionPolicy",
                        f"{RELEASE}-unsupported-constraints")["spec"]
    assert policy["matchConditions"][0]["expression"].endswith('== "gang-2"')
    off = chart.render("admissionPolicy.enabled=false")
    assert not any(obj["kind"].startswith("ValidatingAdmissionPolicy") for obj in off)
