"""A native PodGroup read with an unsupported constraint is read anew after a restart.

From 29842ab to core revision 46 a native PodGroup whose `spec.schedulingConstraints.topology`
is set was read with `unsupported`, and its gang waited "for good" until the PodGroup changed
(the field is immutable, so it never does). `recovery.fold` relists a pod whose logged event
names unsupported constraints as changed (an upgrade may read them now: core revision 40's
namespaceSelector), and a PodGroup alike (a review found it did not), so the watcher that
reads the constraint (`topology_key`, core revision 46) publishes it at its start, and the
planner, woken by the changed PodGroup, places the gang.
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.contracts import codec
from services.kube.listwatch import Inventory
from services.watcher import native, recovery
from tests.unit.planner.builders import make_node, make_pod
from tests.unit.planner.harness import Cluster

GROUP: dict[str, Any] = {
    "apiVersion": native.API_VERSION, "kind": "PodGroup",
    "metadata": {"name": "g", "namespace": "ml", "uid": "u-g", "resourceVersion": "7"},
    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
             "schedulingConstraints": {"topology": [{"key": "rack"}]}}}


def logged_by_an_older_watcher() -> Any:
    """The event a watcher of core revision 45 published for `GROUP`."""
    return msgspec.structs.replace(native.podgroup_event(GROUP, 1000), topology_key=None,
                                   unsupported=(native.TOPOLOGY,))


def test_a_podgroup_read_with_an_unsupported_constraint_is_published_again_after_a_restart(
) -> None:
    known: dict[str, Any] = {}
    recovery.fold(known, codec.encode(logged_by_an_older_watcher()),
                  api_version=native.API_VERSION)
    inventory = Inventory(known)
    inventory.begin_list()
    assert inventory.listed(GROUP), "left with its old reading until it changes or the resync"


def test_a_podgroup_read_with_its_key_is_not_published_again() -> None:
    known: dict[str, Any] = {}
    recovery.fold(known, codec.encode(native.podgroup_event(GROUP, 1000)),
                  api_version=native.API_VERSION)
    inventory = Inventory(known)
    inventory.begin_list()
    assert not inventory.listed(GROUP)


def test_the_gang_waiting_on_the_old_reading_is_placed_once_the_key_is_read() -> None:
    c = Cluster().observe(
        *(make_node(f"n{i}").labels(rack="r1").capacity(cpu_milli=1000) for i in range(2)),
        logged_by_an_older_watcher(),
        *(make_pod(f"g-{i}", "ml").in_group("g").requests(cpu_milli=1000) for i in range(2)))
    c.advance(2)
    c.plan()
    assert c.last_reason("ml/g") == (
        "PodGroup ml/g: unsupported constraint: spec.schedulingConstraints.topology")
    c.apply(native.podgroup_event(GROUP, c.now_ms))  # published again by the upgraded watcher
    c.plan()
    assert {m.name: m.node for d in c.placements() for m in d.members} == {"g-0": "n0",
                                                                          "g-1": "n1"}
