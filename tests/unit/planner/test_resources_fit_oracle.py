"""NodeResourcesFit has one implementation, the vectorised `NodeIndex.fits`; the scalar rule
below is only its oracle here (Hypothesis): as kube-scheduler's plugin, every requested
resource above the node's free amount is insufficient, a resource the node lacks counts as 0
free, and a resource requested at 0 is not checked."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from services.fit import reasons
from services.planner.core import capacity
from tests.unit.planner.builders import make_node

RESOURCES = ("cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage")


def node_resources_fit(requests: Mapping[str, int], free: Mapping[str, int]) -> list[str]:
    """The oracle: every requested resource that exceeds the node's free amount."""
    return [reasons.insufficient(name) for name, amount in sorted(requests.items())
            if amount > 0 and amount > free.get(name, 0)]


def test_the_oracle_reports_every_insufficient_resource() -> None:
    assert node_resources_fit(
        {"cpu": 2000, "memory": 10, "pods": 1, "nvidia.com/gpu": 1, "ephemeral-storage": 0},
        {"cpu": 1000, "memory": 5, "pods": 0}) == [
        "Insufficient cpu", "Insufficient memory", "Insufficient nvidia.com/gpu", "Too many pods"]


amounts = st.dictionaries(st.sampled_from(RESOURCES), st.integers(0, 8), max_size=len(RESOURCES))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(amounts, amounts), min_size=1, max_size=6), amounts)
def test_the_vectorised_fit_agrees_with_the_oracle_on_every_node(
        nodes: list[tuple[dict[str, int], dict[str, int]]], requests: dict[str, int]) -> None:
    built = [make_node(f"n{i}")._with(allocatable=dict(alloc)).build()
             for i, (alloc, _) in enumerate(nodes)]
    used = {f"n{i}": dict(taken) for i, (_, taken) in enumerate(nodes)}
    index = capacity.build({node.name: node for node in built}, used)
    vec, cols, missing = index.vector(requests)
    fits = index.fits(vec, cols)
    for i, (alloc, taken) in enumerate(nodes):
        free = {name: alloc.get(name, 0) - taken.get(name, 0) for name in set(alloc) | set(taken)}
        expected = node_resources_fit(requests, free) == []
        assert (bool(fits[index.row[f"n{i}"]]) and not missing) == expected, (alloc, taken)
