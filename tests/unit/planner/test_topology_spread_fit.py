"""PodTopologySpread's filter, one node at a time (`services.fit.topology_spread`) and over every
node at once (`planner.core.spread`): the two agree, with the plugin's own values.

Each case is a cluster (nodes with labels; existing pods with their node, labels, namespace)
and an incoming pod in namespace `default` labelled `foo=""`; the expected verdict per node is
P (passes), S (skew: "node(s) didn't match pod topology spread constraints") or M (missing
required label). Cases follow kube-scheduler's filtering_test.go semantics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from services.contracts.events import NodeObserved, NodeSelectorRequirement, PodObserved, Taint
from services.fit import reasons, topology_spread
from services.planner.core import capacity, spread
from services.planner.core.capacity import NodeIndex
from tests.unit.planner.builders import PodBuilder, make_node, make_pod

FOO = (NodeSelectorRequirement("foo", "Exists"),)
BAR = (NodeSelectorRequirement("bar", "Exists"),)
VERDICT = {"P": None, "S": reasons.SPREAD_CONSTRAINTS_MISMATCH, "M": reasons.SPREAD_MISSING_LABEL}
CODE = {"P": spread.PASSES, "S": spread.SKEW, "M": spread.MISSING_LABEL}

NodeSpec = tuple[str, dict[str, str]]
"""A node's name and labels."""
PodSpec = tuple[str, dict[str, str], str]
"""An existing pod's node, labels and namespace ("deleting": terminating, in `default`)."""
Selector = tuple[NodeSelectorRequirement, ...] | None
SpreadSpec = tuple[str, int, Selector, dict[str, Any]]
"""A constraint's topology key, maxSkew, selector and other fields."""


def zones(*names_zones: str) -> list[NodeSpec]:
    """Nodes `name:zone` each with `zone` and `node` labels."""
    return [(name, {"zone": zone, "node": name}) for name, zone in
            (item.split(":") for item in names_zones)]


FOUR = zones("node-a:zone1", "node-b:zone1", "node-x:zone2", "node-y:zone2")


def on(*nodes: str, namespace: str = "default", labels: dict[str, str] | None = None
       ) -> list[PodSpec]:
    return [(node, {"foo": ""} if labels is None else labels, namespace) for node in nodes]


def incoming(*constraints: SpreadSpec, labels: dict[str, str] | None = None) -> PodBuilder:
    pod = make_pod("p").labelled(**({"foo": ""} if labels is None else labels))
    for key, skew, selector, fields in constraints:
        pod = pod.spread(key, max_skew=skew, selector=selector, **fields)
    return pod


def zone(skew: int = 1, selector: Selector = FOO, **fields: Any) -> SpreadSpec:
    return ("zone", skew, selector, fields)


def host(skew: int = 1, selector: Selector = FOO, **fields: Any) -> SpreadSpec:
    return ("node", skew, selector, fields)


CASES = [
    ("no existing pods", incoming(zone()), FOUR, [], "PPPP"),
    ("the incoming pod does not match itself", incoming(zone(selector=BAR)), FOUR, [], "PPPP"),
    ("pods of other namespaces do not count", incoming(zone()), FOUR,
     on("node-a", namespace="ns1") + on("node-a", namespace="ns2") + on("node-x", "node-y"),
     "PPSS"),
    ("a null selector matches no pod", incoming(zone(selector=None)), FOUR,
     on("node-x", "node-y"), "PPPP"),
    ("an empty selector counts no pod, the pod itself matches", incoming(zone(selector=())),
     FOUR, on("node-x", "node-y", "node-y"), "PPPP"),
    ("3/3 across zones: every node fits", incoming(zone()), FOUR,
     on("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"), "PPPP"),
    ("a node without the key is refused and its pods are not counted", incoming(zone()),
     [("node-a", {"zone": "zone1"}), ("node-b", {"zon": "zone1"}),
      ("node-x", {"zone": "zone2"}), ("node-y", {"zone": "zone2"})],
     on("node-a", "node-b", "node-x", "node-y"), "PMSS"),
    ("no node has the key", incoming(("rack", 1, FOO, {})), FOUR[:2], [], "MM"),
    ("2/1/0/3 across nodes: only the empty one fits", incoming(host()), FOUR,
     on("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"), "SSPS"),
    ("2/1/0/3 across nodes, maxSkew 2", incoming(host(2)), FOUR,
     on("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"), "SPPS"),
    ("terminating pods do not count", incoming(host()), FOUR,
     [*on("node-a"), ("node-b", {"foo": ""}, "deleting")], "SPPP"),
    ("two constraints: zone first, then host", incoming(zone(), host()), FOUR,
     on("node-a", "node-y", "node-y"), "SPSS"),
    ("the first failing constraint gives the reason", incoming(("rack", 1, FOO, {}), zone()),
     [("node-a", {"zone": "zone1", "rack": "r"}), ("node-x", {"zone": "zone2"})],
     on("node-a"), "PM"),
    ("a node missing one constraint's key drops out of every count", incoming(zone(), host()),
     [("node-a", {"zone": "zone1", "node": "node-a"}), ("node-b", {"zone": "zone1"}),
      ("node-x", {"zone": "zone2", "node": "node-x"})],
     on("node-b", "node-b"), "PMP"),
    ("minDomains above the domain count makes the global minimum 0",
     incoming(zone(min_domains=3)), FOUR, on("node-a", "node-x"), "SSSS"),
    ("minDomains met: the real minimum", incoming(zone(min_domains=2)), FOUR,
     on("node-a", "node-x"), "PPPP"),
    ("matchLabelKeys narrow the selector with the pod's value",
     incoming(zone(selector=FOO, match_label_keys=("job",)), labels={"foo": "", "job": "1"}),
     FOUR, [*on("node-a", labels={"foo": "", "job": "2"}),
            *on("node-x", labels={"foo": "", "job": "1"})], "PPSS"),
]


def _nodes(spec: list[NodeSpec], taints: Mapping[str, tuple[Taint, ...]] | None = None
           ) -> list[NodeObserved]:
    taints = taints or {}
    return [make_node(name).labels(**labels)._with(taints=taints.get(name, ())).build()
            for name, labels in spec]


def _existing(spec: list[PodSpec]) -> list[PodObserved]:
    pods = []
    for number, (node, labels, namespace) in enumerate(spec):
        pod = make_pod(f"e{number}", namespace="default" if namespace == "deleting"
                       else namespace).labelled(**labels).on_node(node)
        pods.append((pod.deleting() if namespace == "deleting" else pod).build())
    return pods


def _scalar(pod: PodObserved, nodes: list[NodeObserved], existing: list[PodObserved]
            ) -> list[str | None]:
    by_name = {node.name: node for node in nodes}
    counts = topology_spread.Counts(pod, nodes)
    for other in existing:
        assert other.node_name is not None
        counts.add(other, by_name[other.node_name])
    return [topology_spread.topology_spread(counts, node.labels) for node in nodes]


def _vector(pod: PodObserved, nodes: list[NodeObserved], existing: list[PodObserved]
            ) -> tuple[list[int], NodeIndex]:
    index = capacity.build({node.name: node for node in nodes}, {})
    for other in existing:
        index.set_pod(other.uid, other.node_name, other, is_ours=False)
    return spread.Counted(index, pod).verdicts().tolist(), index


@pytest.mark.parametrize(("name", "pod", "nodes", "existing", "expected"), CASES,
                         ids=[case[0] for case in CASES])
def test_the_filter_gives_the_plugins_verdict_on_every_node(name: str, pod: PodBuilder,
                                                             nodes: list[NodeSpec],
                                                             existing: list[PodSpec],
                                                             expected: str) -> None:
    built_nodes = _nodes(nodes)
    built_pod, pods = pod.build(), _existing(existing)
    assert _scalar(built_pod, built_nodes, pods) == [VERDICT[v] for v in expected]
    codes, index = _vector(built_pod, built_nodes, pods)
    by_row = dict(zip(index.names, codes, strict=True))
    assert [by_row[node.name] for node in built_nodes] == [CODE[v] for v in expected]


TAINTED = {"node-b": (Taint("dedicated", "NoSchedule", "x"),)}


@pytest.mark.parametrize(("policies", "expected"), [
    ({}, "SSPP"),  # taints Ignore: node-b's zone1 counts, pods there too
    ({"node_taints_policy": "Honor"}, "SPPP"),  # node-b left out: its pod is not counted
])
def test_node_taints_policy_honor_leaves_out_nodes_with_untolerated_taints(
        policies: dict[str, Any], expected: str) -> None:
    pod = incoming(host(**policies)).build()
    nodes = _nodes(FOUR, TAINTED)
    existing = _existing(on("node-a", "node-b"))
    assert _scalar(pod, nodes, existing) == [VERDICT[v] for v in expected]
    codes, _ = _vector(pod, nodes, existing)
    assert codes == [CODE[v] for v in expected]


@pytest.mark.parametrize(("policies", "expected"), [
    ({}, "PPPP"),  # affinity Honor: only zone1 (2 pods) is a domain; 2 + 1 - 2 fits
    ({"node_affinity_policy": "Ignore"}, "SSPP"),  # zone2 (1 pod) counts: the minimum is 1
])
def test_node_affinity_policy_decides_which_domains_count(policies: dict[str, Any],
                                                          expected: str) -> None:
    pod = incoming(zone(**policies)).selector(zone="zone1").build()
    nodes = _nodes(FOUR)
    existing = _existing(on("node-a", "node-b", "node-y"))
    assert _scalar(pod, nodes, existing) == [VERDICT[v] for v in expected]
    codes, _ = _vector(pod, nodes, existing)
    assert codes == [CODE[v] for v in expected]


def test_match_label_keys_merge_as_kube_scheduler_merges_them() -> None:
    labels = {"job": "1"}
    assert topology_spread.merged_selector(FOO, ("job", "absent"), labels) == (
        NodeSelectorRequirement("job", "In", ("1",)), *FOO)
    assert topology_spread.merged_selector(None, ("job",), labels) is None
    assert topology_spread.merged_selector((), ("job",), labels) == (
        NodeSelectorRequirement("job", "In", ("1",)),)
    assert topology_spread.merged_selector(FOO, ("absent",), labels) == FOO


def test_only_do_not_schedule_constraints_filter() -> None:
    pod = make_pod("p").labelled(foo="").spread("zone", when="ScheduleAnyway").build()
    assert not topology_spread.is_spread(pod) and topology_spread.spreads(pod) == ()
    assert len(topology_spread.spreads(pod, topology_spread.SCHEDULE_ANYWAY)) == 1
