"""One `/metrics` for several processes: the parent's exposition with its children's merged in.

Layer: runtime. Pure: Prometheus text in, Prometheus text out. Every gangsched process defines
every `gangsched_*` metric (`services.runtime.metrics`) and each service updates its own, so:

- `gangsched_*` samples (counters, histograms, gauges) are summed over the processes, by
  sample name and labels: a counter is the total of the run, a gauge is the value of the one
  process that sets it (the others hold 0 or nothing). `*_created` samples take the earliest.
- `gangsched_build_info` and `python_*` are the parent's alone (the same code runs everywhere).
- `process_*` (CPU, memory, file descriptors) are the parent's as they are, and each child's
  with the label `service="<child name>"` added, so nothing is summed that should not be.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

SUMMED_PREFIX = "gangsched_"
PARENT_ONLY = frozenset({"gangsched_build_info"})
PER_PROCESS_PREFIX = "process_"
SERVICE_LABEL = "service"


def merge(parent: str, children: Mapping[str, str]) -> bytes:
    """The exposition of `parent` (Prometheus text) with `children` ({name: text}) merged in
    as the module docstring says; families keep the parent's order and help.

    Raises:
        ValueError: a text is not the Prometheus exposition format.
    """
    families = {family.name: family for family in text_string_to_metric_families(parent)}
    for name, text in children.items():
        for family in text_string_to_metric_families(text):
            if family.name.startswith(SUMMED_PREFIX) and family.name not in PARENT_ONLY:
                mine = families.setdefault(family.name, _empty_like(family))
                mine.samples = _summed(mine.samples, family.samples,
                                       earliest=family.name.endswith("_created"))
            elif family.name.startswith(PER_PROCESS_PREFIX):
                mine = families.setdefault(family.name, _empty_like(family))
                mine.samples = [*mine.samples, *(_labelled(s, name) for s in family.samples)]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(list(families.values())))
    return generate_latest(registry)


def _summed(ours: list[Sample], theirs: Iterable[Sample], *, earliest: bool) -> list[Sample]:
    totals = {(s.name, tuple(sorted(s.labels.items()))): s for s in ours}
    for sample in theirs:
        key = (sample.name, tuple(sorted(sample.labels.items())))
        known = totals.get(key)
        if known is None:
            totals[key] = sample
        else:
            value = min(known.value, sample.value) if earliest else known.value + sample.value
            totals[key] = known._replace(value=value)
    return list(totals.values())


def _labelled(sample: Sample, service: str) -> Sample:
    return sample._replace(labels={**sample.labels, SERVICE_LABEL: service})


def _empty_like(family: Metric) -> Metric:
    return Metric(family.name, family.documentation, family.type, family.unit)


class _Fixed:
    """A collector yielding given families (for `generate_latest`)."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families
