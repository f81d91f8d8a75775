"""The planner's vectorised WaitForFirstConsumer check agrees with the per-node rule on every
node (`Volumes._binds_rows` against `Volumes._binds_on`, itself `rules.find_matching_volume`
and `rules.can_provision` node by node), on random small instances."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.events import (
    ClaimObserved,
    NodeObserved,
    StorageClassObserved,
    VolumeObserved,
)
from services.planner.core import volumes
from services.planner.core.capacity import build
from services.planner.core.state import PlannerState
from tests.unit.planner.builders import make_claim, make_node, make_storage_class, make_volume

HOSTS = ("n0", "n1", "n2", "n3")

Instance = tuple[dict[str, NodeObserved], dict[str, StorageClassObserved],
                 dict[str, ClaimObserved], dict[str, VolumeObserved], set[str]]
"""Nodes, storage classes, claims (by `namespace/name`), volumes and the volumes taken."""


@st.composite
def instances(draw: st.DrawFn) -> Instance:
    nodes = {name: make_node(name).labels(**{"kubernetes.io/hostname": name,
                                             "topology.kubernetes.io/zone": zone}).build()
             for name, zone in zip(HOSTS, "aabb", strict=True)}
    classes = {"s": make_storage_class("s", provisioner=draw(st.sampled_from(
        ["kubernetes.io/no-provisioner", "csi.x"])), zones=draw(st.sampled_from([(), ("b",)])))}
    claims: dict[str, ClaimObserved] = {}
    names = [f"c{i}" for i in range(draw(st.integers(1, 3)))]
    for name in names:
        selected = draw(st.sampled_from(["", "", "n1"]))
        claims[f"default/{name}"] = make_claim(name, storage_class="s",
                                               gib=draw(st.integers(1, 3)),
                                               selected_node=selected)
    vols: dict[str, VolumeObserved] = {}
    for i in range(draw(st.integers(0, 5))):
        hosts = tuple(draw(st.lists(st.sampled_from(HOSTS), max_size=2, unique=True)))
        claim = draw(st.sampled_from([None, None, None, ("default", names[0])]))
        vols[f"v{i}"] = make_volume(
            f"v{i}", hosts=hosts, storage_class=draw(st.sampled_from(["s", "s", "t"])),
            gib=draw(st.integers(1, 3)), claim=claim,
            # cast: a dict[str, str] passed as ** could, to mypy, fill `modes`; it holds `phase`
            **cast("dict[str, Any]",
                   {"phase": draw(st.sampled_from(["Available", "Released"]))}
                   if not claim else {}))
    taken = set(draw(st.lists(st.sampled_from(sorted(vols) or ["none"]), max_size=2)))
    return nodes, classes, claims, vols, taken


@settings(max_examples=300, deadline=None)
@given(instances())
def test_every_row_agrees_with_the_per_node_rule(instance: Instance) -> None:
    nodes, classes, claims, vols, taken = instance
    state = PlannerState(nodes=nodes, claims=claims, volumes=vols, storage_classes=classes)
    index = build(state.nodes, {})
    view = volumes.Volumes(state, index)
    unbound = sorted(claims.values(), key=lambda c: (c.request_bytes, c.name))
    choices = volumes.Choices()
    choices.taken = taken
    rows = view._binds_rows(unbound, choices)
    expected = [view._binds_on(unbound, row, choices) for row in range(len(index))]
    assert rows.tolist() == expected
