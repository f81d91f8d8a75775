"""The benchmark workloads, deterministic from a seed, and the nodes they need.

Layer: bench, pure (no I/O). Every pod requests 1 CPU, so capacity is counted in slots: a node
has `slots_per_node` slots and `cpu_milli = ceil(slots * 1000 / FILL)` (the pods then use FILL of
the CPU, and nothing can fragment: any scheduler that does not over-commit can place them all).

- `a`: gangs of 4-16 pods totalling 5 pods per node (5,000 at 1,000 nodes), in gang order.
- `b`: the gangs of `a` plus 20% singletons (1 per node), 6 slots per node, blocks shuffled.
- `c`: contention: gangs totalling 10 pods per node for 5 slots per node, all pods shuffled
  (every gang's pods arrive mixed with everyone else's), so only about half the gangs fit.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

FILL = 0.9
POD_CPU_MILLI = 1000
GANG_PODS_PER_NODE = 5
MIN_GANG, MAX_GANG = 4, 16
MEMORY_CHOICES_MI = (256, 512, 1024)
NODE_MEMORY = "64Gi"
NODE_PODS = 110
KINDS = ("a", "b", "c")


@dataclass(frozen=True)
class Gang:
    name: str
    size: int
    memory_mi: int


@dataclass(frozen=True)
class Pod:
    name: str
    gang: str | None
    memory_mi: int


@dataclass(frozen=True)
class Workload:
    """Shapes: `pods` in creation order; `gangs` by name order; every gang's pods all exist."""

    kind: str
    node_count: int
    slots_per_node: int
    gangs: tuple[Gang, ...]
    pods: tuple[Pod, ...]
    is_oversubscribed: bool

    @property
    def node_cpu_milli(self) -> int:
        return math.ceil(self.slots_per_node * POD_CPU_MILLI / FILL)

    @property
    def capacity_pods(self) -> int:
        return self.slots_per_node * self.node_count

    @property
    def expected_bound(self) -> int:
        """Pods that must all bind for the run to be complete (capacity when oversubscribed)."""
        return min(len(self.pods), self.capacity_pods)


def gang_sizes(total: int, rng: random.Random) -> list[int]:
    """Sizes in [MIN_GANG, MAX_GANG] summing to exactly `total` (>= MIN_GANG)."""
    sizes, remaining = [], total
    while remaining:
        size = remaining if remaining <= MAX_GANG else rng.randint(
            MIN_GANG, min(MAX_GANG, remaining - MIN_GANG))
        sizes.append(size)
        remaining -= size
    return sizes


def _gangs(total: int, rng: random.Random) -> list[Gang]:
    return [Gang(f"g{i:05d}", size, rng.choice(MEMORY_CHOICES_MI))
            for i, size in enumerate(gang_sizes(total, rng))]


def _members(gang: Gang) -> list[Pod]:
    return [Pod(f"{gang.name}-{i:02d}", gang.name, gang.memory_mi) for i in range(gang.size)]


def build(kind: str, node_count: int, seed: int = 8) -> Workload:
    """The workload `kind` (one of KINDS) for `node_count` nodes."""
    rng = random.Random(f"{kind}/{node_count}/{seed}")
    same = random.Random(f"gangs/{node_count}/{seed}")  # `a` and `b` share their gangs
    if kind == "a":
        gangs = _gangs(GANG_PODS_PER_NODE * node_count, same)
        pods = [p for g in gangs for p in _members(g)]
        return Workload(kind, node_count, GANG_PODS_PER_NODE, tuple(gangs), tuple(pods), False)
    if kind == "b":
        gangs = _gangs(GANG_PODS_PER_NODE * node_count, same)
        blocks = [_members(g) for g in gangs]
        blocks += [[Pod(f"s{i:05d}", None, rng.choice(MEMORY_CHOICES_MI))]
                   for i in range(node_count)]
        rng.shuffle(blocks)
        pods = [p for block in blocks for p in block]
        return Workload(kind, node_count, GANG_PODS_PER_NODE + 1, tuple(gangs), tuple(pods),
                        False)
    if kind == "c":
        gangs = _gangs(2 * GANG_PODS_PER_NODE * node_count, rng)
        pods = [p for g in gangs for p in _members(g)]
        rng.shuffle(pods)
        return Workload(kind, node_count, GANG_PODS_PER_NODE, tuple(gangs), tuple(pods), True)
    raise ValueError(f"unknown workload {kind!r} (one of {', '.join(KINDS)})")
