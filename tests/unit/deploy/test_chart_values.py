"""The chart's values are checked before anything renders: values.schema.json (types, choices,
ranges, no unknown keys) and the templates' `fail` guards for combinations the schema cannot
express. Each bad value must make `helm template` (so `helm install`) fail with a line naming it.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import click
import pytest
import yaml

from services.cli.main import app
from services.contracts.subjects import MAX_PREFIX_LENGTH
from tests.unit.deploy import chart

SCHEMA = json.loads((chart.CHART / "values.schema.json").read_text())
VALUES = yaml.safe_load((chart.CHART / "values.yaml").read_text())
POSTGRES = ("database.type=postgresql", "database.postgresql.url=postgresql+asyncpg://u:p@db/g")

BAD_VALUES = [
    (("settings.logLevel=LOUD",), "at '/settings/logLevel': value must be one of 'DEBUG'"),
    (("settings.prefix=a b",), "at '/settings/prefix': 'a b' does not match pattern"),
    (("settings.logLevl=INFO",), "at '/settings': additional properties 'logLevl' not allowed"),
    (("nats.replicas=2",), "at '/nats/replicas': value must be one of 1, 3, 5"),
    (("nats.streamReplicas=2",), "at '/nats/streamReplicas': value must be one of 0, 1, 3, 5"),
    (("settings.batchSize=0",), "at '/settings/batchSize': minimum: got 0, want 1"),
    (("settings.bindConcurrency=0",), "at '/settings/bindConcurrency': minimum: got 0, want 1"),
    (("settings.batchSize=10001",), "at '/settings/batchSize': maximum: got 10,001, want 10,000"),
    (("settings.bindConcurrency=257",), "at '/settings/bindConcurrency': maximum: got 257, want"),
    (("settings.searchBudgetSteps=10001",),
     "at '/settings/searchBudgetSteps': maximum: got 10,001, want 10,000"),
    (("settings.maxPlacementsInFlight=10001",),
     "at '/settings/maxPlacementsInFlight': maximum: got 10,001, want 10,000"),
    (("settings.snapshotIntervalEvents=10000001",),  # helm writes it 1.0000001 x 10^7
     "at '/settings/snapshotIntervalEvents': maximum: got 1.0000001"),
    (("settings.defaultTimeoutSeconds=0",), "at '/settings/defaultTimeoutSeconds': minimum"),
    (("settings.searchBudgetSteps=-1",), "at '/settings/searchBudgetSteps': minimum"),
    (("settings.tickSeconds=0",), "at '/settings/tickSeconds': minimum: got 0, want 0.1"),
    (("settings.tickSeconds=-1",), "at '/settings/tickSeconds': minimum"),
    (("settings.tickSeconds=61",), "at '/settings/tickSeconds': maximum: got 61, want 60"),
    (("settings.tickSeconds=0.05",), "at '/settings/tickSeconds'"),  # --set: a string
    (("settings.tickSeconds=60.5",), "at '/settings/tickSeconds'"),
    (("planner.leaderElection.retrySeconds=0.05",),
     "at '/planner/leaderElection/retrySeconds'"),
    (("settings.batchLingerSeconds=10.5",), "at '/settings/batchLingerSeconds'"),
    (("settings.prefix=" + "p" * 245,), "at '/settings/prefix'"),  # <prefix>_DEADLETTER > 255
    (("settings.nominationSeconds=0",), "at '/settings/nominationSeconds': minimum: got 0, want 1"),
    (("settings.batchLingerSeconds=11",), "at '/settings/batchLingerSeconds': maximum: got 11"),
    (("planner.leaderElection.retrySeconds=0",),
     "at '/planner/leaderElection/retrySeconds': minimum: got 0, want 0.1"),
    (("settings.eventIntervalSeconds=-1",), "at '/settings/eventIntervalSeconds': minimum"),
    (("settings.starvationSeconds=soon",), "at '/settings/starvationSeconds': 'soon' does not"),
    (("settings.scoring=random",), "at '/settings/scoring': value must be one of"),
    (("settings.groupApis=apps",), "at '/settings/groupApis': 'apps' does not match pattern"),
    (("metrics.selector=job",), "at '/metrics/selector': 'job' does not match pattern"),
    (('metrics.selector=job=="x"',), "at '/metrics/selector': 'job==\"x\"' does not match"),
    (('metrics.selector=job="x"} or vector(1) or {a="b"',), "at '/metrics/selector': "),
    (("settings.preferTopology=maybe",), "at '/settings/preferTopology': got string, want boolean"),
    (("metrics.port=99999",), "at '/metrics/port': maximum: got 99,999, want 65,535"),
    (("nats.port=0",), "at '/nats/port': minimum: got 0, want 1"),
    (("watcher.replicas=0",), "at '/watcher/replicas': minimum: got 0, want 1"),
    (("planner.leaderElection.leaseSeconds=0",), "at '/planner/leaderElection/leaseSeconds'"),
    (("database.type=mysql",), "at '/database/type': value must be one of 'sqlite', 'postgresql'"),
    (("nats.enabled=false", "nats.url=ftp://x"), "at '/nats/url': 'ftp://x' does not match"),
    (("nats.networkPolicy.subscriberNamespace[0]=ml",),
     "at '/nats/networkPolicy': additional properties 'subscriberNamespace' not allowed"),
    (("topologySpread.whenUnsatisfiable=Never",), "at '/topologySpread/whenUnsatisfiable'"),
    (("watcher.priorityClassName=Not_A_Name",), "at '/watcher/priorityClassName'"),
    (("bogus=1",), "at '': additional properties 'bogus' not allowed"),
    (("settings.schedulerName=My_Sched",), "at '/settings/schedulerName': 'My_Sched' does not "
                                           "match pattern"),
    (("settings.schedulerLeaseNamespace=kube.system",), "at '/settings/schedulerLeaseNamespace'"),
    # what the planner refuses as --topology-key (the pod would restart for ever), and the
    # binder as --scheduler-name without the Lease (no event could name it)
    (("settings.topologyKey=bad key!",),
     "at '/settings/topologyKey': 'bad key!' does not match pattern"),
    (("settings.topologyKey=" + "p" * 254 + "/zone",), "at '/settings/topologyKey'"),
    (("settings.schedulerName=Bad Name!", "settings.schedulerLease=false"),
     "at '/settings/schedulerName': 'Bad Name!' does not match pattern"),
    (("topologySpread.topologyKey=bad key!",), "at '/topologySpread/topologyKey'"),
    # the templates' guards
    (("planner.replicas=2", *POSTGRES, "planner.leaderElection.enabled=false"),
     "planner.replicas=2 needs planner.leaderElection.enabled=true"),
    (("planner.replicas=2",), "planner.replicas > 1 needs database.type=postgresql"),
    (("planner.leaderElection.retrySeconds=7",),
     "planner.leaderElection.retrySeconds (7) must be shorter than 2/3 of leaseSeconds (10)"),
    (("nats.streamReplicas=3",),
     "nats.streamReplicas=3 needs at least as many NATS servers (nats.replicas=1)"),
    (("nats.networkPolicy.subscriberNamespaces[0]=ml", "nats.auth.subscriber.enabled=false"),
     "nats.networkPolicy.subscriberNamespaces needs nats.auth.subscriber.enabled=true"),
    (("settings.backoffInitialSeconds=120",),  # the planner would refuse it at every start
     "settings.backoffMaxSeconds (60) must be at least settings.backoffInitialSeconds (120)"),
    (("settings.backoffInitialSeconds=1000000.5", "settings.backoffMaxSeconds=1000000.4"),
     "settings.backoffMaxSeconds (1000000.4) must be at least settings.backoffInitialSeconds "
     "(1000000.5)"),
]


@pytest.mark.parametrize(("values", "message"), BAD_VALUES, ids=[v[0][-1] for v in BAD_VALUES])
def test_a_bad_value_fails_the_install_with_a_line_naming_it(values: tuple[str, ...],
                                                             message: str) -> None:
    with pytest.raises(subprocess.CalledProcessError) as refused:
        chart.render_text(*values)
    assert message in refused.value.stderr, refused.value.stderr
    assert "panic" not in refused.value.stderr and "goroutine" not in refused.value.stderr


def test_fractional_seconds_given_with_set_reach_the_settings() -> None:
    objects = chart.render("settings.tickSeconds=0.5", "planner.leaderElection.retrySeconds=0.5")
    settings = chart.find(objects, "ConfigMap", f"{chart.RELEASE}-settings")["data"]
    assert settings["GANGSCHED_TICK_SECONDS"] == "0.5"
    env = chart.container_env(objects, "Deployment", f"{chart.RELEASE}-planner")
    assert env["GANGSCHED_LEADER_RETRY_SECONDS"] == "0.5"


def test_a_backoff_cap_equal_to_the_first_backoff_is_taken() -> None:
    objects = chart.render("settings.backoffInitialSeconds=2.5", "settings.backoffMaxSeconds=2.5")
    settings = chart.find(objects, "ConfigMap", f"{chart.RELEASE}-settings")["data"]
    assert (settings["GANGSCHED_BACKOFF_INITIAL_SECONDS"],
            settings["GANGSCHED_BACKOFF_MAX_SECONDS"]) == ("2.5", "2.5")


def _options() -> dict[str, click.Option]:
    """GANGSCHED_* variable → its option, over the watcher, planner and binder commands."""
    return {str(param.envvar): param for command in ("watcher", "planner", "binder")
            for param in app.commands[command].params if isinstance(param, click.Option)}


def _variable(key: str) -> str:
    return "GANGSCHED_" + re.sub(r"(?<!^)(?=[A-Z])", "_", key).upper()


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return _resolve(SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]])
    if "anyOf" in node:  # a number, or the same number written as a string (--set 0.5)
        return _resolve(node["anyOf"][0])
    return node


def _schema_from_option(option: click.Option) -> dict[str, Any]:
    """The JSON Schema an option's click type and range amount to."""
    kind = option.type
    if option.is_flag:
        return {"type": "boolean"}
    if isinstance(kind, click.Choice):
        choices = list(kind.choices)
        return {"enum": choices if kind.case_sensitive else
                choices + [str(c).lower() for c in choices]}
    if isinstance(kind, click.IntRange | click.FloatRange):
        schema: dict[str, Any] = {"type": "integer" if isinstance(kind, click.IntRange)
                                  else "number"}
        if kind.min is not None:
            schema["exclusiveMinimum" if kind.min_open else "minimum"] = kind.min
        if kind.max is not None:
            schema["exclusiveMaximum" if kind.max_open else "maximum"] = kind.max
        return schema
    return {"type": "string"}


CHART_SET = {"GANGSCHED_NATS", "GANGSCHED_NATS_USER", "GANGSCHED_NATS_PASSWORD",
             "GANGSCHED_NATS_PASSWORD_FILE", "GANGSCHED_NATS_CREDS", "GANGSCHED_DB",
             "GANGSCHED_DATA_DIR", "GANGSCHED_HTTP_HOST", "GANGSCHED_HTTP_PORT",
             "GANGSCHED_STREAM_REPLICAS", "GANGSCHED_LEADER_ELECTION",
             "GANGSCHED_LEADER_LEASE_SECONDS", "GANGSCHED_LEADER_RETRY_SECONDS",
             "GANGSCHED_DECISION_KEY_FILE", "GANGSCHED_KUBECONFIG", "GANGSCHED_CONTEXT"}
"""Options the chart sets from its other sections (or a pod does not use), not `settings`."""


def test_every_service_option_is_a_setting_or_set_by_the_chart() -> None:
    settings = {_variable(key) for key in SCHEMA["properties"]["settings"]["properties"]}
    assert settings == set(_options()) - CHART_SET
    assert set(VALUES["settings"]) == set(SCHEMA["properties"]["settings"]["properties"])


@pytest.mark.parametrize("key", sorted(VALUES["settings"]))
def test_each_setting_has_its_options_type_range_and_default(key: str) -> None:
    option = _options()[_variable(key)]
    wanted = _schema_from_option(option)
    node = _resolve(SCHEMA["properties"]["settings"]["properties"][key])
    assert {name: node[name] for name in wanted if name in node} == wanted, node
    assert not set(node) & {"minimum", "maximum", "exclusiveMinimum"} - set(wanted), (
        f"the chart is stricter than `--{option.name}`")
    default = option.default if not isinstance(option.type, click.Choice) else str(
        option.default)
    assert VALUES["settings"][key] == default


STRINGS = ["0", "00", "0.0", ".0", "0.", "0.0004", "0.001", "0.0010", ".001", "0.05", "0.099",
           "0.1", ".1", "0.10", "010", "09", "00.5", "1", "1.", "1.5", "9.99", "10", "10.0",
           "10.01", "59.9", "60", "60.00", "60.5", "61", "3600.0", "1000000000",
           "1000000000.5", "2000000000", "", "-1", "abc"]
"""Values as `--set` gives fractional (and zero-led) numbers: strings, which the schema's
string branches must take exactly when the option does."""


def _string_pattern(node: dict[str, Any]) -> str | None:
    if "$ref" in node:
        return _string_pattern(SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]])
    for branch in node.get("anyOf", []):
        if branch.get("type") == "string":
            return str(branch["pattern"])
    return None


def _takes(option: click.Option, text: str) -> bool:
    try:
        option.type.convert(text, option, None)
    except click.BadParameter:
        return False
    return True


@pytest.mark.parametrize("key", sorted(key for key, node in SCHEMA["properties"]["settings"][
    "properties"].items() if _string_pattern(node) is not None))
def test_a_settings_string_form_is_taken_exactly_when_its_option_takes_it(key: str) -> None:
    pattern = _string_pattern(SCHEMA["properties"]["settings"]["properties"][key])
    assert pattern is not None
    option = _options()[_variable(key)]
    differ = [text for text in STRINGS
              if bool(re.fullmatch(pattern, text)) != _takes(option, text)]
    assert differ == [], f"{key}: the schema and `--{option.name}` disagree on {differ}"


@pytest.mark.parametrize(("key", "variable"), [("leaseSeconds", "GANGSCHED_LEADER_LEASE_SECONDS"),
                                               ("retrySeconds", "GANGSCHED_LEADER_RETRY_SECONDS")])
def test_the_lease_timings_string_form_matches_their_options(key: str, variable: str) -> None:
    node = SCHEMA["properties"]["planner"]["properties"]["leaderElection"]["properties"][key]
    pattern = _string_pattern(node)
    assert pattern is not None
    option = _options()[variable]
    differ = [text for text in STRINGS
              if bool(re.fullmatch(pattern, text)) != _takes(option, text)]
    assert differ == [], f"{key}: the schema and `--{option.name}` disagree on {differ}"


def test_the_longest_prefix_the_streams_allow_renders() -> None:
    chart.render_text("settings.prefix=" + "p" * MAX_PREFIX_LENGTH)


def _closed_objects(node: dict[str, Any], path: str = "") -> list[str]:
    """Paths of the schema's objects that declare properties but accept any other key."""
    node = _resolve(node)
    found = []
    if "properties" in node and node.get("additionalProperties") is not False:
        found.append(path or "/")
    for name, child in node.get("properties", {}).items():
        found += _closed_objects(child, f"{path}/{name}")
    return found


def test_every_object_with_known_keys_refuses_others() -> None:
    assert _closed_objects(SCHEMA) == []


def _leaves(values: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(values, dict) and values:
        return [leaf for name, child in values.items() for leaf in _leaves(child, (*path, name))]
    return [path]


def test_every_value_is_typed_in_the_schema() -> None:
    untyped = []
    for path in _leaves(VALUES):
        node = SCHEMA
        for name in path:
            node = _resolve(node)
            if "properties" not in node:
                break  # a free-form object (resources, securityContext): typed as object
            node = node["properties"].get(name, {})
        node = _resolve(node)
        if not ({"type", "enum"} & set(node)):
            untyped.append(".".join(path))
    assert untyped == []


LABEL_KEYS = ["topology.kubernetes.io/zone", "zone", "Zone_1.a-b", "z" * 63, "z" * 64, "",
              "bad key!", "-zone", "zone-", "/zone", "zone/", "a/b/c", "Example.com/zone",
              "example.com/" + "z" * 63, "p" * 253 + "/zone", "p" * 254 + "/zone", "a..b/zone",
              "a.b/z", "a_b/z"]


def test_a_label_key_is_taken_exactly_when_the_planner_takes_it() -> None:
    from services.contracts import names

    node = SCHEMA["$defs"]["qualifiedName"]

    def takes(text: str) -> bool:
        return bool(re.fullmatch(node["pattern"], text)) and not re.search(
            node["not"]["pattern"], text)

    assert [key for key in LABEL_KEYS if takes(key) != names.is_label_name(key)] == []
    for where in (SCHEMA["properties"]["settings"]["properties"]["topologyKey"],
                  SCHEMA["properties"]["settings"]["properties"]["schedulerName"],
                  SCHEMA["properties"]["topologySpread"]["properties"]["topologyKey"]):
        assert where == {"$ref": "#/$defs/qualifiedName"}


def test_a_scheduler_name_no_lease_could_carry_is_taken_without_the_lease() -> None:
    rendered = chart.render("settings.schedulerName=My_Sched", "settings.schedulerLease=false")
    settings = chart.find(rendered, "ConfigMap", f"{chart.RELEASE}-settings")["data"]
    assert (settings["GANGSCHED_SCHEDULER_NAME"], settings["GANGSCHED_SCHEDULER_LEASE"]) == (
        "My_Sched", "false")
    role = chart.find(rendered, "ClusterRole", f"{chart.RELEASE}-binder")
    assert not [rule for rule in role["rules"] if rule["resources"] == ["leases"]]
