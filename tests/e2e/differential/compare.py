"""Comparing kube-scheduler's outcome for one pod with gangsched's verdict.

Agreement: a pod kube-scheduler bound to node X is feasible for gangsched on X (its own pick
may differ: the two score nodes differently); a pod kube-scheduler found unschedulable is
rejected by gangsched with the same node total and the same reason → node count map (and,
past that, the same text: wording and order of the reasons).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from tests.e2e.differential import messages
from tests.e2e.differential.oracle import Outcome
from tests.e2e.differential.verdict import Verdict


@dataclass(frozen=True)
class Mismatch:
    """One disagreement, with all it takes to reproduce it."""

    seed: int
    pod: dict[str, Any]
    kube: Outcome
    gangsched: Verdict
    on_kube_node: Verdict | None
    why: str

    def headline(self) -> str:
        meta = self.pod["metadata"]
        return f"seed {self.seed}, pod {meta['namespace']}/{meta['name']}: {self.why}"

    def describe(self) -> str:
        meta = self.pod["metadata"]
        lines = [self.headline(),
                 f"  kube-scheduler: {self.kube}", f"  gangsched: {self.gangsched}"]
        if self.on_kube_node is not None:
            lines.append(f"  gangsched on kube-scheduler's node alone: {self.on_kube_node}")
        spec = yaml.safe_dump({"metadata": {"labels": meta.get("labels", {})},
                               "spec": self.pod["spec"]}, sort_keys=True)
        lines.extend("    " + line for line in spec.splitlines())
        return "\n".join(lines)


def unschedulable_difference(kube_message: str, reason: str | None) -> str | None:
    """None when both messages give the same node total and reason counts, else how not."""
    if reason is None or not messages.is_fit_message(reason):
        return f"gangsched's reason is no node-count message: {reason!r}"
    kube, ours = messages.parse(kube_message), messages.parse(reason)
    if kube.total != ours.total:
        return f"node totals differ: kube-scheduler {kube.total}, gangsched {ours.total}"
    if kube.counts != ours.counts:
        only_kube = {k: v for k, v in kube.counts.items() if ours.counts.get(k) != v}
        only_ours = {k: v for k, v in ours.counts.items() if kube.counts.get(k) != v}
        return f"reason counts differ: kube-scheduler {only_kube}, gangsched {only_ours}"
    if messages.filter_part(kube_message) != messages.filter_part(reason):
        return "same reason counts, worded or ordered differently"
    return None
