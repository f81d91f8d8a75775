"""Remembering what pod specs say, so a pod's later events and its siblings' do not read the
same spec again.

Layer: watcher. A pod's spec hardly changes in its life (binding sets `spec.nodeName`; gates
are removed, resources resized), while its status and metadata change with every event, and
the pods of one Job, ReplicaSet or gang share one spec. Reading a spec (requests, affinity,
spread, tolerations...: `slim.read_pod_spec`) was most of the watcher's CPU in the cluster
benchmark, three times per pod; `SpecMemory` keys each reading by the spec's exact JSON
(all but `nodeName`, which the reading does not use) and its namespace, so an unchanged spec
is encoded, not read. A pure memo: no result changes. On a live cluster each pod's own later
events hit (its binding, its start); siblings rarely do, as each pod mounts its own
`kube-api-access-<random>` volume.
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.watcher.slim import Obj, PodSpecReading, read_pod_spec

SPEC_MEMORY_ENTRIES = 1024
"""Readings kept, the oldest forgotten first."""
MAX_REMEMBERED_SPEC_BYTES = 16 * 1024
"""A spec whose JSON is longer is read every time, never remembered: the memory holds at most
SPEC_MEMORY_ENTRIES such keys (16 MiB, a few MB with the usual 1-3 kB specs), whatever the
pods' inline scripts or environment values weigh."""

_encoder = msgspec.json.Encoder()


class SpecMemory:
    """`read_pod_spec`, remembered for the last `entries` distinct (namespace, spec) pairs.

    Only for objects decoded from JSON (dicts, lists, text, numbers, booleans and nulls), as
    the watcher's are: two such specs with the same JSON are read alike. Another object (a
    tuple where JSON has a list, a date where it has text) may encode like a different spec;
    `read_pod_spec` itself is used for those callers (the simulator's YAML). A spec msgspec
    cannot encode, or whose JSON is over MAX_REMEMBERED_SPEC_BYTES, is read, not remembered.
    Raises nothing `read_pod_spec` does not.
    """

    def __init__(self, entries: int = SPEC_MEMORY_ENTRIES) -> None:
        if entries < 1:
            raise ValueError(f"entries must be >= 1, not {entries}")
        self._entries = entries
        self._readings: dict[tuple[str, bytes], PodSpecReading] = {}

    def __len__(self) -> int:
        return len(self._readings)

    def __call__(self, spec: Obj, namespace: str) -> PodSpecReading:
        """The reading of `spec` in `namespace` (`slim.SpecReader`)."""
        try:
            encoded = _encoder.encode(_without_node_name(spec))
        except (TypeError, ValueError, OverflowError, RecursionError):
            return read_pod_spec(spec, namespace)  # not JSON (or nested too deep to encode)
        if len(encoded) > MAX_REMEMBERED_SPEC_BYTES:
            return read_pod_spec(spec, namespace)
        key = (namespace, encoded)
        found = self._readings.get(key)
        if found is None:
            found = read_pod_spec(spec, namespace)
            if len(self._readings) >= self._entries:
                del self._readings[next(iter(self._readings))]  # the oldest
            self._readings[key] = found
        return found


def _without_node_name(spec: Obj) -> Any:
    """`spec` without `nodeName` (the same object when it has none)."""
    if "nodeName" not in spec:
        return spec
    return {key: value for key, value in spec.items() if key != "nodeName"}
