"""VolumeRestrictions' disk conflicts: inline GCE PD, AWS EBS, iSCSI and RBD disks a pod on the
node already mounts (kube-scheduler v1.36 `isVolumeConflict`), judged one by one, in the
whole-gang search, for members of one gang, and in preemption."""

from __future__ import annotations

import msgspec
import pytest

from services.contracts.decisions import Decision, Placement, Preemption
from services.contracts.events import Disk
from services.fit import disks, reasons
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, recorded, replay

PD = Disk(kind=disks.GCE_PD, name="data")
PD_RO = Disk(kind=disks.GCE_PD, name="data", read_only=True)
EBS = Disk(kind=disks.AWS_EBS, name="vol-1")
EBS_RO = Disk(kind=disks.AWS_EBS, name="vol-1", read_only=True)
ISCSI = Disk(kind=disks.ISCSI, name="iqn.2001-04.com.example:data")
ISCSI_RO = Disk(kind=disks.ISCSI, name="iqn.2001-04.com.example:data", read_only=True)


def rbd(image: str = "img", pool: str = "rbd", monitors: tuple[str, ...] = ("m1",),
        read_only: bool = False) -> Disk:
    return Disk(kind=disks.RBD, name=image, pool=pool, monitors=monitors, read_only=read_only)


@pytest.mark.parametrize(("disk", "other", "expected"), [
    (PD, PD, True),
    (PD, PD_RO, True),
    (PD_RO, PD_RO, False),  # every pod mounts it read-only
    (PD, Disk(kind=disks.GCE_PD, name="other"), False),
    (EBS, EBS, True),
    (EBS_RO, EBS_RO, True),  # an EBS volume attaches to one node whatever the mode
    (EBS, Disk(kind=disks.AWS_EBS, name="vol-2"), False),
    (ISCSI, ISCSI, True),
    (ISCSI_RO, ISCSI, True),
    (ISCSI_RO, ISCSI_RO, False),
    (rbd(), rbd(), True),
    (rbd(monitors=("m1", "m2")), rbd(monitors=("m2", "m3")), True),  # one monitor in common
    (rbd(monitors=("m1",)), rbd(monitors=("m2",)), False),  # another Ceph cluster
    (rbd(pool="a"), rbd(pool="b"), False),
    (rbd(image="a"), rbd(image="b"), False),
    (rbd(read_only=True), rbd(read_only=True), False),
    (rbd(read_only=True), rbd(), True),
    (PD, Disk(kind=disks.ISCSI, name="data"), False),  # same name, another kind
])
def test_two_disks_conflict_as_kube_scheduler_judges_them(disk: Disk, other: Disk,
                                                          expected: bool) -> None:
    assert disks.conflict(disk, other) is expected
    assert disks.conflict(other, disk) is expected
    assert disks.any_conflict([Disk(kind=disks.GCE_PD, name="x"), disk], [other]) is expected


def cluster(count: int = 3, cpu_milli: int = 8000) -> Cluster:
    return Cluster().observe(*(make_node(f"n{i}").capacity(cpu_milli=cpu_milli)
                               for i in range(count)))


def nodes_of(decisions: list[Decision]) -> dict[str, str]:
    return {m.name: m.node for d in decisions if isinstance(d, Placement) for m in d.members}


def test_a_node_whose_pod_mounts_the_disk_read_write_is_left_out() -> None:
    c = cluster()
    c.observe(make_pod("user").scheduler("default-scheduler").on_node("n0").disks(PD),
              make_pod("user2").scheduler("default-scheduler").on_node("n1").disks(PD_RO),
              make_pod("p").disks(PD).requests(cpu_milli=100))
    assert nodes_of(c.plan()) == {"p": "n2"}  # read-write: neither mount may share with it


def test_read_only_mounts_share_a_node() -> None:
    c = cluster(count=1)
    c.observe(make_pod("user").scheduler("default-scheduler").on_node("n0").disks(PD_RO),
              make_pod("p").disks(PD_RO))
    assert nodes_of(c.plan()) == {"p": "n0"}


def test_every_node_in_conflict_gives_kube_schedulers_reason_after_resource_fit() -> None:
    c = cluster()
    c.observe(*(make_pod(f"user{i}").scheduler("default-scheduler").on_node(f"n{i}")
                .disks(Disk(kind=disks.GCE_PD, name="x"), EBS_RO).requests(cpu_milli=cpu)
                for i, cpu in enumerate((8000, 100, 100))),
              make_pod("p").disks(EBS).requests(cpu_milli=1000))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/pod:p") == (
        f"0/3 nodes are available: 1 Insufficient cpu, 2 {reasons.DISK_CONFLICT}.")
    assert c.rejections("default/pod:p")[-1].is_unschedulable


def test_a_finished_pod_no_longer_holds_its_disk() -> None:
    c = cluster(count=1)
    c.observe(make_pod("done").scheduler("default-scheduler").on_node("n0", "Succeeded")
              .disks(PD), make_pod("p").disks(PD))
    assert nodes_of(c.plan()) == {"p": "n0"}


def test_the_user_leaving_lets_the_pod_through() -> None:
    c = cluster(count=1)
    c.observe(make_pod("user").scheduler("default-scheduler").on_node("n0").disks(ISCSI),
              make_pod("p").disks(ISCSI_RO))
    assert nodes_of(c.plan()) == {}
    c.delete_pod("user")
    c.advance(11)
    assert nodes_of(c.plan()) == {"p": "n0"}
    assert replay(c.log, c.config) == recorded(c)


def test_two_members_of_a_gang_mounting_one_disk_take_two_nodes_or_none() -> None:
    c = cluster(count=1)
    c.observe(make_podgroup("g", 2), *(make_pod(f"w{i}").in_group("g").disks(PD)
                                       for i in range(2)))
    assert nodes_of(c.plan()) == {}
    assert c.last_reason("default/g") == (
        f"gang default/g: 1 of 2 members fit; 0/1 nodes are available: 1 {reasons.DISK_CONFLICT}.")
    c.observe(make_node("n1").capacity(cpu_milli=8000))
    c.advance(11)
    assert sorted(nodes_of(c.plan()).values()) == ["n0", "n1"]


@pytest.mark.parametrize("budget", [0, PlannerConfig().search_budget_steps])
def test_the_whole_gang_search_finds_the_placement_one_by_one_misses(budget: int) -> None:
    c = Cluster(msgspec.structs.replace(PlannerConfig(), search_budget_steps=budget)).observe(
        make_node("big").capacity(cpu_milli=8000), make_node("small").capacity(cpu_milli=2000),
        make_podgroup("g", 2),
        make_pod("w0").in_group("g").disks(rbd()).requests(cpu_milli=1000),
        make_pod("w1").in_group("g").disks(rbd(monitors=("m0", "m1"))).requests(cpu_milli=6000))
    placed = nodes_of(c.plan())
    if not budget:  # one by one: w0 takes the emptier node, where w1 fits but for the disk
        assert placed == {}
        assert c.last_reason("default/g") == (
            "gang default/g: 1 of 2 members fit; 0/2 nodes are available: 1 Insufficient cpu, "
            f"1 {reasons.DISK_CONFLICT}.")
    else:
        assert placed == {"w0": "small", "w1": "big"}
    assert replay(c.log, c.config) == recorded(c)


def test_a_higher_priority_pod_preempts_the_lower_one_holding_its_disk() -> None:
    c = cluster(count=1)
    c.observe(make_pod("low").on_node("n0").disks(PD).requests(cpu_milli=100),
              make_pod("high").disks(PD).priority(100).requests(cpu_milli=100))
    decisions = c.plan()
    [preemption] = [d for d in decisions if isinstance(d, Preemption)]
    assert [(v.name, v.node) for v in preemption.victims] == [("low", "n0")]
    c.delete_pod("low")
    c.advance(1)
    assert nodes_of(c.plan()) == {"high": "n0"}


def test_a_gang_whose_members_can_never_share_the_only_node_holds_nothing() -> None:
    c = Cluster(PlannerConfig(starvation_seconds=10)).observe(
        make_node("n0").capacity(cpu_milli=8000), make_podgroup("g", 2),
        *(make_pod(f"w{i}").in_group("g").disks(PD).requests(cpu_milli=1000) for i in range(2)))
    c.plan()
    c.advance(11)
    c.plan()
    assert "would not fit even on nodes emptied" in c.last_reason("default/g")
    c.observe(make_pod("later").requests(cpu_milli=8000))
    c.advance(1)
    assert nodes_of(c.plan()) == {"later": "n0"}  # nothing held for a gang that never fits


def test_gangscheds_own_disk_holders_drain_for_the_hold_as_their_capacity_does() -> None:
    c = Cluster(PlannerConfig(starvation_seconds=10)).observe(
        make_node("n0").capacity(cpu_milli=8000),
        make_pod("holder").on_node("n0").disks(PD).requests(cpu_milli=4000),
        make_pod("filler").on_node("n0").requests(cpu_milli=4000),
        make_podgroup("g", 1), make_pod("w0").in_group("g").disks(PD).requests(cpu_milli=8000))
    c.plan()
    c.advance(11)
    c.plan()
    assert "reserving capacity on 1 node(s)" in c.last_reason("default/g")
    c.delete_pod("filler")
    c.observe(make_pod("small").requests(cpu_milli=4000))
    c.advance(1)
    assert "small" not in nodes_of(c.plan())  # the room freed on n0 is held for the gang
    c.delete_pod("holder")
    c.advance(2)
    assert nodes_of(c.plan()) == {"w0": "n0"}
