"""Slimming API objects into events: requests as kube-scheduler computes them, constraints,
unsupported fields, invalid quantities, and nothing the planner does not need."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.events import (
    HostPort,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OwnerRef,
    PodAffinityTerm,
    PodClaim,
    Taint,
    Toleration,
    WeightedPodAffinityTerm,
)
from services.contracts.quantity_syntax import FORMAT_WRONG
from services.watcher import slim

MI = 2**20


def pod(spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    metadata = {"name": "p", "namespace": "ml", "uid": "u1", "resourceVersion": "7", **meta}
    base = {"schedulerName": "gangsched", "containers": [{"name": "c"}]}
    return {"metadata": metadata, "spec": {**base, **(spec or {})}, "status": {"phase": "Pending"}}


def container(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None,
              **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **extra}


def test_app_containers_are_summed_and_pods_is_one() -> None:
    event = slim.pod_event(pod({"containers": [container({"cpu": "500m", "memory": "1Gi"}),
                                               container({"cpu": "1"})]}), 5)
    assert event.requests == {"cpu": 1500, "memory": 2**30, "pods": 1}


def test_limits_stand_in_for_missing_requests() -> None:
    event = slim.pod_event(pod({"containers": [container({"cpu": "100m"},
                                                         {"cpu": "1", "memory": "64Mi"})]}), 0)
    assert event.requests == {"cpu": 100, "memory": 64 * MI, "pods": 1}


def test_init_containers_count_as_the_max_and_sidecars_add() -> None:
    spec = {
        "initContainers": [container({"cpu": "2"}),
                           container({"cpu": "200m", "memory": "10Mi"}, restartPolicy="Always"),
                           container({"cpu": "1"})],
        "containers": [container({"cpu": "500m"})],
        "overhead": {"cpu": "50m"},
    }
    # app 500m + sidecar 200m = 700m; init max(2, 200m, 1 + 200m) = 2; plus overhead 50m
    assert slim.pod_event(pod(spec), 0).requests == {"cpu": 2050, "memory": 10 * MI, "pods": 1}


def test_an_invalid_quantity_marks_the_pod_invalid_instead_of_raising() -> None:
    event = slim.pod_event(pod({"containers": [container({"cpu": "lots"})]}), 0)
    assert event.invalid_reason is not None
    assert event.invalid_reason == (
        f"spec.containers[0].resources.requests.cpu: invalid quantity 'lots': {FORMAT_WRONG}")
    assert event.requests == {"pods": 1}


def test_pod_fields_are_carried() -> None:
    obj = pod({
        "priority": 1000, "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
        "schedulingGates": [{"name": "wait"}],
    }, labels={"scheduling.x-k8s.io/pod-group": "train"}, creationTimestamp="1970-01-01T00:00:02Z",
        ownerReferences=[{"kind": "Job", "name": "j", "uid": "ju", "controller": True}],
        deletionTimestamp="1970-01-01T00:00:03Z", annotations={"secret": "x"})
    event = slim.pod_event(obj, 9000)
    assert (event.namespace, event.name, event.uid) == ("ml", "p", "u1")
    assert event.resource_version == "7"
    assert event.group_name == "train" and event.priority == 1000
    assert event.created_at_ms == 2000
    assert event.node_selector == {"disk": "ssd"}
    assert event.tolerations == (Toleration(key="gpu", operator="Exists", effect="NoSchedule"),)
    assert event.required_affinity is not None
    assert event.required_affinity[0].match_expressions == (
        NodeSelectorRequirement("zone", "In", ("a",)),)
    assert event.is_scheduling_gated and event.is_deleting
    assert event.owner == OwnerRef(kind="Job", name="j", uid="ju")
    assert "secret" not in msgspec.json.encode(event).decode()


def test_defaults_for_a_bare_pod() -> None:
    event = slim.pod_event({"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c"}]}},
                           1234)
    assert event.scheduler_name == "default-scheduler"
    assert event.phase == "Pending" and event.namespace == "default"
    assert event.created_at_ms == 1234 and event.required_affinity is None


@pytest.mark.parametrize(("spec", "field"), [
    ({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "namespaceSelector": {"matchExpressions": [
            {"key": "team", "operator": "In"}]}}]}}},  # In without values: the API refuses it
     "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[]"
     ".namespaceSelector"),
    ({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchExpressions": [
            {"key": "app", "operator": "Gt", "values": ["1"]}]}}]}}},
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[]"
     ".labelSelector"),
    ({"resourceClaims": [{"name": "gpu"}]}, "spec.resourceClaims"),
])
def test_hard_constraints_not_implemented_are_listed(spec: dict[str, Any], field: str) -> None:
    assert slim.pod_event(pod(spec), 0).unsupported == (field,)


def test_volume_claims_are_carried_ephemeral_ones_by_their_generated_name() -> None:
    spec = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "ds"}},
                        {"name": "tmp", "emptyDir": {}},
                        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]}
    event = slim.pod_event(pod(spec), 0)
    assert event.unsupported == ()
    assert event.volume_claims == (PodClaim("ds"), PodClaim("p-scratch", is_ephemeral=True))


def test_required_pod_affinity_terms_and_labels_are_carried_with_namespaces_resolved() -> None:
    spec = {"affinity": {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "namespaces": ["b", "a"],
             "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
            {"topologyKey": "zone", "namespaceSelector": {}}]}}}
    obj = {"metadata": {"name": "p", "namespace": "ml", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "c"}], **spec}}
    event = slim.pod_event(obj, 0)
    assert event.unsupported == () and event.labels == {"app": "web"}
    assert event.pod_affinity == (PodAffinityTerm(
        topology_key="zone", namespaces=("ml",),
        label_selector=(NodeSelectorRequirement("app", "In", ("db",)),)),)
    assert event.pod_anti_affinity == (
        PodAffinityTerm(topology_key="kubernetes.io/hostname", namespaces=("a", "b"),
                        label_selector=(NodeSelectorRequirement("app", "Exists"),)),
        PodAffinityTerm(topology_key="zone", all_namespaces=True))


def test_preferred_pod_affinity_terms_keep_weights_and_spec_order_read_as_required_ones() -> None:
    spec = {"affinity": {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 30, "podAffinityTerm": {
                "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}},
            {"weight": 5, "podAffinityTerm": {"topologyKey": "rack", "namespaceSelector": {},
                                              "labelSelector": {}}}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {
                "topologyKey": "kubernetes.io/hostname", "namespaces": ["b", "a"],
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}}]}}}
    event = slim.pod_event(pod(spec, namespace="ml"), 0)
    assert event.unsupported == () and event.pod_affinity == ()
    assert event.preferred_pod_affinity == (
        WeightedPodAffinityTerm(30, PodAffinityTerm(
            topology_key="zone", namespaces=("ml",),
            label_selector=(NodeSelectorRequirement("app", "In", ("db",)),))),
        WeightedPodAffinityTerm(5, PodAffinityTerm(topology_key="rack", label_selector=(),
                                                   all_namespaces=True)))
    assert event.preferred_pod_anti_affinity == (WeightedPodAffinityTerm(100, PodAffinityTerm(
        topology_key="kubernetes.io/hostname", namespaces=("a", "b"),
        label_selector=(NodeSelectorRequirement("app", "Exists"),))),)


def test_a_namespace_selector_is_carried_and_an_invalid_preferred_term_ignored() -> None:
    team_a = NodeSelectorRequirement(key="team", operator="In", values=("a",))
    spec = {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {
            "topologyKey": "zone", "namespaceSelector": {"matchLabels": {"team": "a"}}}},
        {"weight": 2, "podAffinityTerm": {
            "topologyKey": "zone", "namespaceSelector": {"matchExpressions": [
                {"key": "team", "operator": "Exists", "values": ["a"]}]}}},  # API refuses it
        {"weight": 3, "podAffinityTerm": {"topologyKey": "rack", "namespaces": ["x"],
                                          "namespaceSelector": {}}}]}}}
    event = slim.pod_event(pod(spec), 0)
    assert event.unsupported == ()
    assert event.preferred_pod_anti_affinity == (
        WeightedPodAffinityTerm(1, PodAffinityTerm(topology_key="zone",
                                                   namespace_selector=(team_a,))),
        WeightedPodAffinityTerm(3, PodAffinityTerm(topology_key="rack", namespaces=("x",),
                                                   all_namespaces=True)))


def test_host_ports_of_app_containers_are_carried_with_kube_scheduler_defaults() -> None:
    spec = {"containers": [
        {"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080},
                                {"containerPort": 53, "hostPort": 53, "protocol": "UDP",
                                 "hostIP": "10.0.0.1"},
                                {"containerPort": 81}, {"containerPort": 82, "hostPort": 0}]},
        {"name": "b", "ports": [{"containerPort": 90, "hostPort": "90"}]}]}
    event = slim.pod_event(pod(spec), 0)
    assert event.host_ports == (HostPort(8080, "TCP", "0.0.0.0"), HostPort(53, "UDP", "10.0.0.1"))
    assert event.unsupported == ()


def test_sidecar_host_ports_count_and_plain_init_containers_do_not() -> None:
    """As NodePorts (`GetHostPorts`): a sidecar holds its ports for the pod's whole life, a
    plain init container only before the app starts, so it is ignored (the differential test
    found kube-scheduler binding such pods, which gangsched refused as unsupported)."""
    spec = {"initContainers": [
        {"name": "setup", "ports": [{"containerPort": 80, "hostPort": 80}]},
        {"name": "proxy", "restartPolicy": "Always",
         "ports": [{"containerPort": 9090, "hostPort": 9090, "protocol": "UDP"}]}],
        "containers": [{"name": "a", "ports": [{"containerPort": 81, "hostPort": 8081}]}]}
    event = slim.pod_event(pod(spec), 0)
    assert event.host_ports == (HostPort(9090, "UDP", "0.0.0.0"), HostPort(8081, "TCP", "0.0.0.0"))
    assert event.unsupported == ()


def test_match_fields_are_carried_not_unsupported() -> None:
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": ["n"]}]}]}}}}
    event = slim.pod_event(pod(spec), 0)
    assert event.unsupported == ()
    assert event.required_affinity == (NodeSelectorTerm(
        match_fields=(NodeSelectorRequirement("metadata.name", "In", ("n",)),)),)


@pytest.mark.parametrize("spec", [
    {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{}]}}},
    {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{}]}}},
    {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                    "whenUnsatisfiable": "ScheduleAnyway"}]},
    {"volumes": [{"name": "e", "emptyDir": {}}]},
])
def test_soft_constraints_and_plain_volumes_are_fine(spec: dict[str, Any]) -> None:
    assert slim.pod_event(pod(spec), 0).unsupported == ()


def test_node_event() -> None:
    obj = {"metadata": {"name": "n1", "uid": "nu", "resourceVersion": "3", "labels": {"a": "b"}},
           "spec": {"unschedulable": True,
                    "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]},
           "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110",
                                      "nvidia.com/gpu": "2"},
                      "conditions": [{"type": "Ready", "status": "False"}]}}
    event = slim.node_event(obj, 1)
    assert event.allocatable == {"cpu": 4000, "memory": 8 * 2**30, "pods": 110,
                                 "nvidia.com/gpu": 2}
    assert event.taints == (Taint(key="gpu", value="yes", effect="NoSchedule"),)
    assert event.is_unschedulable and not event.is_ready and event.labels == {"a": "b"}


def test_node_readiness() -> None:
    assert slim.is_ready({})  # no conditions: Ready (module docstring)
    assert slim.is_ready({"conditions": [{"type": "Ready", "status": "True"}]})
    assert not slim.is_ready({"conditions": [{"type": "Ready", "status": "Unknown"}]})


def test_node_capacity_is_used_without_allocatable_and_bad_quantities_dropped() -> None:
    event = slim.node_event({"metadata": {"name": "n"},
                             "status": {"capacity": {"cpu": "2", "memory": "oops"}}}, 0)
    assert event.allocatable == {"cpu": 2000}


def test_podgroup_event() -> None:
    obj = {"metadata": {"name": "g", "namespace": "ml", "uid": "gu",
                        "creationTimestamp": "1970-01-01T00:00:01Z"},
           "spec": {"minMember": 3, "minResources": {"cpu": "3", "memory": "1Gi"},
                    "scheduleTimeoutSeconds": 10}}
    event = slim.podgroup_event(obj, 99)
    assert (event.min_member, event.schedule_timeout_seconds, event.created_at_ms) == (3, 10, 1000)
    assert event.min_resources == {"cpu": 3000, "memory": 2**30}
    assert event.invalid_reason is None


@pytest.mark.parametrize(("spec", "field"), [
    ({"minMember": -1}, "spec.minMember"), ({"minMember": "x"}, "spec.minMember"),
    ({"minMember": 1, "minResources": {"cpu": "lots"}}, "spec.minResources"),
    ({"minMember": 1, "scheduleTimeoutSeconds": -1}, "spec.scheduleTimeoutSeconds"),
])
def test_an_invalid_podgroup_carries_the_reason(spec: dict[str, Any], field: str) -> None:
    event = slim.podgroup_event({"metadata": {"name": "g"}, "spec": spec}, 0)
    assert event.invalid_reason is not None and event.invalid_reason.startswith(field)
    assert event.min_member >= 1


@pytest.mark.parametrize("spec", [
    {}, {"minMember": 0}, {"minMember": 0, "scheduleTimeoutSeconds": 0},
    {"minMember": None, "scheduleTimeoutSeconds": None, "minResources": None}])
def test_a_podgroup_without_minmember_is_a_valid_gang_of_one_as_coscheduling_reads_it(
        spec: dict[str, Any]) -> None:
    event = slim.podgroup_event({"metadata": {"name": "g"}, "spec": spec}, 0)
    assert event.invalid_reason is None
    assert (event.min_member, event.min_resources) == (1, {})
    assert event.schedule_timeout_seconds in (None, 0)  # both mean the default timeout


def test_delete_events() -> None:
    meta = {"metadata": {"name": "x", "namespace": "ns", "uid": "u", "resourceVersion": "9"}}
    assert slim.pod_deleted(meta, 5).uid == "u"
    assert slim.node_deleted(meta, 5).name == "x"
    assert slim.podgroup_deleted(meta, 5).namespace == "ns"


def test_pod_level_requests_replace_the_container_aggregate_for_what_they_name() -> None:
    spec = {"resources": {"requests": {"cpu": "4"}, "limits": {"memory": "8Gi"}},
            "containers": [container({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}),
                           container({"cpu": "1"})],
            "overhead": {"cpu": "100m"}}
    # cpu from the pod level (4) plus overhead; memory from the pod-level limit (defaulting);
    # the gpu, which pod-level resources cannot name, from the containers
    assert slim.pod_event(pod(spec), 0).requests == {
        "cpu": 4100, "memory": 8 * 2**30, "nvidia.com/gpu": 2, "pods": 1}


def test_pod_level_resources_keep_the_containers_for_resources_they_do_not_name() -> None:
    spec = {"resources": {"requests": {"memory": "2Gi"}},
            "containers": [container({"cpu": "500m", "memory": "1Gi"})]}
    assert slim.pod_event(pod(spec), 0).requests == {"cpu": 500, "memory": 2 * 2**30, "pods": 1}


def test_an_invalid_pod_level_quantity_names_its_field() -> None:
    event = slim.pod_event(pod({"resources": {"requests": {"cpu": "lots"}}}), 0)
    assert event.invalid_reason is not None
    assert event.invalid_reason == (
        f"spec.resources.requests.cpu: invalid quantity 'lots': {FORMAT_WRONG}")


BEYOND = "is beyond the largest amount gangsched can place (281474976710656m)"


def test_minresources_beyond_range_mark_the_podgroup_invalid_naming_the_amount() -> None:
    group: dict[str, Any] = {"metadata": {"name": "g", "uid": "g1"},
                             "spec": {"minMember": 1, "minResources": {"cpu": "1e30"}}}
    event = slim.podgroup_event(group, 0)
    assert event.invalid_reason == f"spec.minResources: cpu 1e30 {BEYOND}"
    assert event.min_resources == {}
    group["spec"]["minResources"] = {"cpu": "1", "memory": True}
    invalid = slim.podgroup_event(group, 0).invalid_reason
    assert invalid is not None and "memory" in invalid


def test_a_request_beyond_range_is_an_unsupported_entry_naming_field_and_amount() -> None:
    event = slim.pod_event(pod({"containers": [container({"cpu": "1e30", "memory": "1Gi"})]}), 0)
    assert event.unsupported == (f"spec.containers[0].resources.requests: cpu 1e30 {BEYOND}",)
    assert event.invalid_reason is None
    # charged at the most gangsched counts, so a pod another scheduler bound fills its node
    assert event.requests == {"cpu": 2**48, "memory": 2**30, "pods": 1}


def test_a_limit_standing_in_for_a_request_beyond_range_is_named_as_the_limit() -> None:
    event = slim.pod_event(pod({"containers": [container(limits={"nvidia.com/gpu": 10**20})]}), 0)
    assert event.unsupported == (
        "spec.containers[0].resources.limits: nvidia.com/gpu 100000000000000000000 "
        "is beyond the largest amount gangsched can place (281474976710656)",)


def test_requests_that_only_add_up_beyond_range_are_refused_as_a_total() -> None:
    half = f"{2**47 // 1000 + 1}"  # each container within range, the pod beyond it
    event = slim.pod_event(pod({"containers": [container({"cpu": half}),
                                               container({"cpu": half})]}), 0)
    assert event.unsupported == (
        f"spec (all containers and overhead together): cpu 281474976712 {BEYOND}",)
    assert event.requests["cpu"] == 2**48


def test_overhead_beyond_range_is_named() -> None:
    event = slim.pod_event(pod({"overhead": {"cpu": "1e20"}}), 0)
    assert event.unsupported == (f"spec.overhead: cpu 1e20 {BEYOND}",)


def test_a_malformed_quantity_beside_one_beyond_range_makes_the_pod_invalid() -> None:
    event = slim.pod_event(pod({"containers": [container({"cpu": "1e30", "memory": "lots"})]}), 0)
    assert event.unsupported == ()
    assert event.invalid_reason is not None and "memory" in event.invalid_reason


def test_a_node_offering_more_than_gangsched_counts_offers_the_most_it_counts() -> None:
    node = {"metadata": {"name": "big"},
            "status": {"allocatable": {"cpu": "1e15", "memory": "1Gi", "pods": "110"}}}
    assert slim.node_event(node, 0).allocatable == {"cpu": 2**48, "memory": 2**30, "pods": 110}


@pytest.mark.parametrize("obj", [
    {}, {"metadata": None}, {"metadata": [], "spec": "x", "status": 3},
    {"metadata": {"labels": ["a"], "name": 10**5000}, "spec": {"containers": {"a": 1}}},
    {"spec": {"containers": [{"resources": ["cpu"]}, None, {"resources": {"requests": None}}]}},
    {"spec": {"containers": [{"resources": {"requests": {"cpu": None}}}]}},
    {"spec": {"priority": 2**70, "minMember": 2**70, "scheduleTimeoutSeconds": True}},
])
def test_malformed_objects_never_raise(obj: dict[str, Any]) -> None:
    for event in (slim.pod_event(obj, 0), slim.node_event(obj, 0), slim.podgroup_event(obj, 0),
                  slim.pod_deleted(obj, 0), slim.node_deleted(obj, 0),
                  slim.podgroup_deleted(obj, 0)):
        msgspec.json.encode(event)


def test_preemption_policy_is_carried_and_defaults_as_the_priority_admission_plugin() -> None:
    assert slim.pod_event(pod(), 0).preemption_policy == "PreemptLowerPriority"
    assert slim.pod_event(pod({"preemptionPolicy": "Never"}), 0).preemption_policy == "Never"
    assert slim.pod_event(pod({"preemptionPolicy": "PreemptLowerPriority"}), 0
                          ).preemption_policy == "PreemptLowerPriority"
    for absent in ("", None, 7, ["Never"]):
        assert slim.pod_event(pod({"preemptionPolicy": absent}), 0
                              ).preemption_policy == "PreemptLowerPriority", absent


def with_status(obj: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {**obj, "status": {**obj["status"], **status}}


def test_start_time_is_utc_epoch_milliseconds_and_none_until_set() -> None:
    assert slim.pod_event(pod(), 5).start_ms is None
    assert slim.pod_event(with_status(pod(), startTime="2024-05-01T10:00:00Z"), 5
                          ).start_ms == 1_714_557_600_000
    assert slim.pod_event(with_status(pod(), startTime="2024-05-01T10:00:00.250Z"), 5
                          ).start_ms == 1_714_557_600_250
    assert slim.pod_event(with_status(pod(), startTime="2024-05-01T12:00:00+02:00"), 5
                          ).start_ms == 1_714_557_600_000
    for malformed in ("yesterday", 1_714_557_600, ""):
        assert slim.pod_event(with_status(pod(), startTime=malformed), 5).start_ms is None


def test_an_absurd_minmember_or_timeout_is_invalid_not_an_unencodable_event() -> None:
    event = slim.podgroup_event({"spec": {"minMember": 2**70, "scheduleTimeoutSeconds": 2**70}}, 0)
    assert event.min_member == 1 and event.schedule_timeout_seconds is None
    assert event.invalid_reason is not None


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
                     st.sampled_from(["1", "500m", "2Gi", "1e400000", "1e1000000", "-1", "x",
                                      "Always", "True", "2024-01-01T00:00:00Z", "cpu"]))
_KEYS = st.sampled_from([
    "metadata", "spec", "status", "name", "namespace", "uid", "labels", "ownerReferences",
    "controller", "containers", "initContainers", "resources", "requests", "limits", "cpu",
    "memory", "hugepages-2Mi", "nvidia.com/gpu", "overhead", "minMember", "minResources",
    "scheduleTimeoutSeconds", "allocatable", "capacity", "taints", "conditions", "affinity",
    "nodeAffinity", "tolerations", "restartPolicy", "creationTimestamp", "priority", "volumes",
    "topologySpreadConstraints", "schedulingGates", "nodeSelector", "phase",
    "preemptionPolicy", "startTime", slim.GROUP_LABEL]) | st.text(max_size=4)
_JSONISH = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=6)), max_leaves=30)
_OBJECTS = st.dictionaries(st.sampled_from(["metadata", "spec", "status"]), _JSONISH)


@settings(max_examples=300, deadline=None)
@given(_OBJECTS)
def test_slimming_random_objects_never_raises_and_always_encodes(obj: dict[str, Any]) -> None:
    """The documented contract: every slim function returns an encodable event, never raises."""
    for slim_one in (slim.pod_event, slim.node_event, slim.podgroup_event, slim.pod_deleted,
                     slim.node_deleted, slim.podgroup_deleted):
        msgspec.json.encode(slim_one(obj, 0))
