"""The pure volume rules (`services.fit.volumes`), table-driven, as kube-scheduler's
VolumeBinding, VolumeZone and VolumeRestrictions read them."""

from __future__ import annotations

import pytest

from services.contracts.events import (
    ClaimObserved,
    NodeObserved,
    StorageClassObserved,
    VolumeObserved,
)
from services.fit import reasons
from services.fit import volumes as rules
from tests.unit.planner.builders import (
    make_claim,
    make_node,
    make_pod,
    make_storage_class,
    make_volume,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def node(name: str = "n0", **labels: str) -> NodeObserved:
    return make_node(name).labels(**{HOST: name, **labels}).build()


def book(*objects: ClaimObserved | VolumeObserved | StorageClassObserved) -> rules.Book:
    claims = {rules.claim_key(o.namespace, o.name): o for o in objects
              if isinstance(o, ClaimObserved)}
    volumes = {o.name: o for o in objects if isinstance(o, VolumeObserved)}
    classes = {o.name: o for o in objects if isinstance(o, StorageClassObserved)}
    return rules.Book(claims, volumes, classes)


@pytest.mark.parametrize(("labels", "node_labels", "passes"), [
    ({ZONE: "a"}, {ZONE: "a"}, True),
    ({ZONE: "a"}, {ZONE: "b"}, False),
    ({ZONE: "a__b"}, {ZONE: "b"}, True),             # LabelZonesToSet
    ({ZONE: "a"}, {}, True),                         # a node without zone labels takes it
    ({BETA_ZONE: "a"}, {ZONE: "a"}, True),           # the GA label stands in for the beta one
    ({ZONE: "a"}, {BETA_ZONE: "a"}, False),          # but not the other way round
    ({ZONE: "a__"}, {ZONE: "b"}, True),              # an empty piece: the label is ignored
])
def test_volume_zone(labels: dict[str, str], node_labels: dict[str, str], passes: bool
                     ) -> None:
    pod = make_pod("p").claims("c").build()
    zones = rules.zone_sets(pod, book(make_claim("c", volume="v"),
                                      make_volume("v", labels=labels)))
    expected = None if passes else reasons.VOLUME_ZONE_CONFLICT
    assert rules.zone_reason(zones, node(**node_labels)) == expected


@pytest.mark.parametrize(("objects", "expected"), [
    ((make_claim("c", volume="v"), make_volume("v", hosts=("n0",))), []),
    ((make_claim("c", volume="v"), make_volume("v", hosts=("n1",))),
     [reasons.VOLUME_NODE_AFFINITY_CONFLICT]),
    ((make_claim("c", volume="v"),), [reasons.BOUND_VOLUME_MISSING]),
    ((make_claim("c", volume="v", bound=False), make_volume("v", hosts=("n1",))), []),
])
def test_bound_claims(objects: tuple[ClaimObserved | VolumeObserved, ...], expected: list[str]
                      ) -> None:
    pod = make_pod("p").claims("c").build()
    assert rules.bound_reasons(pod, book(*objects), node()) == expected


@pytest.mark.parametrize(("storage_class", "passes"), [
    (None, False),
    (make_storage_class("s"), False),                                 # no-provisioner
    (make_storage_class("s", provisioner="csi.x"), True),
    (make_storage_class("s", provisioner="csi.x", zones=("a",)), True),
    (make_storage_class("s", provisioner="csi.x", zones=("b",)), False),
])
def test_can_provision(storage_class: StorageClassObserved | None, passes: bool) -> None:
    assert rules.can_provision(storage_class, node(**{ZONE: "a"})) is passes


@pytest.mark.parametrize(("volume", "matches"), [
    (make_volume("v", storage_class="s", gib=1), True),
    (make_volume("v", storage_class="other", gib=1), False),
    (make_volume("v", storage_class="s", gib=1, phase="Released"), False),
    (make_volume("v", storage_class="s", gib=1, volume_mode="Block"), False),
    (make_volume("v", storage_class="s", gib=1, hosts=("n1",)), False),
    (make_volume("v", storage_class="s", gib=1, is_deleting=True), False),
    (make_volume("v", storage_class="s", gib=1, modes=("ReadOnlyMany",)), False),
    (make_volume("v", storage_class="s", gib=1, claim=("default", "other")), False),
    (make_volume("v", storage_class="other", gib=1, claim=("default", "c")), True),  # pre-bound
])
def test_find_matching_volume(volume: VolumeObserved, matches: bool) -> None:
    claim = make_claim("c", storage_class="s", gib=1)
    found = rules.find_matching_volume(claim, [volume], node(), set())
    assert (found is not None) is matches


def test_read_write_once_pod_claims_are_only_persistent_volume_claims() -> None:
    rwop = ("ReadWriteOncePod",)
    pod = make_pod("p").claims("db", "logs", ephemeral=("tmp",)).build()
    found = rules.read_write_once_pod_claims(pod, book(
        make_claim("db", modes=rwop), make_claim("logs"), make_claim("p-tmp", modes=rwop)))
    assert found == {"default/db"}
