"""NodeVolumeLimits (kube-scheduler v1.36 `CSILimits`): a CSINode's per-driver attach limits,
counting the volumes of the pods on the node, VolumeAttachments no pod uses, unbound claims by
their class's provisioner, and in-tree volumes kube migrates to CSI; judged one by one, in the
whole-gang search, for members of one gang, and in preemption."""

from __future__ import annotations

import msgspec
import pytest

from services.contracts.decisions import Decision, Placement, Preemption
from services.contracts.events import (
    AttachableVolume,
    AttachmentDeleted,
    AttachmentObserved,
    CSINodeObserved,
    Event,
)
from services.fit import reasons
from services.fit import volume_limits as rules
from services.fit.volumes import Book
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import (
    PodBuilder,
    make_claim,
    make_node,
    make_pod,
    make_podgroup,
    make_storage_class,
    make_volume,
)
from tests.unit.planner.harness import Cluster, recorded, replay

EBS = "ebs.csi.aws.com"
PD = "pd.csi.storage.gke.io"


def csinode(node: str, **limits: int) -> CSINodeObserved:
    """A CSINode; `limits` by driver, `_` for `.` in the names (`ebs_csi_aws_com`)."""
    return CSINodeObserved(at_ms=0, uid=f"uid-csinode-{node}", name=node, resource_version="1",
                           limits={name.replace("_", "."): count
                                   for name, count in limits.items()})


def ebs_limit(node: str, count: int) -> CSINodeObserved:
    return CSINodeObserved(at_ms=0, uid=f"uid-csinode-{node}", name=node, resource_version="1",
                           limits={EBS: count})


def csi_claim(name: str, driver: str = EBS) -> list[Event]:
    """A claim bound to a CSI volume `pv-<name>` of `driver`, handle `vol-<name>`."""
    return [make_claim(name, volume=f"pv-{name}"),
            make_volume(f"pv-{name}", claim=("default", name),
                        csi=AttachableVolume(driver, f"vol-{name}"))]


def attachment(name: str, node: str, volume: str, attacher: str = EBS) -> AttachmentObserved:
    return AttachmentObserved(at_ms=0, uid=f"uid-{name}", name=name, resource_version="1",
                              node=node, attacher=attacher, volume=volume)


def cluster(*nodes: str) -> Cluster:
    return Cluster().observe(*(make_node(node).capacity(cpu_milli=8000) for node in nodes))


def running(name: str, node: str, *claims: str) -> PodBuilder:
    return make_pod(name).scheduler("default-scheduler").on_node(node).claims(*claims)


def nodes_of(decisions: list[Decision]) -> dict[str, str]:
    return {m.name: m.node for d in decisions if isinstance(d, Placement) for m in d.members}


def test_a_node_at_its_drivers_limit_is_left_out_and_the_reason_is_kube_schedulers() -> None:
    c = cluster("n0", "n1").observe(
        ebs_limit("n0", 2), *csi_claim("a"), *csi_claim("b"), *csi_claim("c"),
        running("ra", "n0", "a"), running("rb", "n0", "b"), make_pod("p").claims("c"))
    assert nodes_of(c.plan()) == {"p": "n1"}  # n1 has no CSINode: no limit
    c = cluster("n0").observe(
        ebs_limit("n0", 2), *csi_claim("a"), *csi_claim("b"), *csi_claim("c"),
        running("ra", "n0", "a"), running("rb", "n0", "b"), make_pod("p").claims("c"))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/pod:p") == (
        f"0/1 nodes are available: 1 {reasons.MAX_VOLUME_COUNT}.")
    assert c.rejections("default/pod:p")[-1].is_unschedulable


def test_a_volume_already_attached_there_counts_once() -> None:
    c = cluster("n0").observe(ebs_limit("n0", 1), *csi_claim("a"), running("ra", "n0", "a"),
                              make_pod("p").claims("a"))
    assert nodes_of(c.plan()) == {"p": "n0"}


def test_another_drivers_volumes_and_a_driver_without_a_count_are_not_limited() -> None:
    c = cluster("n0").observe(ebs_limit("n0", 1), *csi_claim("a"), *csi_claim("b", driver=PD),
                              running("ra", "n0", "a"), make_pod("p").claims("b"))
    assert nodes_of(c.plan()) == {"p": "n0"}


def test_attachments_no_pod_uses_count_and_those_of_pods_count_once() -> None:
    events = [ebs_limit("n0", 2), *csi_claim("a"), *csi_claim("b"), *csi_claim("c"),
              running("ra", "n0", "a")]
    c = cluster("n0").observe(*events, attachment("va-a", "n0", "pv-a"),
                              make_pod("p").claims("c"))
    assert nodes_of(c.plan()) == {"p": "n0"}  # a's attachment is a's volume: 1 + 1 <= 2
    c = cluster("n0").observe(*events, attachment("va-b", "n0", "pv-b"),
                              attachment("va-other", "n1", "pv-c"),
                              attachment("va-no-csi", "n0", "pv-gone"),
                              make_pod("p").claims("c"))
    assert nodes_of(c.plan()) == {}  # b still attached though no pod uses it: 2 + 1 > 2
    c.apply(AttachmentDeleted(at_ms=c.now_ms, uid="uid-other", name="va-b"))  # not its uid
    c.advance(1)
    assert nodes_of(c.plan()) == {}
    c.apply(AttachmentDeleted(at_ms=c.now_ms, uid="uid-va-b", name="va-b"))
    c.advance(1)
    assert nodes_of(c.plan()) == {"p": "n0"}  # the detach woke it
    assert replay(c.log, c.config) == recorded(c)


def test_an_unbound_claim_counts_for_its_classes_provisioner() -> None:
    c = cluster("n0").observe(
        ebs_limit("n0", 1), *csi_claim("a"), running("ra", "n0", "a"),
        make_storage_class("fast", provisioner=EBS),
        make_claim("new", storage_class="fast"), make_pod("p").claims("new"))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/pod:p") == (
        f"0/1 nodes are available: 1 {reasons.MAX_VOLUME_COUNT}.")


@pytest.mark.parametrize(("provisioner", "counted"), [
    ("kubernetes.io/aws-ebs", True),  # migrated to ebs.csi.aws.com
    ("kubernetes.io/azure-file", False),  # known to the translation, never counted
    ("example.com/other", False),  # another driver: no limit here
])
def test_an_in_tree_provisioner_counts_as_the_driver_kube_migrates_it_to(
        provisioner: str, counted: bool) -> None:
    c = cluster("n0").observe(
        ebs_limit("n0", 1), *csi_claim("a"), running("ra", "n0", "a"),
        make_storage_class("old", provisioner=provisioner),
        make_claim("new", storage_class="old"), make_pod("p").claims("new"))
    assert nodes_of(c.plan()) == ({} if counted else {"p": "n0"})


def test_migrated_in_tree_volumes_count_only_on_a_node_with_a_csinode() -> None:
    migrated = AttachableVolume(EBS, "vol-x")
    in_tree = [make_claim("old", volume="pv-old"),
               make_volume("pv-old", claim=("default", "old"), migrated=migrated)]
    c = cluster("n0", "n1").observe(
        ebs_limit("n0", 1), csinode("n1", other_example_com=5), *in_tree,
        running("ra", "n0", "old"), running("rb", "n1", "old"),
        make_pod("inline").migrated(AttachableVolume(EBS, "vol-y")).requests(cpu_milli=100))
    # n0: the in-tree PV counts (1) and the inline one would be a second; n1 limits no EBS
    assert nodes_of(c.plan()) == {"inline": "n1"}
    rules_book = Book(c.state.claims, c.state.volumes, c.state.storage_classes)
    pod = c.state.pods[next(uid for uid, p in c.state.pods.items() if p.name == "ra")]
    assert rules.pod_volumes(pod, rules_book, True) == {f"{EBS}/vol-x": EBS}
    assert rules.pod_volumes(pod, rules_book, False) == {}  # no CSINode: migration off


def test_two_members_of_a_gang_count_toward_one_nodes_limit() -> None:
    c = cluster("n0").observe(ebs_limit("n0", 1), *csi_claim("a"), *csi_claim("b"),
                              make_podgroup("g", 2), make_pod("w0").in_group("g").claims("a"),
                              make_pod("w1").in_group("g").claims("b"))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/g") == (
        f"gang default/g: 1 of 2 members fit; 0/1 nodes are available: "
        f"1 {reasons.MAX_VOLUME_COUNT}.")
    c.apply(msgspec.structs.replace(ebs_limit("n0", 2), at_ms=c.now_ms, resource_version="2"))
    c.advance(1)
    assert nodes_of(c.plan()) == {"w0": "n0", "w1": "n0"}  # the raised limit woke it


@pytest.mark.parametrize("budget", [0, PlannerConfig().search_budget_steps])
def test_the_whole_gang_search_counts_each_members_volumes(budget: int) -> None:
    c = Cluster(msgspec.structs.replace(PlannerConfig(), search_budget_steps=budget)).observe(
        make_node("big").capacity(cpu_milli=8000), make_node("small").capacity(cpu_milli=2000),
        ebs_limit("big", 1), *csi_claim("a"), *csi_claim("b"), make_podgroup("g", 2),
        make_pod("w0").in_group("g").claims("a").requests(cpu_milli=1000),
        make_pod("w1").in_group("g").claims("b").requests(cpu_milli=6000))
    placed = nodes_of(c.plan())
    if not budget:  # one by one: w0 takes the emptier node, where w1 then exceeds the limit
        assert placed == {}
        assert c.last_reason("default/g") == (
            "gang default/g: 1 of 2 members fit; 0/2 nodes are available: 1 Insufficient cpu, "
            f"1 {reasons.MAX_VOLUME_COUNT}.")
    else:
        assert placed == {"w0": "small", "w1": "big"}
    assert replay(c.log, c.config) == recorded(c)


def test_a_disk_conflict_is_told_before_the_limit_and_the_limit_before_volume_binding() -> None:
    from services.contracts.events import Disk
    disk = Disk(kind="gcePersistentDisk", name="d")
    c = cluster("n0", "n1", "n2").observe(
        ebs_limit("n0", 1), ebs_limit("n1", 1), *csi_claim("a"), *csi_claim("b"),
        make_claim("far", volume="pv-far"),
        make_volume("pv-far", claim=("default", "far"), hosts=("nowhere",),
                    csi=AttachableVolume(EBS, "vol-far")),
        running("ra", "n0", "a").disks(disk), running("rb", "n1", "b"),
        make_pod("p").claims("far").disks(disk))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/pod:p") == (
        f"0/3 nodes are available: 1 {reasons.VOLUME_NODE_AFFINITY_CONFLICT}, "
        f"1 {reasons.MAX_VOLUME_COUNT}, 1 {reasons.DISK_CONFLICT}.")  # each node counted once


def test_a_higher_priority_pod_preempts_the_lower_one_whose_volume_fills_the_node() -> None:
    c = cluster("n0").observe(ebs_limit("n0", 1), *csi_claim("a"), *csi_claim("b"),
                              make_pod("low").on_node("n0").claims("a"),
                              make_pod("high").claims("b").priority(100))
    [preemption] = [d for d in c.plan() if isinstance(d, Preemption)]
    assert [(v.name, v.node) for v in preemption.victims] == [("low", "n0")]
    c.delete_pod("low")
    c.advance(1)
    assert nodes_of(c.plan()) == {"high": "n0"}


@pytest.mark.parametrize(("members", "holds"), [(1, True), (2, False)])
def test_a_starving_gang_holds_a_node_whose_volumes_are_gangscheds_only_if_it_fits_there(
        members: int, holds: bool) -> None:
    c = Cluster(PlannerConfig(starvation_seconds=10)).observe(
        make_node("n0").capacity(cpu_milli=8000), ebs_limit("n0", 1),
        *csi_claim("a"), *csi_claim("b"), *csi_claim("c"),
        make_pod("ours").on_node("n0").claims("a").requests(cpu_milli=8000),
        make_podgroup("g", members), *(make_pod(f"w{i}").in_group("g").claims(name)
                                       .requests(cpu_milli=100)
                                       for i, name in enumerate("bc"[:members])))
    c.plan()
    c.advance(11)
    c.plan()
    if holds:  # gangsched's pod and its volume drain from the emptied node
        assert "reserving capacity on 1 node(s)" in c.last_reason("default/g")
    else:  # two volumes never fit a node that may attach one
        assert "would not fit even on nodes emptied" in c.last_reason("default/g")


@pytest.mark.parametrize("room_by", ["limit", "attachment"])
def test_the_search_tells_nodes_apart_by_the_attach_room_they_have_left(room_by: str) -> None:
    # w fits either node alone; x, y, z need a slot each: only w on b and two of them on a fit
    limits = ([ebs_limit("a", 2), ebs_limit("b", 1)] if room_by == "limit" else
              [ebs_limit("a", 2), ebs_limit("b", 2), *csi_claim("old"),
               attachment("va-old", "b", "pv-old")])
    c = Cluster().observe(
        make_node("a").capacity(cpu_milli=8000), make_node("b").capacity(cpu_milli=8000),
        *limits, *csi_claim("x"), *csi_claim("y"), *csi_claim("z"), make_podgroup("g", 4),
        make_pod("w").in_group("g").requests(cpu_milli=7000),
        *(make_pod(name).in_group("g").claims(name).requests(cpu_milli=1000) for name in "xyz"))
    placed = nodes_of(c.plan())
    assert placed["w"] == "b" and sorted(placed[name] for name in "xyz") == ["a", "a", "b"]
