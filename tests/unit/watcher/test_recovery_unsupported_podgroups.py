"""A native PodGroup read with an unsupported constraint is read anew after a restart.

Since 29842ab a native PodGroup whose `spec.schedulingConstraints.topology` is set is read with
`unsupported`, and its gang waits "for good" until the PodGroup changes (the field is
immutable, so it never does). `recovery.fold` relists a pod whose logged event names
unsupported constraints as changed (an upgrade may read them now: core revision 40's
namespaceSelector), and a PodGroup alike (a review found it did not: a watcher that learns
TopologyPlacement would have left such a gang waiting until the resync).
"""

from __future__ import annotations

from typing import Any

from services.contracts import codec
from services.kube.listwatch import Inventory
from services.watcher import native, recovery


def test_a_podgroup_read_with_an_unsupported_constraint_is_published_again_after_a_restart(
) -> None:
    group: dict[str, Any] = {
        "apiVersion": native.API_VERSION, "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ml", "uid": "u-g", "resourceVersion": "7"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                 "schedulingConstraints": {"topology": [{"key": "rack"}]}}}
    logged = native.podgroup_event(group, 1000)
    assert logged.unsupported == (native.TOPOLOGY,)
    known: dict[str, Any] = {}
    recovery.fold(known, codec.encode(logged), api_version=native.API_VERSION)
    inventory = Inventory(known)
    inventory.begin_list()
    assert inventory.listed(group), "left with its old reading until it changes or the resync"
