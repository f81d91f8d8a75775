"""Volumes, as kube-scheduler's VolumeRestrictions, VolumeBinding and
VolumeZone judge them: PreFilter reasons, bound claims' volume node affinity and zones,
ReadWriteOncePod, and volumes chosen for WaitForFirstConsumer claims (carried by the
Placement for the binder's PreBind)."""

from __future__ import annotations

import msgspec
import pytest

from services.contracts.decisions import Decision, Placement, VolumeChoice
from services.contracts.events import (
    ClaimDeleted,
    ClaimObserved,
    Event,
    NodeSelectorRequirement,
    PodObserved,
    StorageClassObserved,
    VolumeObserved,
)
from services.fit import reasons
from services.fit import volumes as rules
from services.planner.core import derived, placement
from services.planner.core.config import PlannerConfig
from services.planner.core.placement import Trial
from services.planner.core.volumes import Volumes
from tests.unit.planner.builders import (
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    make_claim,
    make_node,
    make_pod,
    make_podgroup,
    make_storage_class,
    make_volume,
)
from tests.unit.planner.harness import Cluster, replay

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
Storage = StorageClassObserved | ClaimObserved | VolumeObserved


def node(name: str, zone: str = "a", cpu: int = 8000) -> NodeBuilder:
    return make_node(name).capacity(cpu_milli=cpu).labels(**{HOST: name, ZONE: zone})


def nodes_of(decisions: list[Decision]) -> dict[str, str]:
    return {m.name: m.node for d in decisions if isinstance(d, Placement) for m in d.members}


def cluster(*items: PodBuilder | PodGroupBuilder | Event) -> Cluster:
    return Cluster().observe(node("n0", "a"), node("n1", "a"), node("n2", "b"), *items)


@pytest.mark.parametrize(("storage", "pod", "message"), [
    ((), make_pod("p").claims("data"), 'persistentvolumeclaim "data" not found'),
    ((), make_pod("p").claims(ephemeral=("tmp",)),
     'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-tmp"'),
    ((make_claim("data", volume="pv", is_deleting=True), make_volume("pv")),
     make_pod("p").claims("data"), 'persistentvolumeclaim "data" is being deleted'),
    ((make_claim("data", volume="pv", phase="Lost", bound=False),),
     make_pod("p").claims("data"),
     'persistentvolumeclaim "data" bound to non-existent persistentvolume "pv"'),
    ((make_claim("data"),), make_pod("p").claims("data"), reasons.UNBOUND_IMMEDIATE_CLAIMS),
    ((make_claim("data", volume="pv", bound=False), make_volume("pv")),
     make_pod("p").claims("data"), reasons.UNBOUND_IMMEDIATE_CLAIMS),
    ((make_claim("data", storage_class="gone"),), make_pod("p").claims("data"),
     reasons.UNBOUND_IMMEDIATE_CLAIMS),
    ((make_claim("data", volume="pv"),), make_pod("p").claims("data"),
     'persistentvolume "pv" not found'),
    ((make_claim("p-tmp", volume="pv", owner_uid="someone-else"), make_volume("pv")),
     make_pod("p").claims(ephemeral=("tmp",)),
     "PVC default/p-tmp was not created for pod default/p (pod is not owner)"),
])
def test_prefilter_reasons_keep_the_pod_pending_worded_as_kube_scheduler(
        storage: tuple[ClaimObserved | VolumeObserved, ...], pod: PodBuilder, message: str
        ) -> None:
    c = cluster(*storage, pod.requests(cpu_milli=100))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/pod:p") == f"0/3 nodes are available: {message}."
    assert c.rejections("default/pod:p")[-1].is_unschedulable


def test_a_missing_claim_of_a_gang_member_keeps_the_gang_and_names_the_member() -> None:
    c = cluster(make_podgroup("g", 2), make_pod("w0").in_group("g").claims("data"),
                make_pod("w1").in_group("g"))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/g") == (
        'gang default/g: pod default/w0: 0/3 nodes are available: '
        'persistentvolumeclaim "data" not found.')


def test_the_claim_appearing_lets_the_pod_through_in_the_next_round() -> None:
    c = cluster(make_pod("p").claims("data"))
    c.plan()
    c.observe(make_claim("data", volume="pv"), make_volume("pv", hosts=("n2",)))
    assert nodes_of(c.plan()) == {"p": "n2"}


def test_a_gang_sharing_a_bound_rwx_claim_lands_on_the_nodes_its_volume_reaches() -> None:
    storage = (make_claim("data", volume="pv", modes=("ReadWriteMany",)),
               make_volume("pv", hosts=("n1", "n2"), modes=("ReadWriteMany",)))
    c = cluster(*storage, make_podgroup("g", 3),
                *(make_pod(f"w{i}").in_group("g").claims("data").requests(cpu_milli=3000)
                  for i in range(3)))
    placed = nodes_of(c.plan())
    assert len(placed) == 3 and set(placed.values()) <= {"n1", "n2"}


def test_volume_node_affinity_is_counted_after_resource_fit() -> None:
    storage = (make_claim("data", volume="pv"), make_volume("pv", hosts=("n0",)))
    busy = make_pod("busy").scheduler("default-scheduler").on_node("n0").requests(cpu_milli=8000)
    c = cluster(*storage, busy, make_pod("p").claims("data").requests(cpu_milli=1000))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/pod:p") == (
        f"0/3 nodes are available: 1 Insufficient cpu, 2 {reasons.VOLUME_NODE_AFFINITY_CONFLICT}.")


def test_volume_zone_keeps_the_pod_in_its_volumes_zone() -> None:
    storage = (make_claim("data", volume="pv"), make_volume("pv", labels={ZONE: "b"}))
    c = cluster(*storage, make_pod("p").claims("data"))
    assert nodes_of(c.plan()) == {"p": "n2"}


def test_volume_zone_reason_when_no_node_is_in_the_zone() -> None:
    storage = (make_claim("data", volume="pv"), make_volume("pv", labels={ZONE: "c__d"}))
    c = cluster(*storage, make_pod("p").claims("data"))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/pod:p") == (
        f"0/3 nodes are available: 3 {reasons.VOLUME_ZONE_CONFLICT}.")


RWOP = ("ReadWriteOncePod",)


def test_a_read_write_once_pod_claim_in_use_keeps_every_node() -> None:
    storage = (make_claim("db", volume="pv", modes=RWOP), make_volume("pv", modes=RWOP))
    user = make_pod("user").scheduler("default-scheduler").on_node("n0").claims("db")
    c = cluster(*storage, user, make_pod("p").claims("db"))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/pod:p") == (
        f"0/3 nodes are available: 3 {reasons.READ_WRITE_ONCE_POD_CONFLICT}.")


def test_two_members_of_one_gang_never_share_a_read_write_once_pod_claim() -> None:
    storage = (make_claim("db", volume="pv", modes=RWOP), make_volume("pv", modes=RWOP))
    c = cluster(*storage, make_podgroup("g", 2),
                *(make_pod(f"w{i}").in_group("g").claims("db") for i in range(2)))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/g") == (
        "gang default/g: 1 of 2 members fit; 0/3 nodes are available: "
        f"3 {reasons.READ_WRITE_ONCE_POD_CONFLICT}.")


def test_a_finished_user_of_a_read_write_once_pod_claim_frees_it() -> None:
    storage = (make_claim("db", volume="pv", modes=RWOP), make_volume("pv", modes=RWOP))
    done = (make_pod("done").scheduler("default-scheduler").on_node("n0", "Succeeded")
            .claims("db"))
    c = cluster(*storage, done, make_pod("p").claims("db"))
    assert set(nodes_of(c.plan())) == {"p"}


def test_a_wait_for_first_consumer_placement_carries_the_volume_chosen_for_the_claim() -> None:
    storage = (make_storage_class("local"), make_claim("data", storage_class="local"),
               make_volume("pv", hosts=("n1",), storage_class="local"))
    c = cluster(*storage, make_pod("p").claims("data"))
    (decision,) = [d for d in c.plan() if isinstance(d, Placement)]
    (assignment,) = decision.members
    assert assignment.node == "n1"
    assert assignment.volumes == (VolumeChoice("data", "pv"),)


def test_a_wait_for_first_consumer_claim_with_no_volume_and_no_provisioner_waits() -> None:
    storage = (make_storage_class("local"), make_claim("data", storage_class="local"))
    c = cluster(*storage, make_pod("p").claims("data"))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/pod:p") == (
        f"0/3 nodes are available: 3 {reasons.VOLUME_BIND_CONFLICT}.")


def test_a_gang_of_two_with_one_static_volume_each_gets_distinct_volumes_in_its_placement() -> None:
    storage: tuple[Storage, ...] = (
        make_storage_class("local"),
        *(make_claim(f"d{i}", storage_class="local") for i in range(2)),
        make_volume("pv-0", hosts=("n0", "n1"), storage_class="local"),
        make_volume("pv-1", hosts=("n0", "n1"), storage_class="local"))
    c = cluster(*storage, make_podgroup("g", 2),
                *(make_pod(f"w{i}").in_group("g").claims(f"d{i}") for i in range(2)))
    (decision,) = [d for d in c.plan() if isinstance(d, Placement)]
    chosen = sorted(choice.volume for m in decision.members for choice in m.volumes)
    assert chosen == ["pv-0", "pv-1"]


# --- volumes for WaitForFirstConsumer claims, at the placement level ---------------------------

def placed_with_volumes(c: Cluster, members: list[PodObserved]
                        ) -> tuple[dict[str, str], dict[str, list[tuple[str, str]]], Trial]:
    index = derived.ensure(c.state, c.config.scheduler_name).index
    assert index is not None
    index.volumes = Volumes(c.state, index)
    trial = placement.place(index, members, PlannerConfig())
    chosen = {pod.name: [(ch.claim, ch.volume) for ch in trial.claims.get(pod.uid, [])]
              for pod, _ in trial.assigned}
    return {pod.name: index.names[row] for pod, row in trial.assigned}, chosen, trial


def wffc(*volumes: VolumeObserved, claims: tuple[str, ...] = ("a", "b")
         ) -> tuple[Storage, ...]:
    return (make_storage_class("local"),
            *(make_claim(name, storage_class="local") for name in claims), *volumes)


def test_two_members_never_get_the_same_static_volume() -> None:
    c = cluster(*wffc(make_volume("pv-0", hosts=("n0",), storage_class="local"),
                      make_volume("pv-1", hosts=("n1",), storage_class="local")))
    members = [make_pod("w0").claims("a").build(), make_pod("w1").claims("b").build()]
    nodes, chosen, _ = placed_with_volumes(c, members)
    assert sorted(nodes.values()) == ["n0", "n1"]
    volumes = [volume for picks in chosen.values() for _, volume in picks]
    assert sorted(volumes) == ["pv-0", "pv-1"]
    assert {nodes[name]: picks[0][1] for name, picks in chosen.items()} == {
        "n0": "pv-0", "n1": "pv-1"}


def test_one_static_volume_for_two_members_places_only_one() -> None:
    c = cluster(*wffc(make_volume("pv-0", hosts=("n0",), storage_class="local")))
    members = [make_pod("w0").claims("a").build(), make_pod("w1").claims("b").build()]
    nodes, _, trial = placed_with_volumes(c, members)
    assert len(nodes) == 1 and len(trial.unplaced) == 1
    assert trial.explanation == {reasons.VOLUME_BIND_CONFLICT: 3}


def test_the_search_gives_the_one_volume_a_member_can_use_to_that_member() -> None:
    # w0 (claim a, 1Gi) fits either volume; w1 (claim b, 10Gi) only "small" (10Gi, on n0):
    # w0 must take "big" (5Gi, on n1), whichever node it was offered first
    c = cluster(*wffc(make_volume("small", hosts=("n0",), storage_class="local", gib=10),
                      make_volume("big", hosts=("n1",), storage_class="local", gib=5)),
                make_claim("b", storage_class="local", gib=10))
    c.observe(make_claim("a", storage_class="local", gib=1))
    members = [make_pod("w0").claims("a").build(), make_pod("w1").claims("b").build()]
    nodes, chosen, _ = placed_with_volumes(c, members)
    assert nodes == {"w0": "n1", "w1": "n0"}
    assert chosen == {"w0": [("default/a", "big")], "w1": [("default/b", "small")]}


def test_a_shared_wait_for_first_consumer_claim_binds_both_members_to_its_volume() -> None:
    c = cluster(*wffc(make_volume("pv-0", hosts=("n2",), storage_class="local",
                                  modes=("ReadWriteMany",)), claims=()),
                make_claim("a", storage_class="local", modes=("ReadWriteMany",)))
    members = [make_pod(f"w{i}").claims("a").requests(cpu_milli=3000).build() for i in range(2)]
    nodes, chosen, _ = placed_with_volumes(c, members)
    assert nodes == {"w0": "n2", "w1": "n2"}
    assert chosen == {"w0": [("default/a", "pv-0")], "w1": []}


def test_dynamic_provisioning_follows_allowed_topologies() -> None:
    c = cluster(make_storage_class("zonal", provisioner="csi.example.com", zones=("b",)),
                make_claim("a", storage_class="zonal"))
    nodes, chosen, _ = placed_with_volumes(c, [make_pod("w0").claims("a").build()])
    assert nodes == {"w0": "n2"} and chosen == {"w0": [("default/a", "")]}


def test_find_matching_volume_takes_the_smallest_that_fits_and_honours_the_selector() -> None:
    claim = make_claim("a", storage_class="local", gib=2,
                       selector=(rules_requirement("disk", "ssd"),))
    candidates = [make_volume("huge", storage_class="local", gib=100, labels={"disk": "ssd"}),
                  make_volume("tiny", storage_class="local", gib=1, labels={"disk": "ssd"}),
                  make_volume("mid", storage_class="local", gib=4, labels={"disk": "ssd"}),
                  make_volume("hdd", storage_class="local", gib=3, labels={"disk": "hdd"}),
                  make_volume("rwx", storage_class="local", gib=2, labels={"disk": "ssd"},
                              modes=("ReadWriteMany",))]
    any_node = node("n0").build()
    smallest = rules.find_matching_volume(claim, candidates, any_node, set())
    assert smallest is not None
    assert smallest.name == "mid"
    next_smallest = rules.find_matching_volume(claim, candidates, any_node, {"mid"})
    assert next_smallest is not None
    assert next_smallest.name == "huge"


def rules_requirement(key: str, value: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, "In", (value,))


def test_storage_events_replay_to_the_same_decisions() -> None:
    c = cluster(make_claim("data", volume="pv"), make_volume("pv", hosts=("n1",)),
                make_pod("p").claims("data"), make_pod("q").claims("nope"))
    c.plan()
    first = replay(c.log, c.config)
    assert first == replay(c.log, c.config) and b"n1" in first


def test_an_older_claim_observation_changes_nothing() -> None:
    c = cluster(make_claim("data", volume="pv"))
    older = msgspec.structs.replace(make_claim("data"), resource_version="0")
    c.observe(older)
    assert c.state.claims["default/data"].volume_name == "pv"


def test_a_deleted_claim_is_forgotten_but_not_one_replaced_under_its_name() -> None:
    c = cluster(make_claim("data", volume="pv"))
    c.observe(ClaimDeleted(at_ms=0, uid="uid-claim-default-data", namespace="default",
                           name="data"))
    assert "default/data" not in c.state.claims
    c.observe(msgspec.structs.replace(make_claim("data", volume="pv"), uid="new"))
    c.observe(ClaimDeleted(at_ms=0, uid="uid-claim-default-data", namespace="default",
                           name="data"))
    assert c.state.claims["default/data"].uid == "new"


def test_a_starving_gang_holds_capacity_only_where_its_volume_reaches() -> None:
    storage = (make_claim("data", volume="pv", modes=("ReadWriteMany",)),
               make_volume("pv", hosts=("n2",), modes=("ReadWriteMany",)))
    busy = make_pod("busy").scheduler("gangsched").on_node("n2").requests(cpu_milli=6000)
    c = Cluster(PlannerConfig(starvation_seconds=10)).observe(
        node("n0", "a"), node("n1", "a"), node("n2", "b"), *storage, busy, make_podgroup("g", 2),
        *(make_pod(f"w{i}").in_group("g").claims("data").requests(cpu_milli=3000)
          for i in range(2)))
    c.plan()
    c.advance(11)
    c.plan()
    assert "reserving capacity on 1 node(s)" in c.last_reason("default/g")
    assert c.state.starving_nodes == ["n2"]
