"""VolumeBinding's PreBind in the binder: claims bound before their members, or a rollback.

The in-memory API server holds claims and volumes; `completes` says whether a PV controller
finishes the binding it is asked for (the e2e test runs the real one).
"""

from __future__ import annotations

from typing import Any

from services.binder import placing
from services.binder.placing import Policy
from services.contracts.decisions import Assignment, Placement, VolumeChoice
from services.kube import volumes as kube_volumes
from tests.unit.binder.fakes import FakeKube, make_node, make_pod

NOW_MS = 1_700_000_000_000
POLICY = Policy(scheduler_name="gangsched", concurrency=4, rollback_bare_pods=False)


class VolumeKube(FakeKube):
    """FakeKube whose claims and volumes complete binding: a volume pre-bound to a claim, or
    a claim with a selected node, becomes fully bound when `completes` (as the PV controller
    does)."""

    def __init__(self, completes: bool = True) -> None:
        super().__init__()
        self.completes = completes

    def add_claim(self, name: str, namespace: str = "default") -> None:
        self.claims[(namespace, name)] = {
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-claim-{name}",
                         "resourceVersion": "1", "annotations": {}}, "spec": {}}

    def add_volume(self, name: str, claim_ref: dict[str, str] | None = None) -> None:
        self.volumes[name] = {"metadata": {"name": name, "resourceVersion": "5"},
                              "spec": {"claimRef": claim_ref} if claim_ref else {}}

    async def pre_bind_volume(self, name: str, volume_version: str,
                              claim: dict[str, Any]) -> None:
        await super().pre_bind_volume(name, volume_version, claim)
        if self.completes:
            meta = claim["metadata"]
            self._complete(meta["namespace"], meta["name"], name)

    async def select_node(self, namespace: str, name: str, uid: str, node: str) -> None:
        await super().select_node(namespace, name, uid, node)
        if self.completes:
            self._complete(namespace, name, f"pvc-{uid}")

    def _complete(self, namespace: str, name: str, volume: str) -> None:
        claim = self.claims[(namespace, name)]
        claim["spec"]["volumeName"] = volume
        claim["metadata"]["annotations"][kube_volumes.BIND_COMPLETED] = "yes"


def placement(*members: Assignment, deadline_in_ms: int = 2_000) -> Placement:
    return Placement(id="9-0", plan_seq=9, at_ms=NOW_MS, group="default/g", attempt=1,
                     deadline_ms=NOW_MS + deadline_in_ms, members=members)


def member(name: str, *choices: VolumeChoice, node: str = "n1") -> Assignment:
    return Assignment(f"uid-{name}", "default", name, node, choices)


def cluster(completes: bool = True) -> VolumeKube:
    kube = VolumeKube(completes)
    kube.add_node(make_node("n1"))
    for name in ("a", "b"):
        kube.add_pod(make_pod(name))
    return kube


async def run(kube: VolumeKube, decision: Placement) -> placing.Settled:
    return await placing.carry_out(decision, kube, POLICY, lambda: NOW_MS, is_redelivery=False)


async def test_static_volumes_are_pre_bound_to_their_claims_before_the_members_bind() -> None:
    kube = cluster()
    for claim, volume in (("da", "pv-a"), ("db", "pv-b")):
        kube.add_claim(claim)
        kube.add_volume(volume)
    settled = await run(kube, placement(member("a", VolumeChoice("da", "pv-a")),
                                        member("b", VolumeChoice("db", "pv-b"))))
    assert settled.rolled_back is None
    assert kube.volumes["pv-a"]["spec"]["claimRef"]["name"] == "da"
    assert kube.volumes["pv-a"]["spec"]["claimRef"]["uid"] == "uid-claim-da"
    assert kube.volumes["pv-b"]["spec"]["claimRef"]["name"] == "db"
    first_bind = kube.calls.index(("bind", "a"))
    assert kube.calls.index(("pre_bind_volume", "pv-b")) < first_bind
    assert (kube.node_of("a"), kube.node_of("b")) == ("n1", "n1")


async def test_dynamic_provisioning_selects_the_members_node_on_the_claim() -> None:
    kube = cluster()
    kube.add_claim("scratch")
    settled = await run(kube, placement(member("a", VolumeChoice("scratch"))))
    assert settled.rolled_back is None
    annotations = kube.claims[("default", "scratch")]["metadata"]["annotations"]
    assert annotations[kube_volumes.SELECTED_NODE] == "n1"


async def test_a_claim_that_never_binds_fails_its_member_and_nothing_is_bound() -> None:
    kube = cluster(completes=False)
    kube.add_claim("scratch")
    settled = await run(kube, placement(member("a", VolumeChoice("scratch")), member("b"),
                                        deadline_in_ms=1_000))
    assert settled.rolled_back is not None
    assert settled.rolled_back.reason == (
        'pod default/a: persistentvolumeclaim "scratch" was not bound before the deadline')
    assert (kube.node_of("a"), kube.node_of("b")) == (None, None)
    assert settled.bound == ()


async def test_a_volume_taken_by_another_claim_fails_the_member_at_once() -> None:
    kube = cluster()
    kube.add_claim("da")
    kube.add_volume("pv-a", claim_ref={"namespace": "default", "name": "other"})
    settled = await run(kube, placement(member("a", VolumeChoice("da", "pv-a"))))
    assert settled.rolled_back is not None
    assert settled.rolled_back.reason == (
        'pod default/a: persistentvolumeclaim "da": '
        'persistentvolume "pv-a" is bound to another claim')
    assert kube.node_of("a") is None
